-- bench/pfor_launch.lua: the driver's cost of launching one parallel_for,
-- the way a training script launches the same loop every epoch: an SGD
-- body of MF's shape (W[u], H[i] rows of K factors, a captured step size
-- that changes between calls) over a small ratings matrix, LAUNCHES times.
-- Prints the driver's CPU milliseconds (os.clock: this process, all its
-- threads) and wall milliseconds per launch, after WARM launches.
-- usage: orion-driver [--executors N] bench/pfor_launch.lua LAUNCHES K
local orion = require "orion"
local launches, K = tonumber(arg[1]) or 200, tonumber(arg[2]) or 32
local nu, ni = 64, 64
local R = orion.zeros{nu, ni}
local W = orion.randn{nu, K, seed = 1}
local H = orion.randn{ni, K, seed = 2}
local lr, reg = 0.01, 0.05
local function epoch()
  return orion.parallel_for(R, function(u, i, r)
    local w, h = W[u], H[i]
    local e = r
    for k = 1, K do e = e - w[k] * h[k] end
    for k = 1, K do
      local wk, hk = w[k], h[k]
      w[k] = wk + lr * (e * hk - reg * wk)
      h[k] = hk + lr * (e * wk - reg * hk)
    end
  end)
end
local warm = 5
for _ = 1, warm do epoch(); lr = lr * 0.99 end
local c0, t0 = os.clock(), orion.clock()
local st
for _ = 1, launches do st = epoch(); lr = lr * 0.99 end
local c1, t1 = os.clock(), orion.clock()
print(("launches %d K %d tier %s plan %s cpu_ms %.3f wall_ms %.3f W11 %.17g"):format(
  launches, K, st.tier, tostring(st.plan), (c1 - c0) * 1e3 / launches,
  (t1 - t0) * 1e3 / launches, W:get(1, 1)))
