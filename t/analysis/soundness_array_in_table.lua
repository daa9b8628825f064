-- Soundness: a DistArray held in a captured table (cfg.B) is reached by
-- every reference to the table, so it counts as read and written at
-- unknown keys; the analysis must not plan "none" for it.
local orion = require "orion"
local G = dofile((os.getenv("ORION_SRCDIR") or ".") .. "/t/analysis/golden.lua")


local MOD = 1000003
local n = 8
local A = orion.zeros { n, type = "i64" }
local B = orion.zeros { n, type = "i64" }
local cfg = { B = B }

-- B[1] read and written by every iteration: (NONNEG), rejected.
local function through_table(i, v)
  cfg.B[1] = (cfg.B[1] * 3 + v) % MOD
end

G.check {
  name = "array_in_captured_table_rejected", iter = A, iname = "A", body = through_table,
  expect = { schedule = "rejected", vectors = { "(NONNEG)" } },
  reset = function()
    G.fill(A, function(i) return i * 3 + 1 end)
    G.fill(B, function(i) return i end)
  end,
}
