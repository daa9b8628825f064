-- The choice among feasible schedules is by estimated bytes per pass, not
-- by enumeration order: the array that stays local should be the bigger.
local orion = require "orion"
local G = dofile((os.getenv("ORION_SRCDIR") or ".") .. "/t/analysis/golden.lua")

local MOD = 1000003

local function sparse(dims, keep, val)
  local lines = {}
  local function rec(d, keys)
    if d > #dims then
      if keep(table.unpack(keys)) then
        local t = {}
        for i = 1, #keys do t[i] = tostring(keys[i]) end
        t[#t + 1] = tostring(val(table.unpack(keys)))
        lines[#lines + 1] = table.concat(t, " ")
      end
      return
    end
    for k = 1, dims[d] do keys[d] = k; rec(d + 1, keys) end
    keys[d] = nil
  end
  rec(1, {})
  local path = os.tmpname()
  local f = assert(io.open(path, "w")); f:write(table.concat(lines, "\n"), "\n"); f:close()
  local A = orion.text_file(path, { format = "coo", dims = dims })
  os.remove(path)
  return A
end

-- Matrix factorisation with more items than users: H (14 x 3) is bigger
-- than W (6 x 3), so items go on space (H local) and W rotates.
local nu, ni, K = 6, 14, 3
local R = sparse({ nu, ni }, function(u, i) return (u * 7 + i * 3) % 4 ~= 0 end,
  function(u, i) return (u + i) % 5 + 1 end)
local W = orion.zeros { nu, K }
local H = orion.zeros { ni, K }
local lr, reg = 0.05, 0.01
local function resetmf()
  G.fill(W, function(u, k) return (u * 0.37 + k * 0.11) % 1 end)
  G.fill(H, function(i, k) return (i * 0.23 + k * 0.29) % 1 end)
end
local function statemf() return { G.snap(W), G.snap(H) } end

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
  name = "mf_items_on_space_2d", iter = R, iname = "R", body = sgd,
  expect = { schedule = "2d", space = 2, time = 1,
             vectors = { "(0, NONNEG)", "(NONNEG, 0)" },
             place = { R = "iterated", W = "rotating", H = "local" } },
  reset = resetmf, state = statemf,
}

-- Ordered, the same body runs as a wavefront, with the same choice of
-- keys, and must equal the serial run exactly.
G.check {
  name = "mf_items_on_space_2d_ordered", iter = R, iname = "R", body = sgd,
  opts = { ordered = true },
  expect = { schedule = "2d-ordered", space = 2, time = 1,
             vectors = { "(0, NONNEG)", "(NONNEG, 0)" },
             place = { W = "rotating", H = "local" } },
  reset = resetmf, state = statemf,
}

-- A 3-D sparse loop where S[a][b] is read and written: (0, 0, NONNEG), so
-- 1-D blocks on key 1 and on key 2 are both feasible.  On key 1, Big
-- (following key 2) would be read from servers; on key 2, only Small
-- (following key 1) is: key 2 wins.
local na, nb, ncc = 5, 4, 3
local X3 = sparse({ na, nb, ncc }, function(a, b, c) return (a * 3 + b * 5 + c) % 3 ~= 0 end,
  function(a, b, c) return (a + b * 2 + c * 3) % 7 + 1 end)
local S = orion.zeros { na, nb, type = "i64" }
local Big = orion.zeros { nb, 16, type = "i64" }   -- 512 bytes
local Small = orion.zeros { na, type = "i64" }     -- 40 bytes
local function reset3()
  G.fill(S, function(a, b) return a * 10 + b end)
  G.fill(Big, function(b, k) return b * 100 + k end)
  G.fill(Small, function(a) return a * 7 end)
end
local function state3() return { G.snap(S), G.snap(Big), G.snap(Small) } end

local function cell(a, b, c, x)
  S[a][b] = (S[a][b] * 3 + x * Big[b][c] + Small[a]) % MOD
end

G.check {
  name = "3d_1d_key2_by_bytes", iter = X3, iname = "X3", body = cell,
  expect = { schedule = "1d", space = 2, time = false, vectors = { "(0, 0, NONNEG)" },
             place = { X3 = "iterated", S = "local", Big = "local",
                       Small = "server (read-only)" } },
  reset = reset3, state = state3,
}

-- No dependences at all: blocks on the key whose arrays are bigger.
local nr, nc = 6, 5
local A2 = orion.zeros { nr, nc, type = "i64" }
local RowV = orion.zeros { nr, type = "i64" }      -- 48 bytes
local ColV = orion.zeros { nc, 8, type = "i64" }   -- 320 bytes
local Out = orion.zeros { nr, nc, type = "i64" }
local function reset2()
  G.fill(A2, function(i, j) return (i * 7 + j * 3) % 19 + 1 end)
  G.fill(RowV, function(i) return i * 3 end)
  G.fill(ColV, function(j, k) return j * 10 + k end)
  G.fill(Out)
end
local function state2() return { G.snap(Out) } end

local function outer(i, j, v)
  Out[i][j] = RowV[i] * 1000 + ColV[j][v % 8 + 1] + v
end

G.check {
  name = "none_key2_by_bytes", iter = A2, iname = "A2", body = outer,
  expect = { schedule = "none", space = 2, time = false, vectors = {},
             place = { ColV = "local", Out = "local", RowV = "server (read-only)" } },
  reset = reset2, state = state2,
}

-- Swap the sizes: key 1 wins.
local RowW = orion.zeros { nr, 8, type = "i64" }   -- 384 bytes
local ColW = orion.zeros { nc, type = "i64" }      -- 40 bytes
G.fill(RowW, function(i, k) return i * 10 + k end)
G.fill(ColW, function(j) return j * 3 end)
local function outer2(i, j, v)
  Out[i][j] = RowW[i][v % 8 + 1] * 1000 + ColW[j] + v
end

G.check {
  name = "none_key1_by_bytes", iter = A2, iname = "A2", body = outer2,
  expect = { schedule = "none", space = 1, time = false, vectors = {},
             place = { RowW = "local", Out = "local", ColW = "server (read-only)" } },
  reset = reset2, state = state2,
}
