local orion = require "orion"
local R = orion.text_file("docs/examples/tiny.txt")
local n = 0
orion.parallel_for(R, function(u, i, r)
  n = n + 1
end)
print("n on the driver:", n)
