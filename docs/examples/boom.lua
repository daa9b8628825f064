local orion = require "orion"
orion.parallel_for(orion.zeros { 3 }, function(i, v) if i == 2 then error("boom") end end)
