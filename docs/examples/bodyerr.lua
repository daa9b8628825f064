local orion = require "orion"
local W = orion.zeros { 3, 2 }
local R = orion.text_file("docs/examples/tiny.txt")
orion.parallel_for(R, function(u, i, r)
  if r == 4 then W[u][i + 1] = r end       -- (2, 2): W[2][3] is out of range
end)
