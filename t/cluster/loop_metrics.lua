-- parallel_for's per-loop metrics on a cluster:
--   orion-driver --executors N loop_metrics.lua
-- A totals array written only through a buffer is sharded across the
-- executors.  Loop 1 writes it (buffered writes go to the owners, each
-- answered by an acknowledgement), loop 2 binds nothing sharded (no peer
-- traffic at all, even though loop 1's acknowledgements may have been sent
-- late), loop 3 reads the totals (fetched from the owners).  Each loop
-- prints its bytes; the script checks the per-executor seconds: one entry
-- per executor, none negative, and computing + waiting + idle within the
-- loop's wall time as measured here.
local orion = require "orion"

local N, K = 20000, 3000
-- Z[i] is token i's topic, drawn from a fixed seed; want[t] counts them.
local Z = orion.zeros { N, type = "i64" }
local want = {}
for k = 1, K do
  want[k] = 0
end
math.randomseed(99)
for i = 1, N do
  local t = math.random(K)
  Z:set(i, t)
  want[t] = want[t] + 1
end

local T = orion.zeros { K, type = "i64" }
local B = orion.buffer(T, { apply = "add" })
local acc = orion.accumulator("sum", 0)

-- The loop's statistics, printed and checked; `wall` is the loop's time
-- measured around the call.
local SLACK = 0.05 -- seconds: clock reads, not a speed bound
local function report(tag, st, wall)
  print(("%s: executors %d driver_bytes %d bytes_moved %d peer_bytes %d")
    :format(tag, st.executors, st.driver_bytes, st.bytes_moved, st.peer_bytes))
  for _, k in ipairs { "compute_seconds", "wait_seconds", "idle_seconds" } do
    assert(type(st[k]) == "table" and #st[k] == st.executors,
      ("%s: %s has %s entries for %d executors"):format(
        tag, k, type(st[k]) == "table" and #st[k] or "no", st.executors))
  end
  for e = 1, st.executors do
    local c, w, i = st.compute_seconds[e], st.wait_seconds[e], st.idle_seconds[e]
    assert(c >= 0 and w >= 0 and i >= 0,
      ("%s: executor %d: compute %g wait %g idle %g"):format(tag, e - 1, c, w, i))
    assert(c + w + i <= wall + SLACK,
      ("%s: executor %d: compute %g + wait %g + idle %g > the loop's %g s")
        :format(tag, e - 1, c, w, i, wall))
  end
end

local function timed(tag, body)
  local t0 = orion.clock()
  local st = orion.parallel_for(Z, body)
  report(tag, st, orion.clock() - t0)
end

timed("loop 1", function(i, t) B[t] = B[t] + 1 end)
for k = 1, K do
  assert(T:get(k) == want[k], ("loop 1: topic %d: %s, want %d"):format(
    k, tostring(T:get(k)), want[k]))
end
timed("loop 2", function(i, t) acc:add(1) end)
assert(acc:get() == N, "loop 2: counted " .. tostring(acc:get()))
local total = orion.accumulator("sum", 0)
timed("loop 3", function(i, t) total:add(T[t]) end)
local s = 0
for k = 1, K do s = s + want[k] * want[k] end
assert(total:get() == s, ("loop 3: sum %s, want %d"):format(tostring(total:get()), s))
print("loop_metrics ok")
