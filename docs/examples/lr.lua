-- Matrix factorisation by SGD on small synthetic ratings, with the
-- learning rate from the command line; records the train and test RMSE of
-- each epoch (orion-driver --metrics FILE), for `orion-driver plot`.
--   orion-driver --metrics lr-0.01.jsonl docs/examples/lr.lua 0.01
local orion = require "orion"

local lr = tonumber(arg[1]) or 0.02
local train, test = orion.synthetic_ratings { users = 600, items = 400, ratings = 30000 }
local nu, ni = train:dims()
local K, reg = 8, 0.05
local W = orion.randn { nu, K, scale = 0.1, seed = 1 }
local H = orion.randn { ni, K, scale = 0.1, seed = 2 }
local sse = orion.accumulator("sum")

local function predict(wu, hi)
  local p = 0
  for k = 1, K do p = p + wu[k] * hi[k] end
  return p
end

local test_rmse
for epoch = 1, 8 do
  sse:reset()
  orion.parallel_for(train, function(u, i, r)
    local wu, hi = W[u], H[i]
    local e = r - predict(wu, hi)
    sse:add(e * e)
    for k = 1, K do
      local w, h = wu[k], hi[k]
      wu[k] = w + lr * (e * h - reg * w)
      hi[k] = h + lr * (e * w - reg * h)
    end
  end)
  local train_rmse = math.sqrt(sse:get() / train:nnz())
  sse:reset()
  orion.parallel_for(test, function(u, i, r)
    local e = r - predict(W[u], H[i])
    sse:add(e * e)
  end)
  test_rmse = math.sqrt(sse:get() / test:nnz())
  orion.record { epoch = epoch, train_rmse = train_rmse, test_rmse = test_rmse }
end
print(("lr %g: test RMSE %.4f after 8 epochs"):format(lr, test_rmse))
