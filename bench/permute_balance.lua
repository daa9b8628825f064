-- bench/permute_balance.lua: how evenly a ratings file's elements fall
-- into the P x P blocks of the 2-D schedule (equal key widths, the
-- default cut), as given and with both ids permuted (A:permute_keys).
-- Run by bench/permute.sh:
--   orion-driver --executors 0 bench/permute_balance.lua TRAIN TEST SEED [P]
-- Prints, for each: max/mean and min/mean stored elements per block, and
-- the rotation's critical path: the sum over the P clocks of the largest
-- block running at that clock, over nnz/P (1.0: every clock is even).
local orion = require "orion"
local trainf, testf, seed, P = arg[1], arg[2], math.tointeger(tonumber(arg[3])),
  math.tointeger(tonumber(arg[4] or 8))

local function dims_of(path)
  return orion.text_file(path, { value_type = "f32" }):dims()
end
-- The ids of both files, as apps/mf/mf.lua sizes W and H.
local nu, ni = dims_of(trainf)
local tu, ti = dims_of(testf)
nu, ni = math.max(nu, tu), math.max(ni, ti)

local function balance(permute)
  local R = orion.text_file(trainf, { value_type = "f32" })
  if permute then
    R:permute_keys(1, orion.permutation(nu, seed)):permute_keys(2, orion.permutation(ni, seed))
  end
  local C = orion.zeros { P, P }
  local n1, n2 = R:dims() -- without --permute the loop cuts R's own dims
  if permute then n1, n2 = nu, ni end
  -- Key k (1-based) of a dimension of n keys is in part (k*P - 1) // n
  -- (0-based): the parts are [floor(n*p/P), floor(n*(p+1)/P)).
  orion.parallel_for(R, function(u, i, r)
    local a, b = (u * P - 1) // n1 + 1, (i * P - 1) // n2 + 1
    C[a][b] = C[a][b] + 1
  end, { schedule = "serial" })
  local max, min, crit, total = 0, math.huge, 0, R:nnz()
  for c = 0, P - 1 do
    local m = 0
    for p = 1, P do
      local v = C:get(p, (p - 1 + c) % P + 1)
      if v > m then m = v end
    end
    crit = crit + m
  end
  for a = 1, P do
    for b = 1, P do
      local v = C:get(a, b)
      if v > max then max = v end
      if v < min then min = v end
    end
  end
  local mean = total / (P * P)
  print(("%-9s %8d %9.3f %9.3f %9.3f"):format(permute and "permuted" or "as given",
    total, max / mean, min / mean, crit / (total / P)))
end

print(("blocks %dx%d, %d users x %d items, seed %d"):format(P, P, nu, ni, seed))
print(("%-9s %8s %9s %9s %9s"):format("ids", "nnz", "max/mean", "min/mean", "critical"))
balance(false)
balance(true)
