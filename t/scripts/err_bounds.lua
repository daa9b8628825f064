-- Out-of-range subscripts inside a body name the array, index and range.
-- usage: orion-driver err_bounds.lua dim1|dim2|field
local orion = require "orion"
local A = orion.array{3, 4}
local W = orion.zeros{2, 5}

if arg[1] == "field" then
  local model = {W = W}
  orion.parallel_for(A, function(i, j, v) -- @pforfield
    if i == 1 and j == 2 then
      return model.W[i][j * 4] -- @indexfield
    end
  end, {schedule = "serial"}) -- an array in a table is an unknown access

elseif arg[1] == "dim2" then
  orion.parallel_for(A, function(i, j, v) -- @pfor2
    if i == 2 and j == 3 then
      local w = W[i]
      return w[9] -- @index2
    end
  end)
else
  orion.parallel_for(A, function(i, j, v) -- @pfor1
    if i == 3 and j == 1 then
      return W[i][1] -- @index1
    end
  end)
end
print("not reached")
