-- The bytes a rotation moves (issue 35): a fixed-size SGD matrix
-- factorisation (600 users x 400 items, 20000 ratings, K = 32, f32
-- factors), three epochs of a training pass and a read-only test pass on
-- the training pass's 2-D schedule.  W stays with its executor and H's
-- parts rotate, so each executor receives each part of H once per pass:
-- a pass moves executors x (bytes of H) between executors, plus framing.
-- One line per epoch on stdout:
--   epoch E train_peer T test_peer P h_bytes B schedule S
-- for t/test_peer_bytes.sh.
local orion = require "orion"

local train, test = orion.synthetic_ratings { users = 600, items = 400, ratings = 20000, seed = 5 }
local nu, ni = train:dims()
local K = 32
local W = orion.randn { nu, K, type = "f32", scale = 0.1, seed = 1 }
local H = orion.randn { ni, K, type = "f32", scale = 0.1, seed = 2 }
local sse = orion.accumulator("sum", 0.0)
local lr, reg = 0.02, 0.05

for epoch = 1, 3 do
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
  end, { fast = true })
  local est = orion.parallel_for(test, function(u, i, r)
    local wu, hi = W[u], H[i]
    local e = r
    for k = 1, K do e = e - wu[k] * hi[k] end
    sse:add(e * e)
  end, { fast = true, schedule = "2d" })
  print(("epoch %d train_peer %d test_peer %d h_bytes %d schedule %s"):format(
    epoch, st.peer_bytes or 0, est.peer_bytes or 0, ni * K * 4, tostring(st.schedule)))
end
