local orion = require "orion"
local X = orion.array { 8, init = 1 }          -- 8 samples, each adds 1
local T = orion.zeros { 2 }                    -- a total per class
local Seen = orion.zeros { 2, type = "i64" }   -- applications per class
local B = orion.buffer(T, {
  apply = function(old, delta, seen, k) return old + delta * k, seen + 1 end,
  with = { Seen } })
orion.parallel_for(X, function(i, x)
  local c = i % 2 + 1
  B[c] = B[c] + x
end, { partitions = { 4 } })
print(T:get(1), T:get(2), Seen:get(1), Seen:get(2))
