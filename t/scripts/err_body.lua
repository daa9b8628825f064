-- An error inside a parallel_for body.
local orion = require "orion"
local A = orion.array{3, 4}

local function check(i, j)
  if i == 2 and j == 3 then
    error("bad element " .. i .. "," .. j) -- @raise
  end
end

print("before the loop")
orion.parallel_for(A, function(i, j, v) -- @pfor
  check(i, j) -- @call
end)
print("not reached")
