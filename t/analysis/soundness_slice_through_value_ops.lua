-- Soundness: `and`/`or` and pass-through builtins (assert, select) give a
-- slice back; writes through the result must count as writes of it.
local orion = require "orion"
local G = dofile((os.getenv("ORION_SRCDIR") or ".") .. "/t/analysis/golden.lua")


local MOD = 1000003
local n = 8
local A = orion.zeros { n, type = "i64" }
local S2 = orion.zeros { n, 4, type = "i64" }
local function reset()
  G.fill(A, function(i) return i % 3 == 0 and 200 + i or i end)
  G.fill(S2, function(i, k) return i + k end)
end

-- Large elements fold into row 1, the others into their own row.
local function and_or(i, v)
  local row = (v > 100) and S2[1] or S2[i]
  row[1] = (row[1] * 3 + v) % MOD
end

G.check {
  name = "slice_through_and_or_rejected", iter = A, iname = "A", body = and_or,
  expect = { schedule = "rejected", vectors = { "(NONNEG)" }, reason = "on S2" },
  reset = reset,
}

local function asserted(i, v)
  local row = assert(S2[1])
  row[1] = (row[1] * 3 + v) % MOD
end

G.check {
  name = "slice_through_assert_rejected", iter = A, iname = "A", body = asserted,
  expect = { schedule = "rejected", vectors = { "(NONNEG)" }, reason = "on S2" },
  reset = reset,
}

local function selected(i, v)
  local row = select(1, S2[1])
  row[2] = (row[2] * 3 + v) % MOD
end

G.check {
  name = "slice_through_select_rejected", iter = A, iname = "A", body = selected,
  expect = { schedule = "rejected", vectors = { "(NONNEG)" }, reason = "on S2" },
  reset = reset,
}
