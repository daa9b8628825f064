-- A floating-point sum accumulator whose value depends on the order the
-- executors' partials are added: element 1 adds 1e16, element 17 adds 1.0,
-- the last element -1e16 (each in another executor's part), and
-- (1e16 + 1) - 1e16 is not 1 + (1e16 - 1e16).
-- The driver combines the partials in executor order, so every run of the
-- loop gives the same sum.  Prints the distinct sums seen over RUNS runs.
local orion = require "orion"

local n, runs = 64, tonumber(arg[1] or "30")
local x = orion.array { n, init = 1 }
local seen, order = {}, {}
for run = 1, runs do
  local s = orion.accumulator("sum", 0.0)
  -- One element of a different quarter each run keeps its executor busy,
  -- so the executors finish, and their partials arrive, in another order.
  local slow = ((run - 1) % 4) * (n // 4) + 2
  orion.parallel_for(x, function(i, v)
    if i == slow then
      for _ = 1, 2000000 do
        s:add(0.0)
      end
    end
    s:add(i == 1 and 1e16 or i == n and -1e16 or i == 17 and v or 0.0)
  end)
  local key = ("%.17g"):format(s:get())
  if not seen[key] then
    seen[key] = true
    order[#order + 1] = key
  end
end
print(("distinct sums over %d runs: %d (%s)"):format(runs, #order,
  table.concat(order, ", ")))
