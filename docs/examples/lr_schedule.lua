-- The learning rates of orion.train's schedules (docs/training.md,
-- "Learning-rate schedules"): --lr 0.1 over 8 epochs, each schedule with
-- its defaults and with other parameters.
local train = require "orion.train"

local rows = {
  { "step", { step = 10 } }, { "step 3, gamma 0.5", { step = 3, gamma = 0.5 } },
  { "exp", {} }, { "exp, gamma 0.5", { gamma = 0.5 } },
  { "cosine", { epochs = 8 } }, { "cosine, min 0.01", { epochs = 8, min = 0.01 } },
}
io.write(("%-18s"):format("epoch"))
for e = 1, 8 do io.write(("%7d"):format(e)) end
io.write("\n")
for _, r in ipairs(rows) do
  io.write(("%-18s"):format(r[1]))
  local name = r[1]:match("^%a+")
  for e = 1, 8 do io.write(("%7.4f"):format(train.schedule(name, 0.1, e, r[2]))) end
  io.write("\n")
end
