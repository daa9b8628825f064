-- Results that do not depend on the number of executors:
--   orion-driver --executors N det.lua
-- Prints the exact bits (%a) of a float accumulator over a 1-D loop, of
-- the factors and RMSEs of a 2-D SGD loop (the guide's sgd example, small),
-- of an ordered loop (checked against schedule = "serial" too) and of float
-- "add" buffers flushed at the end of the loop, one small (applied by the
-- driver) and one large enough to be sharded across the executors (applied
-- by its owners).  t/test_det.c compares the output on 0..4 executors.
local orion = require "orion"

local function bits(x) return ("%a"):format(x) end
-- A checksum of a float array's exact values, summed in key order here.
local function checksum(A)
  local s, n = 0.0, 0
  local function walk(t)
    for _, v in ipairs(t) do
      if type(v) == "table" then
        walk(v)
      else
        n = n + 1
        s = s + v * (1 + (n % 7) * 1e-3)
      end
    end
  end
  walk(A:to_table())
  return bits(s)
end

-- 1. A 1-D loop with a float sum whose value depends on the order its
-- terms are added in.
local X = orion.randn { 5000, scale = 1e3, seed = 7 }
local s1 = orion.accumulator("sum", 0.0)
local mx = orion.accumulator("max")
orion.parallel_for(X, function(i, v)
  s1:add(v * v * 1e-3 + 1 / i)
  mx:add(v)
end)
print("1d sum", bits(s1:get()), "max", bits(mx:get()))

-- 2. A 2-D SGD loop, as in docs/examples/sgd.lua.
local train = orion.synthetic_ratings { users = 600, items = 300,
                                        ratings = 20000, seed = 3 }
local nu, ni = train:dims()
local K, lr, reg = 4, 0.02, 0.05
local W = orion.randn { nu, K, type = "f32", scale = 0.1, seed = 1 }
local H = orion.randn { ni, K, type = "f32", scale = 0.1, seed = 2 }
local sse = orion.accumulator("sum")
for epoch = 1, 3 do
  sse:reset()
  local st = orion.parallel_for(train, function(u, i, r)
    local wu, hi = W[u], H[i]
    local p = 0
    for k = 1, K do p = p + wu[k] * hi[k] end
    local e = r - p
    sse:add(e * e)
    for k = 1, K do
      local w, h = wu[k], hi[k]
      wu[k] = w + lr * (e * h - reg * w)
      hi[k] = h + lr * (e * w - reg * h)
    end
  end)
  print("sgd epoch", epoch, st.schedule, st.blocks, "rmse",
        ("%.17g"):format(math.sqrt(sse:get() / train:nnz())))
  lr = lr * 0.9
end
print("sgd W", checksum(W), "H", checksum(H))

-- 2b. The same loop with each block's users dealt out in rounds
-- (interleave = true): its own order, the same on every executor count.
local W2 = orion.randn { nu, K, type = "f32", scale = 0.1, seed = 1 }
local H2 = orion.randn { ni, K, type = "f32", scale = 0.1, seed = 2 }
lr = 0.02
for epoch = 1, 3 do
  sse:reset()
  orion.parallel_for(train, function(u, i, r)
    local wu, hi = W2[u], H2[i]
    local p = 0
    for k = 1, K do p = p + wu[k] * hi[k] end
    local e = r - p
    sse:add(e * e)
    for k = 1, K do
      local w, h = wu[k], hi[k]
      wu[k] = w + lr * (e * h - reg * w)
      hi[k] = h + lr * (e * w - reg * h)
    end
  end, { interleave = true })
  print("interleaved sgd epoch", epoch, "rmse",
        ("%.17g"):format(math.sqrt(sse:get() / train:nnz())))
  lr = lr * 0.9
end
print("interleaved sgd W", checksum(W2), "H", checksum(H2))
local ok, msg = pcall(orion.parallel_for, train, function(u, i, r) end,
                      { interleave = true, ordered = true })
if ok or not tostring(msg):find("interleave reorders the elements of a block, which ordered = true runs in key order", 1, true) then
  error("interleave with ordered = true: " .. tostring(msg))
end
local R = orion.ragged { { { 1, 1.0 }, { 2, 2.0 } }, { { 1, 3.0 } } }
ok, msg = pcall(orion.parallel_for, R, function(row) end, { interleave = true })
if ok or not tostring(msg):find("interleave would split the rows of a ragged array", 1, true) then
  error("interleave on a ragged array: " .. tostring(msg))
end

-- 3. An ordered loop: each element reads its upper and left neighbours
-- (a wavefront), and the same loop forced serial.
local function ordered(opts)
  local A = orion.zeros { 40, 30 }
  orion.parallel_for(A, function(i, j, v)
    local up = i > 1 and A[i - 1][j] or 1.0
    local left = j > 1 and A[i][j - 1] or 0.5
    A[i][j] = up * 0.6 + left * 0.45 + 1 / (i + j)
  end, opts)
  return checksum(A)
end
local o1, o2 = ordered { ordered = true }, ordered { schedule = "serial" }
print("ordered", o1, o1 == o2 and "= serial" or ("~= serial " .. o2))

-- 4. Float "add" buffers flushed at the end of the loop: a small target
-- (the driver applies the writes) and a large one written only through
-- its buffer (sharded: the executors that own its rows apply them).
local Z = orion.randn { 20000, scale = 1.0, seed = 11 }
local S = orion.zeros { 16 }
local T = orion.zeros { 6000 }
local BS = orion.buffer(S, { apply = "add", flush = "loop" })
local BT = orion.buffer(T, { apply = "add", flush = "loop" })
local r4 = orion.parallel_for(Z, function(i, v)
  local k = (i * 7919) % 16 + 1
  BS[k] = BS[k] + v * 1e8 + 1 / i
  local t = (i * 104729) % 6000 + 1
  BT[t] = BT[t] + v * 1e12 + 1 / i
  BT[(t % 6000) + 1] = BT[(t % 6000) + 1] - v * 1e12
end)
print("buffer small", checksum(S), "sharded", checksum(T))
io.stderr:write(("det: %d executors, %d blocks, shard_writes %d\n"):format(
  r4.executors, r4.blocks, r4.shard_writes))
