-- Calls: helpers that receive slices or whole arrays, pure builtins,
-- helpers that capture arrays or buffers themselves, closures defined in
-- the body, method calls on array data, multiple assignment.
local orion = require "orion"
local G = dofile((os.getenv("ORION_SRCDIR") or ".") .. "/t/analysis/golden.lua")

local MOD = 1000003
local nr, nc = 6, 5
local A2 = orion.zeros { nr, nc, type = "i64" }
local R2 = orion.zeros { nr, 4, type = "i64" }
local C2 = orion.zeros { nr, nc, type = "i64" }
local Cnt = orion.zeros { 4, type = "i64" }
local function reset()
  G.fill(A2, function(i, j) return (i * 7 + j * 3) % 19 + 1 end)
  G.fill(R2, function(i, k) return (i * 5 + k * 2) % 13 end)
  G.fill(C2, function(i, j) return (i + j * 11) % 29 end)
  G.fill(Cnt)
end
local function state() return { G.snap(A2), G.snap(R2), G.snap(C2), G.snap(Cnt) } end

-- A helper that receives row i of R2 may touch any element of it, but only
-- of row i: (0, NONNEG), blocks on key 1.
local function scale_row(row, x)
  for k = 1, #row do row[k] = (row[k] * 3 + x) % MOD end
end
local function helper_row(i, j, v)
  scale_row(R2[i], v + j)
end

G.check {
  name = "helper_slice_row_1d", iter = A2, iname = "A2", body = helper_row,
  expect = { schedule = "1d", space = 1, time = false, vectors = { "(0, NONNEG)" },
             place = { R2 = "local" } },
  reset = reset, state = state,
}

-- A helper that receives a whole array: any element.
local function touch(arr, k)
  arr[k] = arr[k] + 1
end
local function helper_whole(i, j, v)
  touch(Cnt, v % 4 + 1)
end

G.check {
  name = "helper_whole_array_rejected", iter = A2, iname = "A2", body = helper_whole,
  expect = { schedule = "rejected", vectors = { "(NONNEG, ANY)" }, reason = "passed to touch" },
}

-- Pure builtins only read what they are given (type, print, math.max).
local function pure(i, j, v)
  if type(R2[i]) ~= "userdata" then print("unexpected", R2[i], math.max(R2[i][1], v)) end
  C2[i][j] = (math.max(R2[i][j % 4 + 1], v) * 3 + C2[i][j]) % MOD
end

G.check {
  name = "pure_builtins_none", iter = A2, iname = "A2", body = pure,
  expect = { schedule = "none", space = 1, vectors = {},
             place = { R2 = "local", C2 = "local" } },
  reset = reset, state = state,
}

-- A helper that captures an array: an unknown read and write of it at
-- every call.
local Hist = orion.zeros { 5, type = "i64" }
local function bump(k)
  Hist[k] = Hist[k] + 1
end
local function helper_capture(i, j, v)
  bump(v % 5 + 1)
end

G.check {
  name = "helper_captures_array_rejected", iter = A2, iname = "A2", body = helper_capture,
  expect = { schedule = "rejected", vectors = { "(NONNEG, ANY)" }, reason = "reached by helper bump" },
}

-- A helper that captures a buffer: the buffered writes are no dependence.
local HB = orion.buffer(Hist, { apply = "add" })
local function count(k)
  HB[k] = HB[k] + 1
end
local function helper_buffer(i, j, v)
  count(v % 5 + 1)
end

G.check {
  name = "helper_captures_buffer_none", iter = A2, iname = "A2", body = helper_buffer,
  expect = { schedule = "none", space = 1, vectors = {} },
  reset = function() reset(); G.fill(Hist) end,
  state = function() return { G.snap(A2), G.snap(Hist) } end,
  verify = function(got)
    local want = { 0, 0, 0, 0, 0 }
    for i = 1, nr do
      for j = 1, nc do
        local v = (i * 7 + j * 3) % 19 + 1
        want[v % 5 + 1] = want[v % 5 + 1] + 1
      end
    end
    assert(G.same(got[2], want), "histogram differs")
  end,
}

-- A closure defined in the body that reads R2[i][k]: i is the body's key.
local function closure_read(i, j, v)
  local function get(k) return R2[i][k] end
  C2[i][j] = (get(j % 4 + 1) * 3 + v + C2[i][j]) % MOD
