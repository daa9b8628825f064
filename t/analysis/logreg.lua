-- Logistic regression over a 2-D sparse (sample, feature) -> value array:
-- per-sample margins follow key 1, the weight vector follows key 2, the
-- gradient goes through a buffer.
local orion = require "orion"
local G = dofile((os.getenv("ORION_SRCDIR") or ".") .. "/t/analysis/golden.lua")

local N, F = 20, 8
local lines = {}
for s = 1, N do
  for f = 1, F do
    if (s * 3 + f * 5) % 3 ~= 0 or f == 1 then
      lines[#lines + 1] = ("%d %d %g"):format(s, f, ((s + 2 * f) % 7 - 3) * 0.25)
    end
  end
end
local path = os.tmpname()
local fh = assert(io.open(path, "w")); fh:write(table.concat(lines, "\n"), "\n"); fh:close()
local X = orion.text_file(path, { format = "coo", dims = { N, F } })
os.remove(path)

local Y = orion.zeros { N }    -- labels (160 bytes)
local M = orion.zeros { N }    -- margins (160 bytes)
local Wt = orion.zeros { F }   -- weights (64 bytes)
local Grad = orion.zeros { F } -- gradient (64 bytes)
local GB = orion.buffer(Grad, { apply = "add" })
local lr = 0.5

local function reset()
  G.fill(Y, function(s) return (s * 7) % 3 == 0 and 1.0 or 0.0 end)
  G.fill(M, function(s) return ((s % 5) - 2) * 0.5 end)
  G.fill(Wt, function(f) return ((f % 5) - 2) * 0.125 end)
  G.fill(Grad)
end

-- The gradient is a float sum over blocks applied at flush points, so its
-- last bits depend on the order of the flushes: it is compared with the
-- serial run within a tolerance instead of exactly.
local grads = {}
local function close_to_serial(name, A, tol)
  return function()
    local want = grads[name]
    local got = G.snap(A)
    for k = 1, #want do
      assert(math.abs(got[k] - want[k]) <= tol,
        ("%s[%d] = %.17g, serial %.17g"):format(name, k, got[k], want[k]))
    end
  end
end
local function remember(name, A, st)
  return function()
    local t = st()
    if grads[name] == nil then grads[name] = G.snap(A) end -- the serial run
    return t
  end
end

-- Margin and gradient in one pass: the margin of a sample accumulates over
-- its features (order-sensitive: the gradient contribution of a feature
-- uses the margin so far).
local function margin_grad(s, f, x)
  M[s] = M[s] + Wt[f] * x
  local p = 1 / (1 + math.exp(-M[s]))
  GB[f] = GB[f] + (p - Y[s]) * x
end

G.check {
  name = "logreg_margin_grad", iter = X, iname = "X", body = margin_grad,
  expect = { schedule = "1d", space = 1, time = false,
             vectors = { "(0, NONNEG)" },
             place = { X = "iterated", M = "local", Y = "local",
                       Wt = "server (read-only)",
                       ["target of GB"] = "server (buffered)" } },
  reset = function() grads.mg = nil; reset() end,
  state = remember("mg", Grad, function() return { G.snap(M), G.snap(Wt) } end),
  verify = close_to_serial("mg", Grad, 1e-9),
}

-- The gradient alone, from margins that are already known: reads only,
-- apart from the buffer.
local function gradient(s, f, x)
  local p = 1 / (1 + math.exp(-M[s]))
  GB[f] = GB[f] + (p - Y[s]) * x
end

G.check {
  name = "logreg_gradient", iter = X, iname = "X", body = gradient,
  expect = { schedule = "none", space = 1, vectors = {},
             place = { M = "local", Y = "local",
                       ["target of GB"] = "server (buffered)" } },
  reset = function() grads.g = nil; reset() end,
  state = remember("g", Grad, function() return { G.snap(M) } end),
  verify = close_to_serial("g", Grad, 1e-9),
}

-- Stochastic gradient descent: the weights are written directly, so both
-- keys carry dependences; the smaller weight vector rotates.
local function sgd(s, f, x)
  local m = M[s]
  local p = 1 / (1 + math.exp(-m))
  local g = (p - Y[s]) * x
  Wt[f] = Wt[f] - lr * g
  M[s] = m - lr * g * x * x
end

G.check {
  name = "logreg_sgd", iter = X, iname = "X", body = sgd,
  expect = { schedule = "2d", space = 1, time = 2,
             vectors = { "(0, NONNEG)", "(NONNEG, 0)" },
             place = { M = "local", Y = "local", Wt = "rotating" } },
  reset = reset,
  state = function() return { G.snap(M), G.snap(Wt) } end,
}
