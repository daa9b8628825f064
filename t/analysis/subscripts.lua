-- Subscript classes: key + c (c a literal, a captured integer, a global
-- number, or a constant expression of those), constants, and unknown
-- subscripts (2 * key, idx[key], a non-integral float).
local orion = require "orion"
local G = dofile((os.getenv("ORION_SRCDIR") or ".") .. "/t/analysis/golden.lua")

local MOD = 1000003
local n = 16
local A = orion.zeros { n, type = "i64" }
local B = orion.zeros { 2 * n + 4, type = "i64" }
local C = orion.zeros { n, type = "i64" }
local S = orion.zeros { 4, type = "i64" }
local function reset1()
  G.fill(A, function(i) return (i * 13) % 17 + 1 end)
  G.fill(B, function(i) return (i * 5) % 11 end)
  G.fill(C, function(i) return i end)
  G.fill(S, function(i) return i * 10 end)
end
local function state1() return { G.snap(A), G.snap(B), G.snap(C), G.snap(S) } end

-- 2 * i is not key + c: unknown, so the read and the write of B may meet.
local function twice(i, v)
  B[2 * i] = (B[2 * i] * 3 + v) % MOD
end

G.check {
  name = "twice_key_rejected", iter = A, iname = "A", body = twice,
  expect = { schedule = "rejected", vectors = { "(NONNEG)" }, reason = "B[2 * i]" },
}

-- Indirect subscripts through a captured table.
local idx = {}
for i = 1, n do idx[i] = (i * 7) % n + 1 end

local function indirect(i, v)
  B[idx[i]] = (B[idx[i]] * 3 + v) % MOD
end

G.check {
  name = "indirect_table_rejected", iter = A, iname = "A", body = indirect,
  expect = { schedule = "rejected", vectors = { "(NONNEG)" }, reason = "B[idx[i]]" },
}

-- Indirect through a DistArray: Perm[i] is a read at key i, B[Perm[i]] is
-- unknown.
local Perm = orion.zeros { n, type = "i64" }
G.fill(Perm, function(i) return (i * 5) % n + 1 end)
local function indirect_array(i, v)
  B[Perm[i]] = (B[Perm[i]] * 3 + v) % MOD
end

G.check {
  name = "indirect_distarray_rejected", iter = A, iname = "A", body = indirect_array,
  expect = { schedule = "rejected", vectors = { "(NONNEG)" }, reason = "on B: B[Perm[i]]" },
}

-- Indirect reads only: no dependence.
local function gather(i, v)
  C[i] = (B[idx[i]] * 3 + v + C[i]) % MOD
end

G.check {
  name = "indirect_read_only_none", iter = A, iname = "A", body = gather,
  expect = { schedule = "none", space = 1, vectors = {},
             place = { B = "server (read-only)", C = "local" } },
  reset = reset1, state = state1,
}

-- Different constants never meet: S[1] is read, S[2] written.
local function consts(i, v)
  S[2] = S[1] * 2 + 1
  C[i] = (v * 3 + S[1] + C[i]) % MOD
end

G.check {
  name = "const_subscripts_distinct_none", iter = A, iname = "A", body = consts,
  expect = { schedule = "none", space = 1, vectors = {},
             place = { S = "server (read-write)", C = "local" } },
  reset = reset1, state = state1,
}

-- The same constant read and written by every iteration.
local function same_const(i, v)
  S[1] = (S[1] * 3 + v) % MOD
end

G.check {
  name = "const_subscript_same_rejected", iter = A, iname = "A", body = same_const,
  expect = { schedule = "rejected", vectors = { "(NONNEG)" }, reason = "on S: S[1]" },
}

-- A non-integral captured float in a subscript expression: unknown (here
-- i + half * 2 is an integral value at run time, but not key + c).
local half = 0.5
local function float_sub(i, v)
  B[i + half * 2] = (B[i + half * 2] * 3 + v) % MOD
end

G.check {
  name = "float_upvalue_subscript_rejected", iter = A, iname = "A", body = float_sub,
  expect = { schedule = "rejected", vectors = { "(NONNEG)" }, reason = "on B" },
}

-- An integral float (a captured 2.0) is the integer 2: Lua indexes B[3.0]
-- as B[3], so B[i + two] and B[i + 2] are one element.
local two = 2.0
local function float_integral(i, v)
  B[i + two] = (B[i + 2] * 3 + v) % MOD
end

G.check {
  name = "integral_float_offset_none", iter = A, iname = "A", body = float_integral,
  expect = { schedule = "none", space = 1, vectors = {},
             place = { B = "server (read-write)" } },
  reset = reset1, state = state1,
}

-- A constant expression of a captured integer: i + K2 - 1 and
-- i + (K2 - 1) are both key + 2, the same element.
local K2 = 3
local function const_expr(i, v)
  B[i + (K2 - 1)] = (B[i + K2 - 1] * 3 + v) % MOD
end

G.check {
  name = "const_expr_offset_none", iter = A, iname = "A", body = const_expr,
  expect = { schedule = "none", space = 1, vectors = {},
             place = { B = "server (read-write)" } },
  reset = reset1, state = state1,
}

-- 2-D loops.
local nr, nc = 6, 5
local off = 2
local A2 = orion.zeros { nr, nc, type = "i64" }
local C2 = orion.zeros { nr + off, nc, type = "i64" }
local R2 = orion.zeros { nr, 3, type = "i64" }
local function reset2()
  G.fill(A2, function(i, j) return (i * 7 + j * 3) % 19 + 1 end)
  G.fill(C2, function(i, j) return (i * 5 + j * 2) % 13 end)
  G.fill(R2, function(i, j) return i * 3 + j end)
end
local function state2() return { G.snap(A2), G.snap(C2), G.snap(R2) } end

-- A constant column of the row: (0, NONNEG), blocks on key 1; ordered.
local function const_column(i, j, v)
  R2[i][1] = (R2[i][1] * 3 + v) % MOD
end

G.check {
  name = "const_column_ordered_1d", iter = A2, iname = "A2", body = const_column,
  opts = { ordered = true },
  expect = { schedule = "1d", space = 1, time = false, vectors = { "(0, NONNEG)" },
             place = { R2 = "local" } },
  reset = reset2, state = state2,
}

-- A captured offset (local off = 2): C2[i + off][j] is two rows below,
-- vector (2, 0), blocks on key 2; C2 follows key 2 in its second dimension.
local function shifted(i, j, v)
  C2[i][j] = (C2[i + off][j] * 3 + v) % MOD
end

G.check {
  name = "captured_offset_1d_key2", iter = A2, iname = "A2", body = shifted,
  expect = { schedule = "1d", space = 2, time = false, vectors = { "(2, 0)" },
             place = { A2 = "iterated", C2 = "local" } },
  reset = reset2, state = state2,
}

-- A global number as the offset, while iterating the same array through an
-- upvalue: A2[i][j - GOFF] is the left neighbour, vector (0, 1); ordered,
-- blocks on key 1.
GOFF = 1
local function left_global(i, j)
  if j > GOFF then A2[i][j] = (A2[i][j - GOFF] * 3 + A2[i][j]) % MOD end
end

G.check {
  name = "global_offset_ordered_1d", iter = A2, iname = "A2", body = left_global,
  opts = { ordered = true },
  expect = { schedule = "1d", space = 1, time = false, vectors = { "(0, 1)" },
             place = { A2 = "iterated" } },
  reset = reset2, state = state2,
}
