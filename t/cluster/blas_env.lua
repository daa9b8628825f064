-- OPENBLAS_NUM_THREADS as each local executor sees it (needs --allow-io,
-- which lets a body read its environment): the driver starts them with
-- ORION_BLAS_THREADS threads (default 1) unless the user set it.
local orion = require "orion"
local A = orion.zeros { 2 }
orion.parallel_for(A, function(i, v)
  return tonumber(os.getenv("OPENBLAS_NUM_THREADS") or "-1")
end)
print(("blas threads %g %g"):format(A:get(1), A:get(2)))
