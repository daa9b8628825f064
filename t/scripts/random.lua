-- math.random inside bodies is seeded from (--seed, loop, block).
local orion = require "orion"

local A = orion.array{4, 5}
orion.parallel_for(A, function(i, j, v) return math.random() end)
local B = orion.array{6, type = "i64"}
orion.parallel_for(B, function(i, v) return math.random(1, 1000000) end)
local out, distinct = {}, {}
local n = 0
for _, row in ipairs(A:to_table()) do
  for _, x in ipairs(row) do
    out[#out + 1] = ("%.17g"):format(x)
    if not distinct[x] then n = n + 1 end
    distinct[x] = true
  end
end
print("A " .. table.concat(out, ","))
print("B " .. table.concat(B:to_table(), ","))
print("distinct " .. n)
