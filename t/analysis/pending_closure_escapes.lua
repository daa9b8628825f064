-- PENDING (analysis): a closure defined in the body is analysed as part of
-- the iteration that defines it: B[i] inside it is "B at this iteration's
-- key".  Stored in a captured table (which persists on the executor from
-- one iteration and block to the next) and called by a later iteration,
-- it writes the earlier iteration's element.  The loop below is planned
-- "none" with B local; forward and reverse block orders give different B.
-- A closure that escapes the iteration (stored, returned, passed on) must
-- make its accesses unknown.
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
local B = orion.zeros { n, type = "i64" }
local stash = {}

local function deferred(i, v)
  local f = stash.f
  if f then f(v) end
  stash.f = function(x) B[i] = (B[i] * 3 + x) % MOD end
end

pending {
  name = "closure_escapes_iteration_rejected", iter = A, iname = "A", body = deferred,
  expect = { schedule = "rejected", vectors = { "(NONNEG)" }, reason = "on B" },
  reset = function()
    G.fill(A, function(i) return i * 3 + 1 end)
    G.fill(B, function(i) return i end)
  end,
}

if #failures > 0 then
  error(("%d pending check(s) fail:\n  %s"):format(#failures, table.concat(failures, "\n  ")), 0)
end
