-- Resident rows (scheduler/dist_resid.c): a 2-D SGD loop leaves W (space-keyed)
-- and H (time-keyed) on the executors, and what the script then does with
-- them must see the same values as a run inside the driver:
--   1. two epochs (the second moves H's parts executor to executor);
--   2. the script reads both (they come back from the executors);
--   3. the script writes one element of H; the next loop sees it;
--   4. a loop that reads H sharded (server, read-only) and W in place;
--   5. a loop over H itself (H iterated: resident along its space parts,
--      its rows taken from where the epochs left them);
--   6. two more epochs, and the final values.
-- stdout is the exact bits of every result; stderr the bytes of each loop
-- ("bytes LOOP driver D peer P model M", M the bytes of W and H), for
-- t/test_cluster.c.
local orion = require "orion"

local train, test = orion.synthetic_ratings { users = 600, items = 400, ratings = 20000, seed = 5 }
local nu, ni = train:dims()
local K = 16
local W = orion.randn { nu, K, scale = 0.1, seed = 1 }
local H = orion.randn { ni, K, scale = 0.1, seed = 2 }
local model = (nu + ni) * K * 8
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
local function bytes(what, st)
  io.stderr:write(("bytes %s driver %d peer %d model %d\n"):format(what,
    st.driver_bytes, st.peer_bytes, model))
end

local function epoch(name)
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
  end)
  print(name, "rmse", bits(math.sqrt(sse:get() / train:nnz())), st.schedule)
  bytes(name, st)
end

epoch("epoch 1")
epoch("epoch 2")
print("read W", checksum(W), "H", checksum(H))
H:set(7, 3, 1.5)
print("set H[7][3]", bits(H:get(7, 3)))
epoch("epoch 3")
local test_sse = orion.accumulator("sum", 0.0)
local st = orion.parallel_for(test, function(u, i, r)
  local wu, hi = W[u], H[i]
  local e = r
  for k = 1, K do e = e - wu[k] * hi[k] end
  test_sse:add(e * e)
end)
print("test rmse", bits(math.sqrt(test_sse:get() / test:nnz())))
bytes("test", st)
orion.parallel_for(H, function(i, k, v) return v * 0.5 end)
print("halved H", checksum(H))
epoch("epoch 4")
epoch("epoch 5")
print("final W", checksum(W), "H", checksum(H))
