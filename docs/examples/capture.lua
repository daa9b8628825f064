local orion = require "orion"
local W = orion.zeros { 3, 2 }
local R = orion.text_file("docs/examples/tiny.txt")     -- 5 ratings, users 1..3
local n = orion.accumulator("sum")
orion.parallel_for(R, function(u, i, r)
  local wu = W[u]          -- a view of row u, not a copy
  wu[1] = wu[1] + r        -- writes go to W
  wu[2] = wu[2] + 1
  n:add(1)                 -- each executor's part, summed at the loop's end
end)
for u, row in ipairs(W:to_table()) do print(u, row[1], row[2]) end
print("n on the driver:", n:get())
