-- Ordered loops and their unordered variants; write-write conflicts (a
-- dependence only when ordered); 3-D dense loops; 2-D state on both keys.
local orion = require "orion"
local G = dofile((os.getenv("ORION_SRCDIR") or ".") .. "/t/analysis/golden.lua")

local MOD = 1000003
local nr, nc = 6, 5
local M2 = orion.zeros { nr, nc, type = "i64" }
local Last = orion.zeros { nr, type = "i64" }
local function reset2()
  G.fill(M2, function(i, j) return (i * 7 + j * 3) % 19 + 1 end)
  G.fill(Last, function(i) return -i end)
end
local function state2() return { G.snap(M2), G.snap(Last) } end

-- A[i][j] = A[i][j-1] + 1: vector (0, 1), blocks on key 1.
local function row_scan(i, j)
  if j > 1 then M2[i][j] = M2[i][j - 1] + 1 end
end

G.check {
  name = "row_scan_ordered_1d", iter = M2, iname = "M2", body = row_scan,
  opts = { ordered = true },
  expect = { schedule = "1d", space = 1, time = false, vectors = { "(0, 1)" },
             place = { M2 = "iterated" } },
  reset = reset2, state = state2,
}

-- Every iteration updates Last[1]: no schedule with key 2 on space (nor
-- any other) is feasible, and the refusal says what was requested.
local function total(i, j, v)
  Last[1] = Last[1] + v
end
G.check {
  name = "space_2_requested_rejected", iter = M2, iname = "M2", body = total,
  opts = { space = 2 },
  expect = { schedule = "rejected",
             reason = "space = 2 was requested and no feasible schedule puts key 2 on the space dimension" },
}

G.check {
  name = "row_scan_unordered_1d", iter = M2, iname = "M2", body = row_scan,
  expect = { schedule = "1d", space = 1, time = false, vectors = { "(0, 1)" } },
  reset = reset2, state = state2,
}

-- The column recurrence: vector (1, 0), blocks on key 2 (cheaper and
-- simpler than a wavefront).
local function column_scan(i, j)
  if i > 1 then M2[i][j] = (M2[i - 1][j] * 3 + M2[i][j]) % MOD end
end

G.check {
  name = "column_scan_ordered_1d_key2", iter = M2, iname = "M2", body = column_scan,
  opts = { ordered = true },
  expect = { schedule = "1d", space = 2, time = false, vectors = { "(1, 0)" } },
  reset = reset2, state = state2,
}

G.check {
  name = "column_scan_unordered_1d_key2", iter = M2, iname = "M2", body = column_scan,
  expect = { schedule = "1d", space = 2, time = false, vectors = { "(1, 0)" } },
  reset = reset2, state = state2,
}

-- Write-write only: Last[i] is written by every j of row i and never read.
-- Ordered, the last write must be the serial one: (0, NONNEG).
local function last_of_row(i, j, v)
  Last[i] = (j * 7 + v) % MOD
end

G.check {
  name = "write_write_ordered_1d", iter = M2, iname = "M2", body = last_of_row,
  opts = { ordered = true },
  expect = { schedule = "1d", space = 1, time = false, vectors = { "(0, NONNEG)" },
             place = { Last = "local" } },
  reset = reset2, state = state2,
}

-- Unordered, write-write pairs are no dependence.
G.check {
  name = "write_write_unordered_none", iter = M2, iname = "M2", body = last_of_row,
  expect = { schedule = "none", space = 1, vectors = {}, place = { Last = "local" } },
  reset = reset2, state = state2,
}

-- One constant element written by every iteration.
local n = 12
local A = orion.zeros { n, type = "i64" }
local Flag = orion.zeros { 3, type = "i64" }
local function reset1()
  G.fill(A, function(i) return (i * 13) % 17 + 1 end)
  G.fill(Flag)
end
local function state1() return { G.snap(A), G.snap(Flag) } end

local function last_key(i, v)
  Flag[1] = i
