-- A loop that runs for a while: orion-driver long_loop.lua N WORK runs N
-- elements, each a busy loop of WORK steps, on the cluster.  A first short
-- loop starts the executors, then "loop started" is printed (and flushed)
-- just before the long loop, and a checksum of its result after it.
local orion = require "orion"

local N = tonumber(arg[1]) or 200
local WORK = tonumber(arg[2]) or 100000
local X = orion.array { N, init = "rand", seed = 7 }
local Y = orion.zeros { N }

orion.parallel_for(Y, function(i, v) return 0 end)
print("loop started")
io.stdout:flush()
local t0 = orion.clock()
orion.parallel_for(X, function(i, x) -- @pfor
  local s = 0
  for j = 1, WORK do
    s = s + (j * i) % 7
  end
  Y[i] = x * s
end)
local sum = 0
for i = 1, N do
  sum = sum + Y:get(i)
end
print(("loop seconds %.2f"):format(orion.clock() - t0))
print(("checksum %.17g"):format(sum))
