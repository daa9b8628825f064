-- Soundness: a helper that captures a DistArray counts as an unknown read
-- and write of it at every reference, however it is called: directly,
-- through a local alias, through pcall, or through a field of a captured
-- table.
local orion = require "orion"
local G = dofile((os.getenv("ORION_SRCDIR") or ".") .. "/t/analysis/golden.lua")


local MOD = 1000003
local n = 8
local A = orion.zeros { n, type = "i64" }
local Hist = orion.zeros { 5, type = "i64" }
local function reset()
  G.fill(A, function(i) return i * 3 + 1 end)
  G.fill(Hist)
end

local function mix(k, x)
  Hist[k] = (Hist[k] * 3 + x) % MOD
end

-- For reference, the direct call is handled (this one passes).
local function direct(i, v)
  mix(v % 5 + 1, i)
end

G.check {
  name = "helper_direct_call_rejected", iter = A, iname = "A", body = direct,
  expect = { schedule = "rejected", vectors = { "(NONNEG)" }, reason = "reached by helper mix" },
  reset = reset,
}

local function via_local(i, v)
  local f = mix
  f(v % 5 + 1, i)
end

G.check {
  name = "helper_via_local_alias_rejected", iter = A, iname = "A", body = via_local,
  expect = { schedule = "rejected", vectors = { "(NONNEG)" } },
  reset = reset,
}

local function via_pcall(i, v)
  pcall(mix, v % 5 + 1, i)
end

G.check {
  name = "helper_via_pcall_rejected", iter = A, iname = "A", body = via_pcall,
  expect = { schedule = "rejected", vectors = { "(NONNEG)" } },
  reset = reset,
}

local util = { mix = mix }
local function via_table(i, v)
  util.mix(v % 5 + 1, i)
end

G.check {
  name = "helper_via_table_field_rejected", iter = A, iname = "A", body = via_table,
  expect = { schedule = "rejected", vectors = { "(NONNEG)" } },
  reset = reset,
}
