-- A broadcast an executor is lost in: a short loop starts the executors,
-- "warm" is printed; then an array of MB megabytes (arg[1], default 48)
-- is made, "broadcast" is printed and a loop reads it on every executor,
-- which the test interrupts by killing one of them.
local orion = require "orion"

local MB = tonumber(arg[1]) or 48
local X = orion.array { 64, init = 1 }
local Y = orion.zeros { 64 }
orion.parallel_for(Y, function(i, v) return 0 end)
print("warm")
io.stdout:flush()
local cols = 1024
local rows = MB * 1000000 // (8 * cols)
local A = orion.array { rows, cols, init = "rand", seed = 3 }
print("broadcast")
io.stdout:flush()
orion.parallel_for(X, function(i, x) -- @pfor
  Y[i] = A[(i * 7919) % rows + 1][1]
end)
print("not reached")
