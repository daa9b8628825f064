-- Two loop bodies written alike on one line: Lua cannot say which of the
-- two a function value is, so the analysis refuses to guess
-- (docs/analysis.md, "Finding and parsing the body").
local orion = require 'orion'
local A = orion.zeros{4}
local f, g = function(i) A[i] = i end, function(i) A[i] = i end
orion.parallel_for(A, g)
