-- orion.progress: a job of 3 epochs of about 0.1 s each reports how far
-- it is and its ETA after each (docs/lua-api.md, "orion.progress").
local orion = require "orion"

local epochs = 3
orion.progress(0, epochs) -- the start the ETA is timed from
for epoch = 1, epochs do
  local t0 = orion.clock()
  while orion.clock() - t0 < 0.1 do end -- an epoch's work
  print(("epoch %d trained"):format(epoch))
  io.stdout:flush()
  orion.progress(epoch, epochs)
end
