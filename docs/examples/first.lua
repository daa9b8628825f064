local orion = require "orion"

-- A 4 x 3 dense array of zeros (element type f64 by default).
local A = orion.zeros { 4, 3 }
print(A, A:type(), A:dims())

-- Fill A[i][j] = 10*i + j: iterating a dense array calls the body once per
-- element; a returned value replaces the element.
orion.parallel_for(A, function(i, j, v)
  return 10 * i + j
end)
print(A:get(2, 3))

-- Sum every element with an accumulator.
local total = orion.accumulator("sum")
local stats = orion.parallel_for(A, function(i, j, v) total:add(v) end)
print("sum", total:get(), "blocks", stats.blocks, "elements", stats.elements)
