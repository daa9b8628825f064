local orion = require "orion"
local R = orion.text_file("docs/examples/tiny.txt")
local visit = 0
orion.parallel_for(R, function(u, i, r)
  visit = visit + 1
  print(("visit %d: (%d, %d) r=%g"):format(visit, u, i, r))
end)
for _, e in ipairs(R:to_table()) do io.write(("(%d,%d) "):format(e[1], e[2])) end
print()
