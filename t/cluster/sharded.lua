-- Server-held arrays sharded across the executors:
--   orion-driver --executors N sharded.lua [fn]
-- A totals array of 6000 i64 (12 chunks of 512 rows) is written only
-- through a buffer, so every executor owns a range of it and applies the
-- writes to its rows.  Loop 1 counts tokens per topic; loop 2 reads the
-- totals (fetched from the owners) into an accumulator; loop 3 reads and
-- writes in one loop, LDA style.  Loops 4-9 read the totals again: after a
-- loop that does not bind them (nothing is fetched again), after a loop
-- that writes them directly, and after the script changed two of them.
-- Every figure is checked against a serial count, and the statistics show
-- who moved the data.
local orion = require "orion"

local N, K = 30000, 6000
local fn = arg[1] == "fn"
local path = os.tmpname()
local f = assert(io.open(path, "w"))
local want = {}
for k = 1, K do
  want[k] = 0
end
local seed = 4242
local function rnd(n)
  seed = (seed * 1103515245 + 12345) % 2147483648
  return (seed >> 16) % n
end
for i = 1, N do
  local t = rnd(K) + 1
  f:write(i, " ", t, "\n")
  want[t] = want[t] + 1
end
f:close()
local Z = orion.text_file(path, { value_type = "i64", dims = { N } , format = "coo" })
os.remove(path)

local T = orion.zeros { K, type = "i64" }
local B = orion.buffer(T, { apply = fn and function(old, d) return old + d end
                                  or "add" })

-- 1: counts through the buffer.
local st = orion.parallel_for(Z, function(i, t)
  B[t] = B[t] + 1
end)
for k = 1, K do
  assert(T:get(k) == want[k], ("loop 1: topic %d: %s, want %d"):format(
    k, tostring(T:get(k)), want[k]))
end
print(("loop 1: executors %d bytes_moved %d peer_bytes %d shard_writes %d")
  :format(st.executors, st.bytes_moved, st.peer_bytes, st.shard_writes))

-- 2: every token reads its topic's total and the one K/2 away (fetched
-- from the owners); the sum is checked against the values T holds now
-- (val; want[t] tokens have topic t).
local function read_loop(tag, val)
  local a = orion.accumulator("sum", 0)
  local r = orion.parallel_for(Z, function(i, t)
    a:add(T[t] + T[(t + K // 2 - 1) % K + 1])
  end)
  local s = 0
  for i = 1, K do
    s = s + want[i] * (val[i] + val[(i + K // 2 - 1) % K + 1])
  end
  assert(a:get() == s, ("%s: sum %s, want %d"):format(tag, tostring(a:get()), s))
  print(("%s: executors %d bytes_moved %d peer_bytes %d"):format(
    tag, r.executors, r.bytes_moved, r.peer_bytes))
  return r
end
local val = {}
for k = 1, K do val[k] = want[k] end
read_loop("loop 2", val)
local acc = orion.accumulator("sum", 0)

-- 3: reads and buffered writes in one loop; the reads may be stale, the
-- writes must all land.
local seen = orion.accumulator("sum", 0)
st = orion.parallel_for(Z, function(i, t)
  seen:add(T[t] >= want[t] and 1 or 0)
  B[t] = B[t] + 1
end)
for k = 1, K do
  assert(T:get(k) == 2 * want[k], ("loop 3: topic %d: %s, want %d"):format(
    k, tostring(T:get(k)), 2 * want[k]))
end
assert(seen:get() == N, "loop 3: a read saw less than loop 1's totals")
print(("loop 3: executors %d bytes_moved %d peer_bytes %d shard_writes %d")
  :format(st.executors, st.bytes_moved, st.peer_bytes, st.shard_writes))
for k = 1, K do val[k] = 2 * want[k] end

-- 4-6: a read brings every executor's copy up to date; a loop that does
-- not bind T leaves those copies and their versions alone, so the same
-- read again fetches no rows (only the version lists travel).
local st4 = read_loop("loop 4", val)
orion.parallel_for(Z, function(i, t) acc:add(1) end)
local st6 = read_loop("loop 6", val)
assert(st6.peer_bytes * 4 < st4.peer_bytes or st4.peer_bytes == 0,
  ("loop 6 fetched rows again: peer_bytes %d after %d"):format(
    st6.peer_bytes, st4.peer_bytes))

-- 7-8: a loop that writes T directly (iterating it: partitioned, so the
-- executors' copies are written), then the sharded read again: it must
-- see the new values, not rows kept from loop 6.
orion.parallel_for(T, function(k, v) T[k] = v * 3 end)
for k = 1, K do val[k] = 3 * val[k] end
read_loop("loop 8", val)

-- 9: the script changes T between loops; the owners pick it up.
T:set(1, 0)
T:set(K // 2 + 7, 5)
val[1], val[K // 2 + 7] = 0, 5
read_loop("loop 9", val)
print("sharded ok")