-- Block reports held back (executor/exec_late.c): a compiled 2-D SGD loop
-- whose H rows rotate executor to executor, every block sent at the
-- loop's start.  stdout is the exact bits of each epoch's RMSE and of the
-- final W and H (the same on any executor count, reports held or not);
-- stderr says per epoch the driver's socket reads and writes and the
-- blocks ("io EPOCH driver_io N blocks B reorder R"), for t/test_cluster.c.
local orion = require "orion"

local train = orion.synthetic_ratings { users = 400, items = 320, ratings = 12000, seed = 11 }
local nu, ni = train:dims()
local K = 8
local W = orion.randn { nu, K, scale = 0.1, seed = 3 }
local H = orion.randn { ni, K, scale = 0.1, seed = 4 }
local sse = orion.accumulator("sum", 0.0)
local lr, reg = 0.02, 0.05

local function bits(x) return ("%a"):format(x) end
local function checksum(A)
  local s, n = 0.0, 0
  for _, row in ipairs(A:to_table()) do
    for _, v in ipairs(row) do
      n = n + 1
      s = s + v * (1 + (n % 7) * 1e-3)
    end
  end
  return bits(s)
end

for epoch = 1, 3 do
  sse:reset()
  local st = orion.parallel_for(train, function(u, i, r)
    local wu, hi = W[u], H[i]
    local e = r
    for k = 1, K do e = e - wu[k] * hi[k] end
    sse:add(e * e)
    for k = 1, K do
      local w, h = wu[k], hi[k]
      wu[k] = w + lr * (e * h - reg * w)
      hi[k] = h + lr * (e * w - reg * h)
    end
  end, { tier = "c" })
  print("epoch", epoch, "rmse", bits(math.sqrt(sse:get() / train:nnz())), st.schedule, st.tier)
  io.stderr:write(("io %d driver_io %d blocks %d reorder %s\n")
    :format(epoch, st.driver_io, st.blocks, tostring(st.reorder)))
end
print("final W", checksum(W), "H", checksum(H))
