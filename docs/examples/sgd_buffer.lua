-- docs/guide.md's warning: linear regression y = 3x by SGD whose weight
-- updates go through an orion.buffer.  Usage: sgd_buffer.lua FLUSH, where
-- FLUSH is "loop", "block" or a number of samples.
local orion = require "orion"
local flush = tonumber(arg[1]) or arg[1]
local n = 1000
local X = orion.array { n }
local Y = orion.array { n }
for i = 1, n do
  local x = 1 + (i % 7) / 7                  -- features in [1, 2)
  X:set(i, x)
  Y:set(i, 3 * x)
end
local w = orion.zeros { 1 }
local wb = orion.buffer(w, { apply = "add", flush = flush })
local lr = 0.05
for epoch = 1, 5 do
  orion.parallel_for(X, function(i, x)
    local e = Y[i] - w[1] * x                  -- w as of the last flush
    wb[1] = wb[1] + lr * e * x                 -- one SGD step, buffered
  end)
  -- A diverged weight is named so rather than printed: with a buffer
  -- flushed while the loop runs, when the other executors' flushes land
  -- depends on timing, so its digits differ from run to run.
  local v = w:get(1)
  if math.abs(v) < 1e4 then
    print(("epoch %d  w = %.6g"):format(epoch, v))
  else
    print(("epoch %d  |w| > 1e4: diverged"):format(epoch))
  end
end
