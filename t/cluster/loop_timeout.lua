-- The loop deadline: orion-driver loop_timeout.lua TIER [TIMEOUT]
-- runs a body that never returns on a 1-D array of 40 elements; with
-- TIMEOUT, opts.timeout is TIMEOUT seconds, else --loop-timeout decides.
local orion = require "orion"

local A = orion.zeros { 40 }
local opts = { tier = arg[1] }
if arg[2] then
  opts.timeout = tonumber(arg[2])
end
orion.parallel_for(A, function(i) -- @pfor
  if i > 0 then
    while true do -- @spin
    end
  end
end, opts)
print("not reached")
