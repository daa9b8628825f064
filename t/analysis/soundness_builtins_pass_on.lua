-- Soundness: builtins that give an argument back (issue 33, class 5).
-- error's value comes back from pcall, table.unpack gives the rows of a
-- 2-D array, ipairs over a 2-D array gives its rows, and any iterator that
-- is not a standard one is given the array itself: writes through what
-- they give back are writes of the array.  A builtin counts by what it is,
-- not by the name the script gives it.
local orion = require "orion"
local G = dofile((os.getenv("ORION_SRCDIR") or ".") .. "/t/analysis/golden.lua")

local MOD = 1000003
local n = 8
local A = orion.zeros { n, type = "i64" }
local S2 = orion.zeros { n, 4, type = "i64" }
local T = orion.zeros { n, type = "i64" }
local function reset()
  G.fill(A, function(i) return i * 5 % 7 end)
  G.fill(S2, function(i, k) return i + k end)
  G.fill(T, function() return 0 end)
end

local function raised(i, v)
  local ok, row = pcall(function() error(S2[1]) end)
  row[1] = (row[1] * 3 + v) % MOD
end

G.check {
  name = "slice_raised_by_error_rejected", iter = A, iname = "A", body = raised,
  expect = { schedule = "rejected", vectors = { "(NONNEG)" }, reason = "on S2" },
  reset = reset,
}

local function unpacked(i, v)
  local row = table.unpack(S2, 1, 1)
  row[1] = (row[1] * 3 + v) % MOD
end

G.check {
  name = "row_from_table_unpack_rejected", iter = A, iname = "A", body = unpacked,
  expect = { schedule = "rejected", vectors = { "(NONNEG)" }, reason = "on S2" },
  reset = reset,
}

do
  -- `type` here is table.unpack: what it is counts, not its name.
  local type = table.unpack
  local function renamed(i, v)
    local row = type(S2, 1, 1)
    row[1] = (row[1] * 3 + v) % MOD
  end

  G.check {
    name = "renamed_table_unpack_rejected", iter = A, iname = "A", body = renamed,
    expect = { schedule = "rejected", vectors = { "(NONNEG)" }, reason = "on S2" },
    reset = reset,
  }
end

local function rows_of_ipairs(i, v)
  for k, row in ipairs(S2) do
    row[1] = (row[1] * 3 + v) % MOD
    if k == 1 then break end
  end
end

G.check {
  name = "rows_from_ipairs_rejected", iter = A, iname = "A", body = rows_of_ipairs,
  expect = { schedule = "rejected", vectors = { "(NONNEG)" }, reason = "on S2" },
  reset = reset,
}

local function first_row(s, k)
  if k < 1 then return k + 1, s[k + 1] end
end

local function own_iterator(i, v)
  for k, row in first_row, S2, 0 do
    row[1] = (row[1] * 3 + v) % MOD
  end
end

G.check {
  name = "array_given_to_an_iterator_rejected", iter = A, iname = "A",
  body = own_iterator,
  expect = { schedule = "rejected", vectors = { "(NONNEG)" }, reason = "on S2" },
  reset = reset,
}

-- ipairs over one row gives numbers: the row is only read.  (It stops at
-- the row's end itself: reading past it raises, it does not give nil.)
local function row_sum(i, v)
  local s = 0
  for k, x in ipairs(S2[i]) do
    s = s + x
    if k == 4 then break end
  end
  T[i] = s * v % MOD
end

G.check {
  name = "ipairs_over_a_row_reads_it", iter = A, iname = "A", body = row_sum,
  expect = { schedule = "none", vectors = {}, place = { S2 = "local", T = "local" } },
  reset = reset, state = function() return G.snap(T) end,
}

-- What a builtin gives back, or an and/or yields, goes where the call's
-- value goes: stored in a table, the slice may be used by a later
-- iteration, so all its subscripts are unknown.
local stash = {}

local function stored_select(i, v)
  local prev = stash[1]
  if prev then prev[1] = (prev[1] * 3 + v) % MOD end
  stash[1] = select(1, S2[i])
end

G.check {
  name = "slice_stored_through_select_rejected", iter = A, iname = "A",
  body = stored_select,
  expect = { schedule = "rejected", vectors = { "(NONNEG)" }, reason = "on S2" },
  reset = reset,
}

local function stored_and_or(i, v)
  local prev = stash[1]
  if prev then prev[1] = (prev[1] * 3 + v) % MOD end
  stash[1] = v >= 0 and S2[i] or nil
end

G.check {
  name = "slice_stored_through_and_or_rejected", iter = A, iname = "A",
  body = stored_and_or,
  expect = { schedule = "rejected", vectors = { "(NONNEG)" }, reason = "on S2" },
  reset = reset,
}
