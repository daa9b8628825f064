-- Buffers whose apply function takes helper arrays (orion.buffer's with,
-- issue 21), on any executor count: the helpers' values at the key come
-- in after (old, delta), the key last, and the new values the function
-- returns after the target's are kept, visible to the script and to later
-- loops.  Three placements of the target: sharded (the owners apply), the
-- iterated array (the driver applies), and helpers left resident on the
-- executors by an earlier loop.  Then the refusals, which name arrays and
-- buffers as the script does.
local orion = require "orion"

local function check(what, got, want)
  if got ~= want then
    error(("%s: got %s, want %s"):format(what, tostring(got), tostring(want)), 2)
  end
end

-- 1. A sharded target: X's 5000 elements add 1 to T[(i * 7 % n) + 1];
-- C counts the applications (one per block that touched the key), M keeps
-- the largest delta, S the sum of the keys seen.
local n = 2000
local T = orion.zeros { n }
local C = orion.zeros { n, type = "i64" }
local M = orion.zeros { n }
local B = orion.buffer(T, {
  apply = function(old, d, c, m, k) return old + d, c + 1, math.max(m, d) end,
  with = { C, M }, flush = arg[1] or "loop" })
local X = orion.array { 5000, init = 1 }
orion.parallel_for(C, function(k, c) return c + 10 end) -- resident rows
for _ = 1, 3 do
  orion.parallel_for(X, function(i, x) local k = (i * 7 % n) + 1; B[k] = B[k] + x end)
end
local want_t, want_c, want_m = {}, {}, {}
for k = 1, n do want_t[k], want_c[k], want_m[k] = 0, 10, 0 end
local NB = 8
for _ = 1, 3 do
  for b = 0, NB - 1 do
    local seen = {}
    for i = 5000 * b // NB + 1, 5000 * (b + 1) // NB do
      local k = (i * 7 % n) + 1
      seen[k] = (seen[k] or 0) + 1
    end
    for k, d in pairs(seen) do
      want_t[k], want_c[k] = want_t[k] + d, want_c[k] + 1
      want_m[k] = math.max(want_m[k], d)
    end
  end
end
for k = 1, n do
  check("T[" .. k .. "]", T:get(k), want_t[k] + 0.0)
  check("C[" .. k .. "]", C:get(k), want_c[k])
  check("M[" .. k .. "]", M:get(k), want_m[k] + 0.0)
end
-- A later loop sees the helpers' new values.
local S = orion.accumulator("sum", 0)
orion.parallel_for(C, function(k, c) S:add(c) end)
local sum = 0
for k = 1, n do sum = sum + want_c[k] end
check("sum of C in a later loop", S:get(), sum)
print(("sharded target: ok, %d applications"):format(sum - 10 * n))

-- 2. The iterated array as the target: the driver applies.  The key
-- arrives after the helpers.
local U = orion.zeros { 12 }
local K = orion.zeros { 12 }
local BU = orion.buffer(U, { apply = function(old, d, key_seen, k) return old + d, k end, with = { K } })
orion.parallel_for(U, function(k, u) local j = k % 12 + 1; BU[j] = BU[j] + k end)
for k = 1, 12 do
  check("U[" .. k .. "]", U:get(k), ((k - 2) % 12 + 1) + 0.0)
  check("K[" .. k .. "]", K:get(k), k + 0.0)
end
print("driver-applied target: ok")

-- 3. Refusals.
local function refused(f)
  local ok, e = pcall(f)
  if ok then error("not refused", 2) end
  print("refused: " .. tostring(e):gsub("^[^:]*:%d+: ", ""))
end
local Other = orion.zeros { n }
refused(function()
  local Bad = orion.buffer(T, { apply = function(old, d) return old + d * Other[1] end })
end)
refused(function()
  local Bad = orion.buffer(T, { apply = function(old, d, m) return old + M[1] end, with = { M } })
end)
refused(function()
  local Bad = orion.buffer(T, { apply = function(old, d, m) return T[1] end, with = { M } })
end)
refused(function()
  local Bad = orion.buffer(T, { apply = function(old, d, u) return old end, with = { U } })
end)
refused(function()
  local Bad = orion.buffer(T, { apply = "add", with = { M } })
end)
refused(function()
  orion.parallel_for(X, function(i, x) B[1] = B[1] + C[2] end)
end)

-- 4. Errors while applying name the buffer and the helper.
local Bx = orion.buffer(T, { apply = function(old, d, m) return old, "x" end, with = { M } })
local ok, e = pcall(orion.parallel_for, X, function(i, x) Bx[1] = Bx[1] + 1 end)
check("the bad apply function fails the loop", ok, false)
print("apply error: " .. tostring(e):match("buffer 'Bx'[^\n]*"))
