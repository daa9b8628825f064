-- orion.record writes one JSON object per call to --metrics FILE.
-- usage: orion-driver --metrics FILE metrics.lua RUN
local orion = require "orion"
local run = tonumber(arg[1])

for epoch = 1, 2 do
  orion.record{run = run, epoch = epoch, loss = 1 / (epoch * 4),
    name = 'say "hi"\n', ok = epoch == 2}
end
print("recorded")
