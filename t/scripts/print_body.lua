-- print and io.write inside a loop body: the lines go to the driver's
-- stdout, between what the script prints before and after the loop, on
-- any number of executors (t/test_scripts.c runs it on 0 and 2).
local orion = require "orion"
local A = orion.array{6}
print("before the loop")
orion.parallel_for(A, function(i, v)
  print("body element", i)
  io.write("written ", i, "\n") -- not flushed by io.write itself
end)
print("after the loop")
