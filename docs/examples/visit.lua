local orion = require "orion"
local R = orion.text_file("docs/examples/tiny.txt")
local W, H = orion.zeros { 3 }, orion.zeros { 3 }
orion.parallel_for(R, function(u, i, r)
  W[u] = W[u] + r                -- row u of W and row i of H: a 2d plan
  H[i] = H[i] + r
  print(("visit (%d, %d) r=%g"):format(u, i, r))
end)
for _, e in ipairs(R:to_table()) do io.write(("(%d,%d) "):format(e[1], e[2])) end
print()
