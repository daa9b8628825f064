local orion = require "orion"
local A = orion.array { 10, init = 1 }
orion.parallel_for(A, function(i, v)
  if i > 1 then
    A[i] = A[i - 1] + v          -- a prefix sum: iteration i needs i - 1
  end
end)
