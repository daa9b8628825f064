-- The runtime guard (docs/analysis.md): run with
-- ORION_TEST_PLAN_READONLY=B to guard B as if the plan placed it
-- read-only; the body's write to it then stops the loop.
local orion = require "orion"
local A = orion.array{4}
local B = orion.zeros{4}
orion.parallel_for(A, function(i, v)
  B[i] = 2 * i
end, { tier = "lua" })
print(B:get(4))
