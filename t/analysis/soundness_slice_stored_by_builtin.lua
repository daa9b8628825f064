-- Soundness: a slice handed to a builtin that may store it (table.insert,
-- rawset) may be used by a later iteration: all its subscripts are
-- unknown.
local orion = require "orion"
local G = dofile((os.getenv("ORION_SRCDIR") or ".") .. "/t/analysis/golden.lua")


local MOD = 1000003
local nr, nc = 6, 5
local A2 = orion.zeros { nr, nc, type = "i64" }
local W = orion.zeros { nr, 3, type = "i64" }
local function reset()
  G.fill(A2, function(i, j) return i * 3 + j end)
  G.fill(W, function(i, k) return i + k end)
end
local stash = {}

-- For reference, the plain store is handled (this one passes).
local function stored(i, j, v)
  local prev = stash[1]
  if prev then prev[1] = (prev[1] * 3 + v) % MOD end
  stash[1] = W[i]
end

G.check {
  name = "slice_stored_in_table_rejected", iter = A2, iname = "A2", body = stored,
  expect = { schedule = "rejected", vectors = { "(NONNEG, ANY)" }, reason = "on W" },
  reset = reset,
}

local function inserted(i, j, v)
  local prev = stash[#stash]
  if prev then prev[1] = (prev[1] * 3 + v) % MOD end
  table.insert(stash, W[i])
end

G.check {
  name = "slice_stored_by_table_insert_rejected", iter = A2, iname = "A2", body = inserted,
  expect = { schedule = "rejected", vectors = { "(NONNEG, ANY)" }, reason = "on W" },
  reset = reset,
}

local function raw_stored(i, j, v)
  local prev = rawget(stash, 1)
  if prev then prev[1] = (prev[1] * 3 + v) % MOD end
  rawset(stash, 1, W[i])
end

G.check {
  name = "slice_stored_by_rawset_rejected", iter = A2, iname = "A2", body = raw_stored,
  expect = { schedule = "rejected", vectors = { "(NONNEG, ANY)" }, reason = "on W" },
  reset = reset,
}
