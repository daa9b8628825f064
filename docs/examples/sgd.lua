local orion = require "orion"

local train, test = orion.synthetic_ratings { users = 2000, items = 1000, ratings = 100000 }
local nu, ni = train:dims()
local K, lr, reg = 8, 0.02, 0.05
local W = orion.randn { nu, K, type = "f32", scale = 0.1, seed = 1 }
local H = orion.randn { ni, K, type = "f32", scale = 0.1, seed = 2 }
local sse = orion.accumulator("sum")

local function predict(wu, hi)            -- a helper: shipped with the body
  local p = 0
  for k = 1, K do p = p + wu[k] * hi[k] end
  return p
end

for epoch = 1, 5 do
  sse:reset()
  local stats = orion.parallel_for(train, function(u, i, r)
    local wu, hi = W[u], H[i]             -- slices: views of rows u and i
    local e = r - predict(wu, hi)
    sse:add(e * e)
    for k = 1, K do
      local w, h = wu[k], hi[k]
      wu[k] = w + lr * (e * h - reg * w)
      hi[k] = h + lr * (e * w - reg * h)
    end
  end)
  local rmse = math.sqrt(sse:get() / train:nnz())
  print(("epoch %d  rmse %.4f  %d blocks  %.2fs"):format(epoch, rmse, stats.blocks, stats.seconds))
  orion.record { epoch = epoch, rmse = rmse }
  lr = lr * 0.9                           -- the next loop captures the new value
end
