-- PENDING (analysis): a DistArray reached through a captured plain table
-- (cfg.B) is bound by reference on the executor (docs/lua-api.md, "Inside
-- a loop body"), but the analysis resolves `cfg` as a plain value and
-- records no access at all: the loop below is planned "none" and two
-- blocks race on B[1] (forward and reverse block orders give different B).
-- Sound: an access the analysis cannot name must count as an unknown read
-- and write of the array.
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
local cfg = { B = B }

-- B[1] read and written by every iteration: (NONNEG), rejected.
local function through_table(i, v)
  cfg.B[1] = (cfg.B[1] * 3 + v) % MOD
end

pending {
  name = "array_in_captured_table_rejected", iter = A, iname = "A", body = through_table,
  expect = { schedule = "rejected", vectors = { "(NONNEG)" } },
  reset = function()
    G.fill(A, function(i) return i * 3 + 1 end)
    G.fill(B, function(i) return i end)
  end,
}

if #failures > 0 then
  error(("%d pending check(s) fail:\n  %s"):format(#failures, table.concat(failures, "\n  ")), 0)
end
