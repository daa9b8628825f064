-- orion-driver --verify (docs/analysis.md): run with
-- ORION_TEST_PLAN_NODEP=C, which makes the analysis forget C's
-- dependences, so that its plan lets blocks updating one element of C run
-- concurrently; --verify then fails the loop, naming both blocks, the key
-- and the lines.  Without the hook the loop is refused, as it should be.
local orion = require "orion"
local A = orion.array{16}
local C = orion.zeros{3}
orion.parallel_for(A, function(i, v)
  local c = C[i % 3 + 1]
  C[i % 3 + 1] = c + i
end, { partitions = {4} })
print(C:get(1), C:get(2), C:get(3))
