-- flush = "managed" against flush = "loop" (t/test_cluster.c,
-- t/slow_netcluster.sh): orion-driver managed.lua [WORK]
--
-- Every element of a dense (doc, word) -> topic table adds 1 to its
-- topic's count and d * t to its word's sum, through additive i64 buffers, in a
-- loop cut into 32 blocks whose body also spins WORK steps (default 200)
-- per token, so that blocks end while others still run.  The loop runs
-- with flush = "loop", then "managed": at the loop's end both must hold
-- exactly the totals taken serially in Lua (a lost or twice-sent update
-- changes a count or a sum).  It prints what went early: managed_bytes > 0
-- says updates went before the loop's end.
local orion = require "orion"

local work = math.tointeger(tonumber(arg[1] or "200"))
local K, D, W = 7, 120, 60

-- A D x W table of topics, each (d, w) with topic (31 d + 17 w) mod K + 1,
-- and the serial totals.
local Z = orion.zeros { D, W, type = "i64" }
orion.parallel_for(Z, function(d, w, v) return (31 * d + 17 * w) % K + 1 end)
local count, sum = {}, {}
for k = 1, K do
  count[k] = 0
end
for w = 1, W do
  sum[w] = 0
end
for d = 1, D do
  for w = 1, W do
    local t = (31 * d + 17 * w) % K + 1
    count[t] = count[t] + 1
    sum[w] = sum[w] + d * t
  end
end
local tokens = D * W

local function run(flush)
  local C = orion.zeros { K, type = "i64" }
  local S = orion.zeros { W, type = "i64" }
  local Cb = orion.buffer(C, { apply = "add", flush = flush })
  local Sb = orion.buffer(S, { apply = "add", flush = flush })
  local st = orion.parallel_for(Z, function(d, w, t)
    -- Work the compiler cannot drop: x stays below 1000003, so the
    -- branch is never taken, but nothing proves it.
    local x = 0
    for i = 1, work do
      x = (x * 31 + i) % 1000003
    end
    if x == d * 1000007 then
      Cb[t] = Cb[t] + 1
    end
    Cb[t] = Cb[t] + 1
    Sb[w] = Sb[w] + d * t
  end, { partitions = { 32 } })
  for k = 1, K do
    if C:get(k) ~= count[k] then
      error(("flush %s: topic %d: count %s, want %d"):format(
        flush, k, tostring(C:get(k)), count[k]))
    end
  end
  for w = 1, W do
    if S:get(w) ~= sum[w] then
      error(("flush %s: word %d: sum %s, want %d"):format(
        flush, w, tostring(S:get(w)), sum[w]))
    end
  end
  return st
end

-- An unknown policy is refused, naming the accepted ones.
local ok, msg = pcall(orion.buffer, orion.zeros { 3 }, { flush = "often" })
assert(not ok)
print("refused: " .. tostring(msg))

local lst = run("loop")
local st = run("managed")
assert(lst.managed_bytes == 0, "flush = loop sent early")
assert(st.managed_bytes == st.managed_items * 16, "bytes are 16 per item")
print(("managed ok: %d tokens, %d topics, %d words: totals of flush = "
       .. "\"managed\" equal flush = \"loop\"'s, %d executors"):format(
  tokens, K, W, st.executors))
print(("early sends: %s"):format(
  st.managed_bytes > 0 and "yes" or "none"))
print(("early bytes %d, items %d, mean staleness %.2f blocks, %d blocks, "
       .. "schedule %s"):format(st.managed_bytes, st.managed_items,
                               st.managed_staleness, st.blocks, st.schedule))
