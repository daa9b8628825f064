-- Soundness: a closure created in the body that escapes (stored in a
-- captured table and called by a later iteration) sees another iteration's
-- keys: inside it, the enclosing locals and keys count as unknown.
local orion = require "orion"
local G = dofile((os.getenv("ORION_SRCDIR") or ".") .. "/t/analysis/golden.lua")


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

G.check {
  name = "closure_escapes_iteration_rejected", iter = A, iname = "A", body = deferred,
  expect = { schedule = "rejected", vectors = { "(NONNEG)" }, reason = "on B" },
  reset = function()
    G.fill(A, function(i) return i * 3 + 1 end)
    G.fill(B, function(i) return i end)
  end,
}
