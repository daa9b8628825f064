-- PENDING (analysis): a helper that captures a DistArray counts as an
-- unknown read and write of it only when the body calls it directly by its
-- free name (`mix(k, x)`).  Called through a local alias (`local f = mix;
-- f(k, x)`), through pcall (`pcall(mix, k, x)`) or through a field of a
-- captured table (`util.mix(k, x)`), the helper's arrays are not seen at
-- all: each loop below is planned "none", and forward and reverse block
-- orders give different Hist.
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

pending {
  name = "helper_direct_call_rejected", iter = A, iname = "A", body = direct,
  expect = { schedule = "rejected", vectors = { "(NONNEG)" }, reason = "reached by helper mix" },
  reset = reset,
}

local function via_local(i, v)
  local f = mix
  f(v % 5 + 1, i)
end

pending {
  name = "helper_via_local_alias_rejected", iter = A, iname = "A", body = via_local,
  expect = { schedule = "rejected", vectors = { "(NONNEG)" } },
  reset = reset,
}

local function via_pcall(i, v)
  pcall(mix, v % 5 + 1, i)
end

pending {
  name = "helper_via_pcall_rejected", iter = A, iname = "A", body = via_pcall,
  expect = { schedule = "rejected", vectors = { "(NONNEG)" } },
  reset = reset,
}

local util = { mix = mix }
local function via_table(i, v)
  util.mix(v % 5 + 1, i)
end

pending {
  name = "helper_via_table_field_rejected", iter = A, iname = "A", body = via_table,
  expect = { schedule = "rejected", vectors = { "(NONNEG)" } },
  reset = reset,
}

if #failures > 0 then
  error(("%d pending check(s) fail:\n  %s"):format(#failures, table.concat(failures, "\n  ")), 0)
end
