-- orion.buffer: writes (and reads of pending deltas) through a buffer are
-- no dependence; a target seen only through buffers is "server (buffered)".
local orion = require "orion"
local G = dofile((os.getenv("ORION_SRCDIR") or ".") .. "/t/analysis/golden.lua")

local n = 20
local A = orion.zeros { n, type = "i64" }
local function value(i) return (i * 37) % 53 + 1 end
local function resetA() G.fill(A, value) end

-- A custom apply function: the maximum per bucket.
local T = orion.zeros { 5, type = "i64" }
local TB = orion.buffer(T, { apply = function(old, delta) return math.max(old, delta) end })
local function bucket_max(i, v)
  local k = v % 5 + 1
  TB[k] = math.max(TB[k], v)
end

G.check {
  name = "buffer_custom_apply_none", iter = A, iname = "A", body = bucket_max,
  expect = { schedule = "none", space = 1, vectors = {},
             place = { A = "iterated", ["target of TB"] = "server (buffered)" } },
  reset = function() resetA(); G.fill(T) end,
  state = function() return { G.snap(A), G.snap(T) } end,
  verify = function(got)
    local want = { 0, 0, 0, 0, 0 }
    for i = 1, n do
      local v = value(i)
      want[v % 5 + 1] = math.max(want[v % 5 + 1], v)
    end
    assert(G.same(got[2], want), "bucket maxima differ")
  end,
}

-- "replace" with a flush every 3 elements, and a direct read of the
-- target at the iteration's own key: no dependence; the target of a buffer
-- is held by the servers that apply its updates, even though its one direct
-- read follows key 1.
local U = orion.zeros { n, type = "i64" }
local UB = orion.buffer(U, { apply = "replace", flush = 3 })
local function replace_own(i, v)
  UB[i] = U[i] * 2 + v
end

G.check {
  name = "buffer_replace_own_key_none", iter = A, iname = "A", body = replace_own,
  expect = { schedule = "none", space = 1, vectors = {}, place = { U = "server (buffered)" } },
  reset = function() resetA(); G.fill(U, function(i) return i * 3 end) end,
  state = function() return { G.snap(A), G.snap(U) } end,
  verify = function(got)
    for i = 1, n do
      assert(got[2][i] == i * 6 + value(i), "U[" .. i .. "] = " .. tostring(got[2][i]))
    end
  end,
}

-- A slice alias of a buffer: every access through it is buffered.
local G2 = orion.zeros { 3, 4, type = "i64" }
local GB2 = orion.buffer(G2, { apply = "add" })
local function slice_of_buffer(i, v)
  local row = GB2[v % 3 + 1]
  for k = 1, 4 do row[k] = row[k] + (v + k) % 7 end
end

G.check {
  name = "buffer_slice_alias_none", iter = A, iname = "A", body = slice_of_buffer,
  expect = { schedule = "none", space = 1, vectors = {},
             place = { ["target of GB2"] = "server (buffered)" } },
  reset = function() resetA(); G.fill(G2) end,
  state = function() return { G.snap(A), G.snap(G2) } end,
  verify = function(got)
    local want = { { 0, 0, 0, 0 }, { 0, 0, 0, 0 }, { 0, 0, 0, 0 } }
    for i = 1, n do
      local v = value(i)
      for k = 1, 4 do want[v % 3 + 1][k] = want[v % 3 + 1][k] + (v + k) % 7 end
    end
    assert(G.same(got[2], want), "buffered sums differ")
  end,
}

-- The same body on the array itself: an unknown row read and written.
local function slice_direct(i, v)
  local row = G2[v % 3 + 1]
  for k = 1, 4 do row[k] = row[k] + (v + k) % 7 end
end

G.check {
  name = "unbuffered_slice_rejected", iter = A, iname = "A", body = slice_direct,
  expect = { schedule = "rejected", vectors = { "(NONNEG)" }, reason = "on G2: row[k]" },
}

-- Buffered and direct accesses of one target in a 2-D loop: the direct
-- reads follow key 1 (the buffered writes do not count for placement),
-- the buffered writes at column j make no dependence.
local nr, nc = 6, 5
local A2 = orion.zeros { nr, nc, type = "i64" }
local Acc2 = orion.zeros { nr, nc, type = "i64" }
local AB2 = orion.buffer(Acc2, { apply = "add", flush = "loop" })
local function spread(i, j, v)
  local s = 0
  for k = 1, nc do s = s + Acc2[i][k] end
  AB2[i][j] = AB2[i][j] + s % 10 + v
  if i < nr then AB2[i + 1][j] = AB2[i + 1][j] + v end
end

G.check {
  name = "buffer_mixed_direct_reads_none", iter = A2, iname = "A2", body = spread,
  expect = { schedule = "none", space = 1, vectors = {}, place = { Acc2 = "server (buffered)" } },
  reset = function()
    G.fill(A2, function(i, j) return (i * 7 + j * 3) % 19 + 1 end)
    G.fill(Acc2, function(i, j) return i + j end)
  end,
  state = function() return { G.snap(A2), G.snap(Acc2) } end,
}
