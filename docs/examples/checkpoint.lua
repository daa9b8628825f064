-- docs/checkpoints.md's example: a loop that checkpoints after every step
-- and survives a lost executor.  With --crash-once (and orion-driver
-- --allow-io), the executor running element 8 at step 3 exits, once: the
-- file "crashed" remembers that it did.
local orion = require "orion"
local A = orion.zeros { 8, type = "i64" }
local first = 1
local resumed = orion.restore()
if resumed then first = resumed.step + 1 end
for step = first, 4 do
  orion.step(step)
  local crash = step == 3 and arg[1] == "--crash-once"
  orion.parallel_for(A, function(i, v)
    if crash and i == 8 and not io.open("crashed") then
      io.open("crashed", "w"):close()
      os.exit(9)
    end
    return v + step
  end, { tier = "lua" })
  print(("step %d: A[8] = %d"):format(step, A:get(8)))
  orion.checkpoint { step = step, state = { note = "after step " .. step } }
end
