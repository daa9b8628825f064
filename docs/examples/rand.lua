local orion = require "orion"
local Z = orion.zeros { 8, type = "i32" }
orion.parallel_for(Z, function(i, v) return math.random(1, 4) end)
print(table.concat(Z:to_table(), " "))
