-- Read-your-writes for buffered writes applied while a loop runs
-- (flush = "block"): an executor's next block reads the target with the
-- writes of its own earlier blocks in, even when the target's owner is
-- busy and has not applied them yet.  The first two blocks (the first
-- executor's: it owns the one-element target) are slow, so that the others
-- flush and refresh while the owner computes.  Each block records what it
-- read; blocks run on executors in contiguous ranges (block b of n on
-- executor floor(b * N / n)), so consecutive blocks of one executor must
-- see at least 8 more (their own block's 8 increments).
local orion = require "orion"

local NB, PER = 8, 8
local A = orion.zeros { 1, type = "i64" }
local B = orion.buffer(A, { apply = "add", flush = "block" })
-- A sharded target of several chunks, written at scattered keys: its
-- totals must come out exact.
local M = 4096
local T = orion.zeros { M, type = "i64" }
local TB = orion.buffer(T, { apply = "add", flush = "block" })
local X = orion.zeros { NB * PER, type = "i64" }
local st = orion.parallel_for(X, function(i, x)
  local v = A[1]
  B[1] = B[1] + 1
  for j = 1, 64 do
    local k = (i * 37 + j * 101) % M + 1
    TB[k] = TB[k] + j
  end
  local spin = i <= 2 * PER and 400000 or 20000
  local s = 0
  for q = 1, spin do s = s + q % 7 end
  return v + (s < 0 and 1 or 0)
end, { partitions = { NB }, tier = "lua" })
local n = st.executors
assert(A:get(1) == NB * PER, "A[1] is " .. A:get(1))
dofile(((arg and arg[0] or ""):match("^(.*/)") or "./") .. "scatter.lua")(T, NB * PER, M, "")
local bad = 0
for b = 0, NB - 2 do
  local e0, e1 = b * n // NB, (b + 1) * n // NB
  local v0, v1 = X:get(b * PER + 1), X:get((b + 1) * PER + 1)
  if n > 0 and e0 == e1 and v1 < v0 + PER then
    print(("block %d read %d after block %d read %d on executor %d: its "
      .. "own %d writes are missing"):format(b + 2, v1, b + 1, v0, e0, PER))
    bad = bad + 1
  end
end
print(("ryw: %d executors, %d blocks, %s"):format(n, NB,
  bad == 0 and "every block saw its executor's earlier writes" or bad .. " stale reads"))
