-- The script keeps the driver busy between two loops (serial work in Lua,
-- no call into orion) for SECONDS, longer than the heartbeat timeouts the
-- test sets: the executors wait for it and the second loop runs.
local orion = require "orion"

local seconds = tonumber(arg[1] or "4")
local x = orion.array { 64, init = 1 }
local function total()
  local s = orion.accumulator("sum", 0.0)
  orion.parallel_for(x, function(i, v)
    s:add(v)
  end)
  return s:get()
end
print("before", total())
local t = os.clock()
while os.clock() - t < seconds do
end
print("after", total())
