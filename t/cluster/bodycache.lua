-- Bodies kept by the executors (issue 35, wire version 22): a loop whose
-- body captures a large table (about 150 KB) runs five times; the
-- executors keep the body they were sent, so the second pass (the same
-- body) and the third (one captured number changed: a patch) move much
-- less through the driver than the first, and a changed source or a
-- changed table still gives the new body's result.  Each pass's sum is
-- checked against the driver's own; one line per pass on stdout:
--   pass P driver_bytes B sum S
local orion = require "orion"

local X = orion.randn { 64, 4, seed = 3 }
local big, other = {}, {}
for i = 1, 8000 do big[i] = i * 0.5; other[i] = i * 0.25 + 1 end
local acc = orion.accumulator("sum", 0.0)

local function want(t, scale, sign)
  local s = 0.0
  for i = 1, 64 do for j = 1, 4 do s = s + t[i] * scale + sign * j end end
  return s
end

local function check(p, st, w)
  local got = acc:get()
  if got ~= w then error(("pass %d: sum %s, want %s"):format(p, tostring(got), tostring(w)), 0) end
  print(("pass %d driver_bytes %d sum %s"):format(p, st.driver_bytes, tostring(got)))
end

local function plus(t, scale)
  acc:reset()
  return orion.parallel_for(X, function(i, j, v) acc:add(t[i] * scale + j) end)
end

local function minus(t, scale)
  acc:reset()
  return orion.parallel_for(X, function(i, j, v) acc:add(t[i] * scale - j) end)
end

check(1, plus(big, 3), want(big, 3, 1))   -- sent whole
check(2, plus(big, 3), want(big, 3, 1))   -- held: a reference
check(3, plus(big, 5), want(big, 5, 1))   -- a captured number changed
check(4, minus(big, 5), want(big, 5, -1)) -- another source
check(5, plus(other, 5), want(other, 5, 1)) -- another table
check(6, plus(big, 3), want(big, 3, 1))   -- the first body again
print("bodycache ok")
