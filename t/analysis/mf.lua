-- SGD matrix factorisation (2-D: users on space, items rotate) and its
-- evaluation loop (no dependences).
local orion = require "orion"
local G = dofile((os.getenv("ORION_SRCDIR") or ".") .. "/t/analysis/golden.lua")

local nu, ni, K = 9, 7, 3
local R = orion.synthetic_ratings and nil
R = orion.array { nu, ni }
local entries = {}
-- A sparse ratings array from a generated COO text.
local lines = {}
for u = 1, nu do
  for i = 1, ni do
    if (u * 7 + i * 3) % 4 ~= 0 then lines[#lines + 1] = ("%d %d %d"):format(u, i, (u + i) % 5 + 1) end
  end
end
local path = os.tmpname()
local f = assert(io.open(path, "w")); f:write(table.concat(lines, "\n"), "\n"); f:close()
R = orion.text_file(path, { format = "coo", dims = { nu, ni } })
os.remove(path)

local W = orion.zeros { nu, K }
local H = orion.zeros { ni, K }
local lr, reg = 0.05, 0.01
local sse = orion.accumulator("sum", 0)

local function reset()
  G.fill(W, function(u, k) return (u * 0.37 + k * 0.11) % 1 end)
  G.fill(H, function(i, k) return (i * 0.23 + k * 0.29) % 1 end)
end

local function sgd(u, i, r)
  local wu, hi = W[u], H[i]
  local e = r
  for k = 1, K do e = e - wu[k] * hi[k] end
  for k = 1, K do
    local w, h = wu[k], hi[k]
    wu[k] = w + lr * (e * h - reg * w)
    hi[k] = h + lr * (e * w - reg * h)
  end
end

G.check {
  name = "mf_sgd", iter = R, iname = "R", body = sgd,
  expect = { schedule = "2d", space = 1, time = 2,
             vectors = { "(0, NONNEG)", "(NONNEG, 0)" },
             place = { W = "local", H = "rotating", R = "iterated" } },
  reset = reset,
  state = function() return { G.snap(W), G.snap(H) } end,
}

local function evaluate(u, i, r)
  local wu, hi = W[u], H[i]
  local e = r
  for k = 1, K do e = e - wu[k] * hi[k] end
  sse:add(e * e)
end

-- opts.space = 2 puts the items on the space dimension: H stays, W rotates.
G.check {
  name = "mf_space_option_items_2d", iter = R, iname = "R", body = sgd,
  opts = { space = 2 },
  expect = { schedule = "2d", space = 2, time = 1,
             vectors = { "(0, NONNEG)", "(NONNEG, 0)" },
             place = { W = "rotating", H = "local", R = "iterated" } },
  reset = reset,
  state = function() return { G.snap(W), G.snap(H) } end,
}

G.check {
  name = "mf_eval", iter = R, iname = "R", body = evaluate,
  expect = { schedule = "none", space = 1, vectors = {},
             place = { W = "local", H = "server (read-only)" } },
  reset = function() reset(); sse:reset() end,
  state = function() return { G.snap(W), G.snap(H) } end,
  verify = function() assert(sse:get() > 0) end,
}

-- The same update written with a helper that receives the slices: the
-- helper may touch any element of them, but only of this row and column.
local function update(wu, hi, e)
  for k = 1, K do
    local w, h = wu[k], hi[k]
    wu[k] = w + lr * (e * h - reg * w)
    hi[k] = h + lr * (e * w - reg * h)
  end
end

local function sgd_helper(u, i, r)
  local e = r
  for k = 1, K do e = e - W[u][k] * H[i][k] end
  update(W[u], H[i], e)
end

G.check {
  name = "mf_helper_slices", iter = R, iname = "R", body = sgd_helper,
  expect = { schedule = "2d", space = 1, time = 2,
             vectors = { "(0, NONNEG)", "(NONNEG, 0)" },
             place = { W = "local", H = "rotating" } },
  reset = reset,
  state = function() return { G.snap(W), G.snap(H) } end,
}
