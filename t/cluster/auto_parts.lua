-- partitions = "auto" (lua/pfor_auto.h): an SGD matrix factorisation
-- (600 users x 400 items, 20000 ratings, K = 16) whose training loop asks
-- for "auto" and whose test loop gives 4 partitions, 5 epochs.  One line
-- per epoch on stdout:
--   epoch E train_parts P test_parts Q rmse R
-- for t/test_auto_parts.sh.  With arg[1] = "bogus", the training loop asks
-- for partitions = "bogus" instead.
local orion = require "orion"

local train, test = orion.synthetic_ratings { users = 600, items = 400, ratings = 20000, seed = 5 }
local nu, ni = train:dims()
local K = 16
local W = orion.randn { nu, K, type = "f32", scale = 0.1, seed = 1 }
local H = orion.randn { ni, K, type = "f32", scale = 0.1, seed = 2 }
local sse = orion.accumulator("sum", 0.0)
local lr, reg = 0.02, 0.05
local parts = arg[1] == "bogus" and "bogus" or "auto"

for epoch = 1, 5 do
  local st = orion.parallel_for(train, function(u, i, r)
    local wu, hi = W[u], H[i]
    local e = r
    for k = 1, K do e = e - wu[k] * hi[k] end
    for k = 1, K do
      local w, h = wu[k], hi[k]
      wu[k] = w + lr * (e * h - reg * w)
      hi[k] = h + lr * (e * w - reg * h)
    end
  end, { partitions = parts })
  sse:reset()
  local est = orion.parallel_for(test, function(u, i, r)
    local wu, hi = W[u], H[i]
    local e = r
    for k = 1, K do e = e - wu[k] * hi[k] end
    sse:add(e * e)
  end, { schedule = "2d", partitions = { 4 } })
  print(("epoch %d train_parts %d test_parts %d rmse %.17g"):format(
    epoch, st.partitions, est.partitions, math.sqrt(sse:get() / test:nnz())))
end
