local orion = require "orion"
local T = orion.zeros { 2 }
local Scale = orion.array { 2, init = 3 }
local B = orion.buffer(T, { apply = function(old, delta) return old + delta * Scale[1] end })
