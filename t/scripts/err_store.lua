-- Storing a value that does not fit an integer array.
-- usage: orion-driver err_store.lua float|range|returned|string
local orion = require "orion"
local A = orion.array{3}
local counts = orion.zeros{3, type = "i32"}
local which = arg[1]

if which == "float" then
  orion.parallel_for(A, function(i, v)
    counts[i] = i / 2 -- @float
  end)
elseif which == "range" then
  orion.parallel_for(A, function(i, v)
    counts[i] = 1 << 40 -- @range
  end)
elseif which == "returned" then
  orion.parallel_for(counts, function(i, v)
    return 2.5 -- @returned
  end)
elseif which == "string" then
  orion.parallel_for(A, function(i, v)
    counts[i] = "seven" -- @string
  end)
end
print("not reached")
