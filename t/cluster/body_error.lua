-- A loop body that raises on one element: the driver must report the
-- executor and the element, at the parallel_for's line, and exit 1.
local orion = require "orion"

local A = orion.zeros { 40, 6 }
orion.parallel_for(A, function(i, j, v) -- @pfor
  if i == 33 and j == 4 then
    error("boom at 33, 4") -- @error
  end
  return v + i * j
end)
print("not reached")
