-- Soundness: an upvalue the body assigns is not a constant (the executor's
-- copy changes between iterations), so subscripts built from it are
-- unknown.
local orion = require "orion"
local G = dofile((os.getenv("ORION_SRCDIR") or ".") .. "/t/analysis/golden.lua")


local MOD = 1000003
local n = 8
local A = orion.zeros { n, type = "i64" }
local B = orion.zeros { n + 1, type = "i64" }

local shift = 0
local function drift(i, v)
  B[i + shift] = (B[i + shift] * 3 + v) % MOD
  shift = 1 - shift
end

G.check {
  name = "upvalue_reassigned_in_body_rejected", iter = A, iname = "A", body = drift,
  expect = { schedule = "rejected", vectors = { "(NONNEG)" }, reason = "on B" },
  reset = function()
    G.fill(A, function(i) return i * 3 + 1 end)
    G.fill(B, function(i) return i end)
  end,
}