end

G.check {
  name = "nested_closure_read_none", iter = A2, iname = "A2", body = closure_read,
  expect = { schedule = "none", space = 1, vectors = {},
             place = { R2 = "local", C2 = "local" } },
  reset = reset, state = state,
}

-- A closure that writes C2[k][j] for its own parameter k: any row of
-- column j, so blocks on key 2.
local function closure_write_column(i, j, v)
  local function put(k, x) C2[k][j] = (C2[k][j] * 3 + x) % MOD end
  put(i, v)
  if i < nr then put(i + 1, v) end
end

G.check {
  name = "nested_closure_write_1d_key2", iter = A2, iname = "A2", body = closure_write_column,
  expect = { schedule = "1d", space = 2, time = false, vectors = { "(NONNEG, 0)" },
             place = { C2 = "local" } },
  reset = reset, state = state,
}

-- A closure that writes Cnt at an unknown element.
local function closure_write_any(i, j, v)
  local function inc(k) Cnt[k] = Cnt[k] + 1 end
  inc(v % 4 + 1)
end

G.check {
  name = "nested_closure_write_rejected", iter = A2, iname = "A2", body = closure_write_any,
  expect = { schedule = "rejected", vectors = { "(NONNEG, ANY)" }, reason = "on Cnt: Cnt[k]" },
}

-- A closure over the body's keys: C2[i][j] is this iteration's element.
local function closure_keys(i, j, v)
  local function step() C2[i][j] = (C2[i][j] * 3 + v) % MOD end
  step()
  step()
end

G.check {
  name = "nested_closure_keys_none", iter = A2, iname = "A2", body = closure_keys,
  expect = { schedule = "none", space = 1, vectors = {}, place = { C2 = "local" } },
  reset = reset, state = state,
}

-- A method call on a slice may do anything to the slice (never runs here:
-- the elements are positive).
local function method_slice(i, j, v)
  C2[i][j] = (v * 5 + j + C2[i][j]) % MOD
  if v < 0 then R2[i]:normalise() end
end

G.check {
  name = "method_on_slice_1d", iter = A2, iname = "A2", body = method_slice,
  expect = { schedule = "1d", space = 1, time = false, vectors = { "(0, NONNEG)" },
             place = { R2 = "local", C2 = "local" } },
  reset = reset, state = state,
}

-- ... and on a whole array, to anything in it.
local function method_array(i, j, v)
  C2[i][j] = (v * 5 + j) % MOD
  if v < 0 then R2:normalise() end
end

G.check {
  name = "method_on_whole_array_rejected", iter = A2, iname = "A2", body = method_array,
  expect = { schedule = "rejected", vectors = { "(NONNEG, ANY)" }, reason = "R2:normalise() at line 173: a method call on DistArray 'R2'" },
}

-- Multiple assignment on 1-D arrays.
local n = 12
local X = orion.zeros { n, type = "i64" }
local P1 = orion.zeros { n, type = "i64" }
local Q1 = orion.zeros { n, type = "i64" }
local function reset1()
  G.fill(X, function(i) return (i * 5) % 7 + 1 end)
  G.fill(P1, function(i) return i * 3 end)
  G.fill(Q1, function(i) return (i * 11) % 13 end)
end
local function state1() return { G.snap(X), G.snap(P1), G.snap(Q1) } end

local function swap(i, v)
  P1[i], Q1[i] = (Q1[i] * 3 + v) % MOD, (P1[i] * 5 + 1) % MOD
end

G.check {
  name = "multiple_assignment_none", iter = X, iname = "X", body = swap,
  expect = { schedule = "none", space = 1, vectors = {},
             place = { P1 = "local", Q1 = "local" } },
  reset = reset1, state = state1,
}

-- One target one element ahead: Q1[i + 1] is read by the next iteration.
local function swap_ahead(i, v)
  if i < n then
    P1[i], Q1[i + 1] = (Q1[i] * 3 + v) % MOD, (P1[i] * 5 + 1) % MOD
  end
end

G.check {
  name = "multiple_assignment_offset_rejected", iter = X, iname = "X", body = swap_ahead,
  expect = { schedule = "rejected", vectors = { "(1)" }, reason = "Q1[i + 1]" },
}
