-- bench/dnn_step.lua: one SGD step of apps/dnn/dnn.lua on one thread,
-- against the same step's GEMMs alone (run by bench/dnn_step.sh).
--   orion-driver --quiet --executors 0 bench/dnn_step.lua LAYERS BATCH SECONDS ROUNDS
-- Three variants of the step, timed in interleaved slices (A, B, G, A, B,
-- G, ...), each slice SECONDS / 3 of CPU time (os.clock):
--   before  the step as the app ran it before issue 36: nn.add_bias then
--           nn.relu; the weight gradient into the momentum with beta = mu;
--           nn.axpy for W = W + V
--   now     the app's step: nn.add_bias(Z, b, "relu") in one pass; the
--           momentum kept scaled by mu, beta = 1, and nn.add_scale for
--           W = W + V, V = mu V in one pass
--   gemm    the step's GEMMs alone (the products bench/dnn.sh counts)
-- Each step gathers its minibatch with nn.rows from a 20,000-row array in a
-- shuffled order, as the app does.  Prints one line per variant: the median
-- microseconds per step over the rounds, [min-max].
local orion = require "orion"
local nn = orion.nn
local layers, B, dur, rounds = arg[1], tonumber(arg[2]), tonumber(arg[3]), tonumber(arg[4])
local sizes = {}
for f in layers:gmatch("%d+") do sizes[#sizes + 1] = tonumber(f) end
local nl = #sizes - 1
nn.threads(1)
local n = 20000
local X = orion.randn { n, sizes[1], type = "f32", seed = 1 }
local Y = orion.zeros { n, type = "f32" }
for i = 1, n do Y:set(i, (i * 7) % sizes[nl + 1] + 1) end
local order = {}
for i = 1, n do order[i] = (i * 7919) % n + 1 end
local W, b, VW, Vb, Gb, Z, D = {}, {}, {}, {}, {}, {}, {}
for l = 1, nl do
  W[l] = nn.read(orion.randn { sizes[l], sizes[l + 1], type = "f32", scale = math.sqrt(2 / sizes[l]), seed = l + 1 })
  b[l], Gb[l] = nn.matrix(1, sizes[l + 1]), nn.matrix(1, sizes[l + 1])
  VW[l], Vb[l] = nn.matrix(sizes[l], sizes[l + 1]), nn.matrix(1, sizes[l + 1])
  Z[l], D[l] = nn.matrix(B, sizes[l + 1]), nn.matrix(B, sizes[l + 1])
end
local H0, Yb = nn.matrix(B, sizes[1]), nn.matrix(B, 1)
local lr, mu, p0 = 0.001, 0.9, 1

local function gather()
  if p0 + B - 1 > n then p0 = 1 end
  nn.rows(X, order, p0, B, H0)
  nn.rows(Y, order, p0, B, Yb)
  p0 = p0 + B
end

-- fused: the app's step now; else the step before.
local function step(fused)
  gather()
  for l = 1, nl do
    nn.gemm(Z[l], l == 1 and H0 or Z[l - 1], W[l])
    if fused then
      nn.add_bias(Z[l], b[l], l < nl and "relu" or nil)
    else
      nn.add_bias(Z[l], b[l])
      if l < nl then nn.relu(Z[l]) end
    end
  end
  nn.softmax_xent(Z[nl], Yb, D[nl])
  for l = nl, 1, -1 do
    nn.gemm(VW[l], l == 1 and H0 or Z[l - 1], D[l], -lr / B, fused and 1 or mu, true, false)
    nn.colsum(Gb[l], D[l], 1 / B)
    if l > 1 then
      nn.gemm(D[l - 1], D[l], W[l], 1, 0, false, true)
      nn.relu_backward(D[l - 1], Z[l - 1])
    end
  end
  for l = 1, nl do
    if fused then nn.add_scale(W[l], VW[l], mu) else nn.axpy(W[l], 1, VW[l]) end
    nn.momentum(b[l], Vb[l], Gb[l], lr, mu)
  end
end

local function gemms()
  for l = 1, nl do nn.gemm(Z[l], l == 1 and H0 or Z[l - 1], W[l]) end
  for l = nl, 1, -1 do
    nn.gemm(VW[l], l == 1 and H0 or Z[l - 1], D[l], -lr / B, 1, true, false)
    if l > 1 then nn.gemm(D[l - 1], D[l], W[l], 1, 0, false, true) end
  end
end

local variants = {
  { "before", function() step(false) end },
  { "now", function() step(true) end },
  { "gemm", gemms },
}
local us = { {}, {}, {} }
for _, v in ipairs(variants) do v[2]() end -- warm up
for r = 1, rounds do
  for i, v in ipairs(variants) do
    local reps, t0 = 0, os.clock()
    repeat
      v[2]()
      reps = reps + 1
    until os.clock() - t0 > dur / 3
    us[i][r] = (os.clock() - t0) / reps * 1e6
  end
end
for i, v in ipairs(variants) do
  table.sort(us[i])
  print(("%s %.1f %.1f %.1f"):format(v[1], us[i][(rounds + 1) // 2], us[i][1], us[i][rounds]))
end
