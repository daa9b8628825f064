-- PENDING (analysis): a captured integer upvalue is taken as a constant
-- subscript offset even when the body assigns it.  The executor's copy of
-- the upvalue persists from one iteration to the next (and across blocks),
-- so B[i + shift] below touches B[i] or B[i + 1] depending on earlier
-- iterations; the analysis plans "none" (B local), and forward and
-- reverse block orders give different B.  Like a reassigned local, an
-- upvalue the body assigns must make its subscripts unknown.
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
local B = orion.zeros { n + 1, type = "i64" }

local shift = 0
local function drift(i, v)
  B[i + shift] = (B[i + shift] * 3 + v) % MOD
  shift = 1 - shift
end

pending {
  name = "upvalue_reassigned_in_body_rejected", iter = A, iname = "A", body = drift,
  expect = { schedule = "rejected", vectors = { "(NONNEG)" }, reason = "on B" },
  reset = function()
    G.fill(A, function(i) return i * 3 + 1 end)
    G.fill(B, function(i) return i end)
  end,
}

if #failures > 0 then
  error(("%d pending check(s) fail:\n  %s"):format(#failures, table.concat(failures, "\n  ")), 0)
end