end

G.check {
  name = "write_write_const_ordered_rejected", iter = A, iname = "A", body = last_key,
  opts = { ordered = true },
  expect = { schedule = "rejected", vectors = { "(NONNEG)" }, reason = "on Flag: Flag[1]" },
}

-- Unordered and writing the same value: fine in any order.
local function mark(i, v)
  Flag[1] = 1
  Flag[2] = 7
end

G.check {
  name = "write_write_const_unordered_none", iter = A, iname = "A", body = mark,
  expect = { schedule = "none", space = 1, vectors = {},
             place = { Flag = "server (read-write)" } },
  reset = reset1, state = state1,
  -- Every order writes the same values: the serial run's (a block that
  -- wrote Flag[1] once lost it: constant subscripts are 1-based).
  verify = function(st, serial)
    for k = 1, 3 do
      assert(st[2][k] == serial[2][k], ("Flag[%d] is %s, serially %s"):format(
        k, tostring(st[2][k]), tostring(serial[2][k])))
    end
  end,
}

-- 3-D dense loops.
local T3 = orion.zeros { 4, 3, 5, type = "i64" }
local function reset3() G.fill(T3, function(i, j, k) return (i * 5 + j * 7 + k * 3) % 23 + 1 end) end
local function state3() return G.snap(T3) end

-- A plane recurrence along key 1: (1, 0, 0); 1-D on key 2 is the first of
-- the cheapest, simplest schedules.
local function plane(i, j, k, v)
  if i > 1 then T3[i][j][k] = (T3[i - 1][j][k] * 3 + v) % MOD end
end

G.check {
  name = "3d_plane_unordered_1d_key2", iter = T3, iname = "T3", body = plane,
  expect = { schedule = "1d", space = 2, time = false, vectors = { "(1, 0, 0)" },
             place = { T3 = "iterated" } },
  reset = reset3, state = state3,
}

G.check {
  name = "3d_plane_ordered_1d_key2", iter = T3, iname = "T3", body = plane,
  opts = { ordered = true },
  expect = { schedule = "1d", space = 2, time = false, vectors = { "(1, 0, 0)" } },
  reset = reset3, state = state3,
}

-- The innermost key: (0, 0, 1), blocks on key 1.
local function innermost(i, j, k)
  if k > 1 then T3[i][j][k] = (T3[i][j][k - 1] * 2 + T3[i][j][k]) % MOD end
end

G.check {
  name = "3d_innermost_ordered_1d", iter = T3, iname = "T3", body = innermost,
  opts = { ordered = true },
  expect = { schedule = "1d", space = 1, time = false, vectors = { "(0, 0, 1)" } },
  reset = reset3, state = state3,
}

-- Three recurrences in one 3-D body: reads at (0, -1, 0), (0, 0, -1) and
-- (-1, 0, +1) from the write give (0, 1, 0), (0, 0, 1) and (1, 0, -1).
-- Every key is non-zero in some vector (no 1-D schedule); space key 1 /
-- time key 2 is the first pair where no vector is non-zero in both, and
-- all its components are >= 0 (a wavefront when ordered).
local function diag(i, j, k)
  local x = T3[i][j][k]
  if j > 1 then x = x + T3[i][j - 1][k] end
  if k > 1 then x = x + 2 * T3[i][j][k - 1] end
  if i > 1 and k < 5 then x = x + 3 * T3[i - 1][j][k + 1] end
  T3[i][j][k] = x % MOD
end

G.check {
  name = "3d_three_recurrences_2d_ordered", iter = T3, iname = "T3", body = diag,
  opts = { ordered = true },
  expect = { schedule = "2d-ordered", space = 1, time = 2,
             vectors = { "(0, 1, 0)", "(0, 0, 1)", "(1, 0, -1)" } },
  reset = reset3, state = state3,
}

