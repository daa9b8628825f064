-- A sparse iterated array's new values stay on the executors
-- (scheduler/dist_resid.c, orion__resid_keep): a 2-D loop whose body
-- returns each element's new value (as LDA's sampler returns a token's
-- topic) and writes its space key's row of W and its time key's row of H,
-- over `ratings` elements
-- (arg 1; 600 users x 400 items).  Then the script reads the array, a
-- loop with another cut reorders it, and it is read again: every value
-- must be what the body's arithmetic gives (f32, recomputed here).  Then
-- a dense iterated array's passes, and the values read back.
-- stdout: one line per sweep, "sweep S driver_bytes D elements N", then
-- "read R wrong W" lines, "dense pass S driver_bytes D array_bytes A"
-- lines and the final values' bits; for
-- t/test_kept_values.sh.
local orion = require "orion"

local n = tonumber(arg[1]) or 20000
local R = orion.synthetic_ratings { users = 600, items = 400, ratings = n, seed = 7 }
local nu, ni = R:dims()
local W = orion.zeros { nu, 4 }
local H = orion.zeros { ni, 4 }
local SWEEPS = 4

local function f32(x) return (string.unpack("f", string.pack("f", x))) end
-- The values by key, as the script reads them.
local function by_key()
  local v = {}
  for _, e in ipairs(R:to_table()) do v[e[1] * 1000 + e[2]] = e[3] end
  return v
end
local want = by_key()

for s = 1, SWEEPS do
  local st = orion.parallel_for(R, function(u, i, r)
    local w, h = W[u], H[i]
    w[1] = w[1] + r
    h[1] = h[1] + w[1] * 1e-3
    return r * 0.5 + u * 0.25 + i
  end, { partitions = { 4, 4 }, space = 1 })
  print(("sweep %d driver_bytes %d elements %d schedule %s"):format(s, st.driver_bytes, R:nnz(), st.schedule))
  for k, v in pairs(want) do want[k] = f32(v * 0.5 + (k // 1000) * 0.25 + k % 1000) end
end

local function check(what)
  local got, wrong, sum = by_key(), 0, 0.0
  for k, v in pairs(want) do
    if got[k] ~= v then wrong = wrong + 1 end
  end
  for _, e in ipairs(R:to_table()) do sum = sum + e[3] * (1 + e[1] % 7 * 1e-3) end
  print(("read %s wrong %d sum %a"):format(what, wrong, sum))
end
check("after the sweeps")
-- Another cut (the default partitions, 1-D): the array is reordered, so
-- the kept values come back first.
orion.parallel_for(R, function(u, i, r) return r + 1 end)
for k, v in pairs(want) do want[k] = f32(v + 1) end
check("after a loop with another cut")
-- And the first cut again: its blocks go out anew, values kept again.
orion.parallel_for(R, function(u, i, r) return r * 2 end, { partitions = { 4, 4 }, space = 1 })
for k, v in pairs(want) do want[k] = f32(v * 2) end
check("after the first cut again")
-- A dense iterated array (3,000 x 8 f64, 192,000 bytes) whose returned
-- values write it: its rows stay with their space parts too.
local D = orion.randn { 3000, 8, seed = 4 }
for s = 1, 3 do
  local st = orion.parallel_for(D, function(r, k, v) return v * 0.5 + r + k end)
  print(("dense pass %d driver_bytes %d array_bytes %d"):format(s, st.driver_bytes, 3000 * 8 * 8))
end
local d1 = 0.0
for _, row in ipairs(D:to_table()) do for _, v in ipairs(row) do d1 = d1 + v end end
print(("D %a"):format(d1))
local w1, h1 = 0.0, 0.0
for _, row in ipairs(W:to_table()) do w1 = w1 + row[1] end
for _, row in ipairs(H:to_table()) do h1 = h1 + row[1] end
print(("W %a H %a"):format(w1, h1))
