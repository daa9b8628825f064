-- Accumulators: sum, min, max; integers stay integers; reset.
local orion = require "orion"

local A = orion.array{4, 5, type = "i32"}
orion.parallel_for(A, function(i, j, v) return (i - 2) * 10 + j end)

local s = orion.accumulator("sum")
local mn, mx = orion.accumulator("min"), orion.accumulator("max")
local fs = orion.accumulator("sum", 0.5)
local fmax = orion.accumulator("max", 100)
print("before", s:get(), mn:get(), mx:get(), fs:get(), fmax:get())
orion.parallel_for(A, function(i, j, v)
  s:add(v)
  mn:add(v)
  mx:add(v)
  fs:add(v)
  fmax:add(v)
end)
print("int", s:get(), math.type(s:get()), mn:get(), math.type(mn:get()),
  mx:get(), math.type(mx:get()))
print("float", fs:get(), math.type(fs:get()), fmax:get())

-- A second loop adds to what is there.
orion.parallel_for(A, function(i, j, v) s:add(v) end)
print("twice", s:get())

-- A float operand turns the sum into a float.
local mixed = orion.accumulator("sum")
orion.parallel_for(A, function(i, j, v) mixed:add(j == 5 and 0.25 or 1) end)
print("mixed", mixed:get(), math.type(mixed:get()))

-- reset() goes back to the initial value (none for min/max without one).
s:reset()
mn:reset()
fmax:reset()
print("reset", s:get(), mn:get(), fmax:get())
s:reset(7)
orion.parallel_for(A, function(i, j, v) s:add(1) end)
print("reset7", s:get())

-- A loop whose body fails adds nothing.
local ok = pcall(orion.parallel_for, A, function(i, j, v)
  s:add(1000)
  if i == 4 and j == 5 then error("late failure") end
end)
print("failed", ok, s:get())
