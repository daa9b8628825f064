-- The DNN app's training round (apps/dnn/dnn.lua) on a tiny net, run by
-- parallel_for and again serially on the driver with the same orion.nn
-- calls: with one shard the parameters must be bit-identical; with S
-- shards they must be the average of S serial runs (up to f32 rounding of
-- the servers' adds).
--   usage: orion-driver [--executors N] dnn_step.lua SHARDS
local orion = require "orion"
local nn = orion.nn
local S = math.tointeger(tonumber(arg[1] or "1"))
local sizes, nl, n, B, lr, mu = { 8, 6, 3 }, 2, 64, 8, 0.1, 0.9

-- Data: 64 samples of 8 features, labels 1..3.
local X = orion.randn { n, 8, type = "f32", seed = 3 }
local Y = orion.zeros { n, type = "f32" }
for i = 1, n do Y:set(i, (i * 7) % 3 + 1) end

local offW, offb, np = {}, {}, 0
for l = 1, nl do
  offW[l] = np + 1; np = np + sizes[l] * sizes[l + 1]
  offb[l] = np + 1; np = np + sizes[l + 1]
end
local P = orion.zeros { np, type = "f32" }
local V = orion.zeros { np, type = "f32" }
nn.write(P, nn.read(orion.randn { np, type = "f32", scale = 0.5, seed = 4 }))
nn.write(V, nn.read(orion.randn { np, type = "f32", scale = 0.01, seed = 5 }))
local BP = orion.buffer(P, { apply = "add", flush = "loop" })
local BV = orion.buffer(V, { apply = "add", flush = "loop" })
local order = {}
for i = 1, n do order[i] = (i * 37) % n + 1 end

-- The steps of one shard on matrices (no arrays: shared by both runs).
local function steps(W, b, VW, Vb, Xs, Ys)
  local rows = Xs:rows()
  for p0 = 1, rows, B do
    local bsz = math.min(B, rows - p0 + 1)
    local H0 = nn.matrix(bsz, sizes[1])
    local Yb = nn.matrix(bsz, 1)
    for r = 1, bsz do
      for j = 1, sizes[1] do H0:set(r, j, Xs:get(p0 + r - 1, j)) end
      Yb:set(r, 1, Ys:get(p0 + r - 1, 1))
    end
    local Z, D = {}, {}
    for l = 1, nl do
      Z[l] = nn.matrix(bsz, sizes[l + 1])
      D[l] = nn.matrix(bsz, sizes[l + 1])
      nn.gemm(Z[l], l == 1 and H0 or Z[l - 1], W[l])
      nn.add_bias(Z[l], b[l])
      if l < nl then nn.relu(Z[l]) end
    end
    nn.softmax_xent(Z[nl], Yb, D[nl])
    local GW, Gb = {}, {}
    for l = nl, 1, -1 do
      GW[l] = nn.matrix(sizes[l], sizes[l + 1])
      Gb[l] = nn.matrix(1, sizes[l + 1])
      nn.gemm(GW[l], l == 1 and H0 or Z[l - 1], D[l], 1 / bsz, 0, true, false)
      nn.colsum(Gb[l], D[l], 1 / bsz)
      if l > 1 then
        nn.gemm(D[l - 1], D[l], W[l], 1, 0, false, "T")
        nn.relu_backward(D[l - 1], Z[l - 1])
      end
    end
    for l = 1, nl do
      nn.momentum(W[l], VW[l], GW[l], lr, mu)
      nn.momentum(b[l], Vb[l], Gb[l], lr, mu)
    end
  end
end

local function load(src_p, src_v)
  local W, b, VW, Vb = {}, {}, {}, {}
  for l = 1, nl do
    W[l] = nn.read_range(src_p, offW[l], sizes[l], sizes[l + 1])
    b[l] = nn.read_range(src_p, offb[l], 1, sizes[l + 1])
    VW[l] = nn.read_range(src_v, offW[l], sizes[l], sizes[l + 1])
    Vb[l] = nn.read_range(src_v, offb[l], 1, sizes[l + 1])
  end
  return W, b, VW, Vb
end

local shards = orion.zeros { S, type = "i32" }
local P0, V0 = nn.read(P), nn.read(V)

local st = orion.parallel_for(shards, function(s, _)
  local W, b, VW, Vb = {}, {}, {}, {}
  local W0, b0, VW0, Vb0 = {}, {}, {}, {}
  for l = 1, nl do
    W[l] = nn.read_range(P, offW[l], sizes[l], sizes[l + 1])
    b[l] = nn.read_range(P, offb[l], 1, sizes[l + 1])
    VW[l] = nn.read_range(V, offW[l], sizes[l], sizes[l + 1])
    Vb[l] = nn.read_range(V, offb[l], 1, sizes[l + 1])
    W0[l], b0[l], VW0[l], Vb0[l] = W[l]:copy(), b[l]:copy(), VW[l]:copy(), Vb[l]:copy()
  end
  local lo, hi = (s - 1) * n // S + 1, s * n // S
  local Xs = nn.rows(X, order, lo, hi - lo + 1)
  local Ys = nn.rows(Y, order, lo, hi - lo + 1)
  steps(W, b, VW, Vb, Xs, Ys)
  for l = 1, nl do
    nn.add_to(BP, W[l], 1 / S, offW[l], W0[l])
    nn.add_to(BP, b[l], 1 / S, offb[l], b0[l])
    nn.add_to(BV, VW[l], 1 / S, offW[l], VW0[l])
    nn.add_to(BV, Vb[l], 1 / S, offb[l], Vb0[l])
  end
end, { partitions = { S }, tier = "lua" })

-- Serially on the driver: each shard from the same start, then the mean.
local meanP, meanV = nn.matrix(1, np), nn.matrix(1, np)
for s = 1, S do
  local P0a, V0a = nn.to_array(P0), nn.to_array(V0)
  local W, b, VW, Vb = load(P0a, V0a)
  local lo, hi = (s - 1) * n // S + 1, s * n // S
  steps(W, b, VW, Vb, nn.rows(X, order, lo, hi - lo + 1), nn.rows(Y, order, lo, hi - lo + 1))
  local Pend, Vend = nn.to_array(P0), nn.to_array(V0)
  for l = 1, nl do
    nn.write(Pend, W[l], offW[l]); nn.write(Pend, b[l], offb[l])
    nn.write(Vend, VW[l], offW[l]); nn.write(Vend, Vb[l], offb[l])
  end
  nn.axpy(meanP, 1 / S, nn.read(Pend))
  nn.axpy(meanV, 1 / S, nn.read(Vend))
end
print(("schedule %s, executors %d"):format(st.schedule, st.executors))
print(("max |P - serial| = %.3g"):format(nn.max_abs_diff(nn.read(P), meanP)))
print(("max |V - serial| = %.3g"):format(nn.max_abs_diff(nn.read(V), meanV)))
print(("max |P - start| = %.3g"):format(nn.max_abs_diff(nn.read(P), P0)))
