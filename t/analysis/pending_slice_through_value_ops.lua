-- PENDING (analysis): expressions that pass a slice through unchanged are
-- treated as reads of it.  `a and b` / `a or b` yield one of their
-- operands, and the pure builtins assert(x, ...) and select(n, ...) return
-- their arguments; the analysis visits those operands as pure "operand" /
-- builtin-argument reads, so a slice obtained that way and then written
-- through a local is never recorded as written.  Each loop below is
-- planned "none" while iterations write S2[1] (forward and reverse block
-- orders give different S2).  The slice must count as read and written
-- (as for `local row = S2[1]` assigned again, or a helper argument).
local orion = require "orion"
local G = dofile((os.getenv("ORION_SRCDIR") or ".") .. "/t/analysis/golden.lua")

local failures = {}
local function pending(spec)
  local ok, err = pcall(G.check, spec)
  if not ok then failures[#failures + 1] = spec.name .. ": " .. tostring(err):match("^[^\n]*") end
end

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

pending {
  name = "slice_through_and_or_rejected", iter = A, iname = "A", body = and_or,
  expect = { schedule = "rejected", vectors = { "(NONNEG)" }, reason = "on S2" },
  reset = reset,
}

local function asserted(i, v)
  local row = assert(S2[1])
  row[1] = (row[1] * 3 + v) % MOD
end

pending {
  name = "slice_through_assert_rejected", iter = A, iname = "A", body = asserted,
  expect = { schedule = "rejected", vectors = { "(NONNEG)" }, reason = "on S2" },
  reset = reset,
}

local function selected(i, v)
  local row = select(1, S2[1])
  row[2] = (row[2] * 3 + v) % MOD
end

pending {
  name = "slice_through_select_rejected", iter = A, iname = "A", body = selected,
  expect = { schedule = "rejected", vectors = { "(NONNEG)" }, reason = "on S2" },
  reset = reset,
}

if #failures > 0 then
  error(("%d pending check(s) fail:\n  %s"):format(#failures, table.concat(failures, "\n  ")), 0)
end
