-- A loop with one slow block: orion-driver stall.lua N FLAG runs N
-- elements; the body of element 1 waits until the file FLAG exists (at
-- most 60 s), so the block holding it runs until the test creates FLAG.
-- Prints the sum of the results (N * (N + 1)).
local orion = require "orion"

local N = tonumber(arg[1]) or 64
local FLAG = arg[2]
local X = orion.zeros { N }

orion.parallel_for(X, function(i, x) -- @pfor
  if i == 1 then
    local t0 = os.time()
    while os.time() - t0 < 60 do
      local f = io.open(FLAG)
      if f then
        f:close()
        break
      end
    end
  end
  X[i] = 2 * i
end)
local sum = 0
for i = 1, N do
  sum = sum + X:get(i)
end
print(("sum %d"):format(sum))
