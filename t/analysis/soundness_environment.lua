-- Soundness: the body's global environment (issue 33, class 2).  _ENV.G
-- and _ENV["G"] are the global G, which the executors receive because the
-- body's bytecode reads it by name, so their accesses count as G's; any
-- other use of _ENV or _G (rawget, rawset, load with an environment, a
-- local holding it) could reach or change any global unseen, and refuses
-- the loop.
local orion = require "orion"
local G = dofile((os.getenv("ORION_SRCDIR") or ".") .. "/t/analysis/golden.lua")

local MOD = 1000003
local n = 12
local A = orion.zeros { n, type = "i64" }
-- Globals on purpose: the bodies reach them through _ENV.
ENV_W = orion.zeros { n, type = "i64" }
ENV_OFF = 0
local function reset()
  G.fill(A, function(i) return i * 7 % 11 end)
  G.fill(ENV_W, function(i) return i end)
end
local function state() return G.snap(ENV_W) end

-- A recurrence through _ENV.ENV_W: each element folds in the one before.
local function env_recurrence(i, v)
  if i > 1 then _ENV.ENV_W[i] = (_ENV["ENV_W"][i - 1] * 3 + v) % MOD end
end

G.check {
  name = "env_field_recurrence_rejected", iter = A, iname = "A",
  body = env_recurrence,
  expect = { schedule = "rejected", vectors = { "(1)" }, reason = "on ENV_W" },
  reset = reset,
}

-- Each element only its own: placed with the keys, and runs.
local function env_own(i, v)
  _ENV.ENV_W[i] = (_ENV.ENV_W[i] * 3 + v) % MOD
end

G.check {
  name = "env_field_own_element", iter = A, iname = "A", body = env_own,
  expect = { schedule = "none", vectors = {}, place = { ENV_W = "local" } },
  reset = reset, state = state,
}

local function env_rawset(i, v)
  if i == 1 then rawset(_ENV, "ENV_OFF", 1) end
  ENV_W[i + ENV_OFF] = v
end

G.check {
  name = "rawset_env_rejected", iter = A, iname = "A", body = env_rawset,
  expect = { schedule = "rejected",
             reason = "_ENV at line 46 (in rawset(_ENV, \"ENV_OFF\", 1)): the body uses its global environment as a value" },
  reset = reset,
}

local function env_rawget(i, v)
  local w = rawget(_ENV, "ENV_W")
  if i > 1 then w[i] = (w[i - 1] * 3 + v) % MOD end
end

G.check {
  name = "rawget_env_rejected", iter = A, iname = "A", body = env_rawget,
  expect = { schedule = "rejected", reason = "_ENV at line 58 (in rawget(_ENV, \"ENV_W\"))" },
  reset = reset,
}

local function env_load(i, v)
  local f = load("local i, v = ... ENV_W[i] = (ENV_W[i - 1] * 3 + v) % 1000003",
    "chunk", "t", _ENV)
  if i > 1 then f(i, v) end
end

G.check {
  name = "load_with_env_rejected", iter = A, iname = "A", body = env_load,
  expect = { schedule = "rejected", reason = "_ENV at line 70" },
  reset = reset,
}

local function g_as_value(i, v)
  local g = _G
  if i > 1 then g.ENV_W[i] = (g.ENV_W[i - 1] * 3 + v) % MOD end
end

G.check {
  name = "g_in_a_local_rejected", iter = A, iname = "A", body = g_as_value,
  expect = { schedule = "rejected", reason = "_G at line 81: the body uses its global environment as a value" },
  reset = reset,
}
