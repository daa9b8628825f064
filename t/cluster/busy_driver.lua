-- The script keeps the driver busy between two loops (serial work in Lua,
-- no call into orion) for SECONDS, longer than the heartbeat timeouts the
-- test sets: the executors wait for it and the second loop runs.  Wall
-- time, not CPU time: on a loaded machine the driver gets a fraction of a
-- core, and SECONDS of CPU would be minutes of wall.
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
local t = os.time()
while os.time() - t <= seconds do -- whole seconds: SECONDS to SECONDS + 1
end
print("after", total())
