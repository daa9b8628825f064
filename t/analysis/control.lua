-- Control flow inside bodies: nested numeric loops, while and repeat
-- loops, break, early return, and returned values replacing the element.
local orion = require "orion"
local G = dofile((os.getenv("ORION_SRCDIR") or ".") .. "/t/analysis/golden.lua")

local MOD = 1000003
local nr, nc = 6, 5
local A2 = orion.zeros { nr, nc, type = "i64" }
local T2 = orion.zeros { nr, 4, type = "i64" }
local function reset2()
  G.fill(A2, function(i, j) return (i * 7 + j * 3) % 19 + 1 end)
  G.fill(T2, function(i, k) return (i * 5 + k * 3) % 17 end)
end
local function state2() return { G.snap(A2), G.snap(T2) } end

-- Nested loops over columns of row i: (0, NONNEG), blocks on key 1.
local function nested(i, j, v)
  for k = 1, 4 do
    for l = 1, 2 do
      T2[i][k] = (T2[i][k] * 3 + l + v) % MOD
    end
  end
end

G.check {
  name = "nested_loops_1d", iter = A2, iname = "A2", body = nested,
  expect = { schedule = "1d", space = 1, time = false, vectors = { "(0, NONNEG)" },
             place = { A2 = "iterated", T2 = "local" } },
  reset = reset2, state = state2,
}

-- break out of a loop that reads and writes row i.
local function breaks(i, j, v)
  for k = 1, 4 do
    if T2[i][k] > 12 then break end
    T2[i][k] = (T2[i][k] * 7 + v + j) % 17
  end
end

G.check {
  name = "break_1d", iter = A2, iname = "A2", body = breaks,
  expect = { schedule = "1d", space = 1, vectors = { "(0, NONNEG)" }, place = { T2 = "local" } },
  reset = reset2, state = state2,
}

-- 1-D loops.
local n = 12
local A = orion.zeros { n, type = "i64" }
local B = orion.zeros { n, type = "i64" }
local S2 = orion.zeros { n, 4, type = "i64" }
local function reset1()
  G.fill(A, function(i) return (i * 13) % 17 + 1 end)
  G.fill(B, function(i) return (i * 5) % 11 end)
  G.fill(S2, function(i, k) return i + k end)
end
local function state1() return { G.snap(A), G.snap(B), G.snap(S2) } end

-- A while loop over row i of S2: the column k is a reassigned local
-- (unknown), but the row is the iteration's own, and a 1-D loop has no
-- other key: no vector.
local function while_row(i, v)
  local k = 1
  while k <= 4 do
    S2[i][k] = (S2[i][k] * 3 + v + k) % MOD
    k = k + 1
  end
end

G.check {
  name = "while_row_none", iter = A, iname = "A", body = while_row,
  expect = { schedule = "none", space = 1, vectors = {}, place = { S2 = "local" } },
  reset = reset1, state = state1,
}

-- A key alias declared inside a repeat block, seen by its condition.
local function repeat_alias(i, v)
  local x = v
  repeat
    local u = i
    B[u] = (B[u] * 3 + x) % MOD
    x = x // 2
  until x == 0 or u < 0
end

G.check {
  name = "repeat_alias_none", iter = A, iname = "A", body = repeat_alias,
  expect = { schedule = "none", space = 1, vectors = {}, place = { B = "local" } },
  reset = reset1, state = state1,
}

-- A repeat loop over a counter: B[k] is unknown.
local function repeat_counter(i, v)
  local k = 0
  repeat
    k = k + 1
    B[k] = (B[k] * 3 + v) % MOD
  until k >= 3
end

G.check {
  name = "repeat_counter_rejected", iter = A, iname = "A", body = repeat_counter,
  expect = { schedule = "rejected", vectors = { "(NONNEG)" }, reason = "on B: B[k]" },
}

-- Early returns without a value do not write the element.
local function early(i, v)
  if v % 3 == 0 then return end
  if v % 3 == 1 then return nil end
  B[i] = (B[i] * 3 + v) % MOD
end

G.check {
  name = "early_return_none", iter = A, iname = "A", body = early,
  expect = { schedule = "none", space = 1, vectors = {},
             place = { A = "iterated", B = "local" } },
  reset = reset1, state = state1,
}

-- Returned values replace the element, on some paths only.
local function new_value(i, j, v)
  if j == 1 then return end
  if v % 2 == 0 then return v // 2 end
  return (v * 3 + i) % MOD
end

G.check {
  name = "return_new_value_none", iter = A2, iname = "A2", body = new_value,
  expect = { schedule = "none", space = 1, vectors = {}, place = { A2 = "iterated" } },
  reset = reset2, state = state2,
}

-- The returned value depends on the left neighbour, read through the
-- iterated array's upvalue: (0, 1), blocks on key 1, ordered...
local function left_return(i, j, v)
  if j > 1 then return (A2[i][j - 1] * 3 + v) % MOD end
end

G.check {
  name = "return_left_neighbour_ordered_1d", iter = A2, iname = "A2", body = left_return,
  opts = { ordered = true },
  expect = { schedule = "1d", space = 1, time = false, vectors = { "(0, 1)" },
             place = { A2 = "iterated" } },
  reset = reset2, state = state2,
}

-- ... and unordered.
G.check {
  name = "return_left_neighbour_unordered_1d", iter = A2, iname = "A2", body = left_return,
  expect = { schedule = "1d", space = 1, time = false, vectors = { "(0, 1)" } },
  reset = reset2, state = state2,
}

-- The previous element of the iterated 1-D array, read through its upvalue
-- and replaced by the return value: a serial recurrence.
local function prefix(i, v)
  if i > 1 then return (A[i - 1] * 3 + v) % MOD end
end

G.check {
  name = "return_prefix_1d_rejected", iter = A, iname = "A", body = prefix,
  opts = { ordered = true },
  expect = { schedule = "rejected", vectors = { "(1)" },
             reason = "on A: A[i - 1]" },
}