-- Unordered, rotation on keys 1 and 2 is enough as well.
G.check {
  name = "3d_three_recurrences_2d", iter = T3, iname = "T3", body = diag,
  expect = { schedule = "2d", space = 1, time = 2,
             vectors = { "(0, 1, 0)", "(0, 0, 1)", "(1, 0, -1)" } },
  reset = reset3, state = state3,
}

-- State per row and per column of a dense 2-D loop: (0, NONNEG) and
-- (NONNEG, 0); the smaller column state rotates.
local RS = orion.zeros { nr, type = "i64" }
local CS = orion.zeros { nc, type = "i64" }
local function resetrc()
  reset2()
  G.fill(RS, function(i) return i * 3 end)
  G.fill(CS, function(j) return j * 5 end)
end
local function staterc() return { G.snap(RS), G.snap(CS) } end
local function row_col(i, j, v)
  RS[i] = (RS[i] * 3 + v + j) % MOD
  CS[j] = (CS[j] * 5 + v + i) % MOD
end

G.check {
  name = "dense_row_col_state_2d", iter = M2, iname = "M2", body = row_col,
  expect = { schedule = "2d", space = 1, time = 2,
             vectors = { "(0, NONNEG)", "(NONNEG, 0)" },
             place = { RS = "local", CS = "rotating" } },
  reset = resetrc, state = staterc,
}

G.check {
  name = "dense_row_col_state_2d_ordered", iter = M2, iname = "M2", body = row_col,
  opts = { ordered = true },
  expect = { schedule = "2d-ordered", space = 1, time = 2,
             vectors = { "(0, NONNEG)", "(NONNEG, 0)" },
             place = { RS = "local", CS = "rotating" } },
  reset = resetrc, state = staterc,
}

-- opts.space names a key of the iterated array.
do
  local ok, err = pcall(orion.parallel_for, M2, row_scan, { space = 3 })
  assert(not ok and tostring(err):find("parallel_for: space must be a key of the iterated array, 1..2, not 3", 1, true),
    tostring(err))
  print("golden ok: space_out_of_range")
end

-- Write-only at reversed keys (issue 33): c - key is a bijection of the
-- key, so two iterations never write one element and the ordered loop
-- needs no order at all.  Rev is written at (nr + 1 - i, nc + 1 - j) and
-- Flip at (j, off - i) with off a captured constant.
local Rev = orion.zeros { nr, nc, type = "i64" }
local Flip = orion.zeros { nc, nr + 2, type = "i64" }
local off = nr + 3
local function reset_rev()
  reset2()
  G.fill(Rev)
  G.fill(Flip)
end
local function state_rev() return { G.snap(Rev), G.snap(Flip) } end
local function reverse(i, j, v)
  Rev[nr + 1 - i][nc + 1 - j] = (v * 5 + i) % MOD
  local k = off - i
  Flip[j][k] = v - j
end

G.check {
  name = "reversed_write_only_ordered_none", iter = M2, iname = "M2", body = reverse,
  opts = { ordered = true },
  expect = { schedule = "none", vectors = {} },
  reset = reset_rev, state = state_rev,
}

-- Two reversals of one key a fixed distance apart: (1, 0), as i + c would.
local function two_reversals(i, j, v)
  Rev[nr + 1 - i][j] = v
  if i > 1 then Rev[nr + 2 - i][j] = -v end
end

G.check {
  name = "reversed_writes_distance_1d_key2", iter = M2, iname = "M2", body = two_reversals,
  opts = { ordered = true },
  expect = { schedule = "1d", space = 2, vectors = { "(1, 0)" } },
  reset = reset_rev, state = state_rev,
}

-- A read of A[i] against a write at c - i is a dependence at no fixed
-- distance; the hint offers no buffer (issue 33).
local function swap_halves(i, v)
  A[n + 1 - i] = A[i] + 1
end

G.check {
  name = "reversed_against_key_rejected", iter = A, iname = "A", body = swap_halves,
  expect = { schedule = "rejected", vectors = { "(NONNEG)" },
             reason = "at a distance the analysis cannot know" },
}
