-- flush = "clock" (issue 36; t/test_cluster.c): orion-driver clock.lua TIER
--
-- An executor flushes a clock buffer after every `clock` blocks it runs
-- and refreshes a sharded target once a clock, as a parameter-server
-- worker pushes and pulls once a clock.  Checked here:
--   * the options: `clock` without flush = "clock", or not a whole number
--     of blocks from 1 on, is refused;
--   * totals: additive i64 buffers hold exactly the serial totals (a lost
--     or twice-applied update changes one), flushed every block or every
--     3 blocks, TIER "c" (the compiled body's scan store, dsm/wbuf.h) or
--     "lua";
--   * read-your-writes: the first element of each block reads the target
--     plus its pending writes (A[1] + B[1]) and sees at least its
--     executor's earlier blocks' PER increments (blocks run on executors
--     in contiguous ranges: block b of NB on executor floor(b * N / NB)),
--     also inside a clock, where nothing is refreshed;
--   * traffic: on executors, a clock of 4 blocks moves well under half the
--     bytes between executors of flush = "block" on the same loop, with a
--     quarter of the shard writes;
--   * apply = "mean" (model averaging): each executor's flushed changes
--     (per clock, or sent early by flush = "managed") are divided by the
--     executor count, so a target written +1 per
--     element ends at (its writes) / N, while inside a clock the body still
--     reads its own undivided pending writes; an integer target, or
--     flush = "loop", is refused.
local orion = require "orion"

local tier = arg[1] or "c"
local check = dofile(((arg and arg[0] or ""):match("^(.*/)") or "./") .. "scatter.lua")

-- The options.
local function refused(opts)
  local ok, msg = pcall(orion.buffer, orion.zeros { 3 }, opts)
  assert(not ok, "accepted")
  print("refused: " .. tostring(msg))
end
refused { flush = "block", clock = 2 }
refused { flush = "clock", clock = 0 }
refused { flush = "clock", clock = 1.5 }
refused { flush = "hourly" }

-- Totals and read-your-writes.
local NB, PER, M = 12, 8, 4096
local function totals(flush, clock)
  local A = orion.zeros { 1, type = "i64" }
  local B = orion.buffer(A, { apply = "add", flush = flush, clock = clock })
  local T = orion.zeros { M, type = "i64" }
  local TB = orion.buffer(T, { apply = "add", flush = flush, clock = clock })
  local X = orion.zeros { NB * PER, type = "i64" }
  local st = orion.parallel_for(X, function(i, x)
    local v = A[1] + B[1]
    B[1] = B[1] + 1
    for j = 1, 64 do
      local k = (i * 37 + j * 101) % M + 1
      TB[k] = TB[k] + j
      TB[k] = TB[k] + 0 -- a write of nothing: the total stays
    end
    return v
  end, { partitions = { NB }, tier = tier })
  assert(st.tier == tier, "ran at tier " .. tostring(st.tier))
  assert(A:get(1) == NB * PER, "A[1] is " .. A:get(1))
  check(T, NB * PER, M, "flush " .. flush .. ": ")
  local n, bad = st.executors, 0
  for b = 0, NB - 2 do
    local e0, e1 = b * n // NB, (b + 1) * n // NB
    local v0, v1 = X:get(b * PER + 1), X:get((b + 1) * PER + 1)
    if e0 == e1 and v1 < v0 + PER then
      print(("flush %s: block %d read %d after block %d read %d on executor %d"):format(
        flush, b + 2, v1, b + 1, v0, e0))
      bad = bad + 1
    end
  end
  print(("totals %s%s: exact, %s"):format(flush, clock and (" " .. clock) or "",
    bad == 0 and "every block saw its executor's earlier writes" or bad .. " stale reads"))
  return st
end
totals("block")
local st = totals("clock", 3)

-- Traffic: an MF-like loop over a float table, flushed per block and per
-- clock of 4 blocks.
local R, K, N = 512, 16, 4096
local function traffic(flush, clock)
  local H = orion.zeros { R, K }
  local Hb = orion.buffer(H, { apply = "add", flush = flush, clock = clock })
  local X = orion.zeros { N, type = "i64" }
  return orion.parallel_for(X, function(i, x)
    for j = 1, 8 do
      local r = (i * 37 + j * 101) % R + 1
      local h, hb = H[r], Hb[r]
      for k = 1, K do hb[k] = hb[k] + 0.001 * (h[k] + hb[k] + 1) end
    end
  end, { partitions = { 32 }, tier = tier })
end
local b, c = traffic("block"), traffic("clock", 4)
if st.executors > 1 then
  assert(c.peer_bytes < 0.5 * b.peer_bytes,
    ("clock: %d bytes between executors, block: %d"):format(c.peer_bytes, b.peer_bytes))
  assert(c.shard_writes * 3 < b.shard_writes,
    ("clock: %d shard writes, block: %d"):format(c.shard_writes, b.shard_writes))
  print("traffic: a clock of 4 blocks moves under half of flush = \"block\"'s bytes")
end

-- apply = "mean".
do
  local ok = pcall(orion.buffer, orion.zeros { 3 }, { apply = "mean", flush = "clock" })
  assert(ok, "mean refused on a float target")
  refused { apply = "mean" }
  local I = orion.zeros { 3, type = "i64" }
  local ok2, msg = pcall(orion.buffer, I, { apply = "mean", flush = "block" })
  assert(not ok2, "accepted")
  print("refused: " .. tostring(msg))
  local n, want
  for _, flush in ipairs { "clock", "managed" } do
    local M = orion.zeros { 8 }
    local MB = orion.buffer(M, { apply = "mean", flush = flush, clock = flush == "clock" and 2 or nil })
    local Y = orion.zeros { NB * PER }
    local sm = orion.parallel_for(Y, function(i, y)
      local k = (i - 1) % 8 + 1
      MB[k] = MB[k] + 1
      return MB[1]
    end, { partitions = { NB }, tier = tier })
    n, want = sm.executors, NB * PER // 8
    for k = 1, 8 do
      assert(M:get(k) == want / n, ("mean, %s: M[%d] is %s, want %s / %d"):format(flush, k, M:get(k), want, n))
    end
    -- Block 1 starts its executor's first clock: its last element reads
    -- M[1] as 0 plus the undivided +1 its first element wrote.
    assert(flush ~= "clock" or Y:get(PER) == 1, "mean: block 1 read its pending M[1] as " .. Y:get(PER))
  end
  print(("mean: exact, %s / %d executors"):format(want, n))
end
-- f32 pending values: in fast mode a compiled body keeps an "add" or
-- "mean" buffer's pending values over an f32 array as floats (dsm/wbuf.h's
-- f32 form), read and flushed as the doubles were: quarters are exact in
-- both.  Each block's last element reads FB[1], its executor's undivided
-- pending +0.25s: block 1 (one clock of 2 blocks) 0.25, block 2, in the
-- same clock, 0.5.  A pending 1 + 2^-30 reads as 1 in fast mode's floats
-- (the compiled tier), as itself in exact mode and in the interpreter.
do
  local n
  for _, apply in ipairs { "add", "mean" } do
    for _, fast in ipairs { true, false } do
      local F = orion.zeros { 8, type = "f32" }
      local FB = orion.buffer(F, { apply = apply, flush = "clock", clock = 2 })
      local Y = orion.zeros { NB * PER }
      local sf = orion.parallel_for(Y, function(i, y)
        local k = (i - 1) % 8 + 1
        FB[k] = FB[k] + 0.25
        return FB[1]
      end, { partitions = { NB }, tier = tier, fast = fast })
      n = sf.executors
      local want = NB * PER // 8 * 0.25 / (apply == "mean" and n or 1)
      for k = 1, 8 do
        assert(F:get(k) == want, ("f32 %s, fast %s: F[%d] is %s, want %s"):format(
          apply, fast, k, F:get(k), want))
      end
      assert(Y:get(PER) == 0.25 and Y:get(2 * PER) == 0.5,
        ("f32 %s, fast %s: blocks 1 and 2 read %s and %s"):format(apply, fast, Y:get(PER), Y:get(2 * PER)))
    end
  end
  local F = orion.zeros { 4, type = "f32" }
  local FB = orion.buffer(F, { apply = "add", flush = "clock", clock = 2 })
  for _, fast in ipairs { true, false } do
    local Y = orion.zeros { NB }
    orion.parallel_for(Y, function(i, y)
      FB[1] = FB[1] + 1
      FB[1] = FB[1] + 2 ^ -30
      local v = FB[1] - 1
      FB[1] = FB[1] - v - 1
      return v
    end, { partitions = { NB }, tier = tier, fast = fast })
    local want = (fast and tier == "c") and 0 or 2 ^ -30
    for b = 1, NB do
      assert(Y:get(b) == want, ("f32 pending, fast %s: block %d read %s, want %s"):format(fast, b, Y:get(b), want))
    end
  end
  print(("f32 pending: exact, %d executors"):format(n))
end
print(("clock ok: %d executors, tier %s"):format(st.executors, tier))
