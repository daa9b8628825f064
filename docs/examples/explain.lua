-- Two loops over a small array: orion-driver --explain prints the plan of
-- each loop the first time the script reaches it, then runs it.
local orion = require "orion"
local A = orion.zeros { 6 }
local st = orion.parallel_for(A, function(i) A[i] = i * i end)
local total = orion.accumulator("sum")
orion.parallel_for(A, function(i, v) total:add(v) end)
print("blocks", st.blocks, "sum", total:get())
