-- Recurrences: a 1-D recurrence is inherently serial (rejected); the 2-D
-- wavefront runs ordered; the skewed recurrence needs a skew that Orion
-- lacked; c - key is unknown, never a distance.
local orion = require "orion"
local G = dofile((os.getenv("ORION_SRCDIR") or ".") .. "/t/analysis/golden.lua")

local n, m = 12, 10
local A1 = orion.zeros { n }
local x = 3

local function rec1(i)
  if i > 1 then A1[i] = A1[i - 1] + x end
end

G.check {
  name = "recurrence_1d", iter = A1, iname = "A1", body = rec1,
  opts = { ordered = true },
  expect = { schedule = "rejected", vectors = { "(1)" }, reason = "A1[i - 1]" },
  reset = function() G.fill(A1, function(i) return i end) end,
}

local A = orion.zeros { n, m }
local function reset2() G.fill(A, function(i, j) return (i * 3 + j * 5) % 7 + 1 end) end

-- Each element becomes a function of its upper and left neighbours: order
-- sensitive, so a wrong wavefront would change the values.
local function wave(i, j)
  if i > 1 and j > 1 then
    A[i][j] = (A[i - 1][j] * 3 + A[i][j - 1] * 5 + A[i][j]) % 1000003
  end
end

G.check {
  name = "wavefront_2d", iter = A, iname = "A", body = wave,
  opts = { ordered = true },
  expect = { schedule = "2d-ordered", vectors = { "(1, 0)", "(0, 1)" },
             place = { A = "iterated" } },
  reset = reset2,
  state = function() return G.snap(A) end,
}

local function skewed(i, j)
  if i > 1 and j > 1 and j < m then
    A[i][j] = (A[i - 1][j + 1] * 3 + A[i][j - 1] * 7 + A[i][j]) % 1000003
  end
end

G.check {
  name = "skewed_2d", iter = A, iname = "A", body = skewed,
  opts = { ordered = true },
  expect = { schedule = "2d-skewed", vectors = { "(1, -1)", "(0, 1)" } },
  reset = reset2,
  state = function() return G.snap(A) end,
}

-- Unordered, the same recurrence still needs the skew for concurrent
-- blocks to be independent.
G.check {
  name = "skewed_2d_unordered", iter = A, iname = "A", body = skewed,
  expect = { schedule = "2d-skewed", vectors = { "(1, -1)", "(0, 1)" } },
  reset = reset2,
  state = function() return G.snap(A) end,
}

local c = n + 1
local function reverse(i)
  A1[i] = A1[c - i] + 1
end

G.check {
  name = "c_minus_key", iter = A1, iname = "A1", body = reverse,
  expect = { schedule = "rejected", vectors = { "(NONNEG)" }, reason = "A1[c - i]" },
}
