-- Aliases: locals bound once to a key expression or a slice are followed;
-- locals assigned again are not (their subscripts are unknown, and a slice
-- stored in one counts as read and written with the leading subscripts it
-- was taken with).
local orion = require "orion"
local G = dofile((os.getenv("ORION_SRCDIR") or ".") .. "/t/analysis/golden.lua")

local MOD = 1000003
local n = 16
local A = orion.zeros { n, type = "i64" }
local B = orion.zeros { n, type = "i64" }
local function reset1()
  G.fill(A, function(i) return (i * 13) % 17 + 1 end)
  G.fill(B, function(i) return (i * 5) % 11 end)
end
local function state1() return { G.snap(A), G.snap(B) } end

-- A key alias used once: B[u] is B[i].
local function alias_once(i, v)
  local u = i
  B[u] = (B[u] * 3 + v) % MOD
end

G.check {
  name = "key_alias_once_none", iter = A, iname = "A", body = alias_once,
  expect = { schedule = "none", space = 1, vectors = {}, place = { B = "local" } },
  reset = reset1, state = state1,
}

-- The same alias assigned again (even to the same key): not followed.
local function alias_reassigned(i, v)
  local u = i
  if v % 2 == 1 then u = i end
  B[u] = (B[u] * 3 + v) % MOD
end

G.check {
  name = "key_alias_reassigned_rejected", iter = A, iname = "A", body = alias_reassigned,
  expect = { schedule = "rejected", vectors = { "(NONNEG)" }, reason = "on B: B[u]" },
}

-- An alias with an offset: B[prev] is B[i - 1], a recurrence.
local function alias_prev(i, v)
  local prev = i - 1
  if prev >= 1 then B[i] = (B[prev] * 3 + v) % MOD end
end

G.check {
  name = "key_alias_recurrence_rejected", iter = A, iname = "A", body = alias_prev,
  expect = { schedule = "rejected", vectors = { "(1)" }, reason = "B[prev]" },
}

-- 2-D: two key aliases in one local statement, and a chain of aliases.
local nr, nc = 6, 5
local A2 = orion.zeros { nr, nc, type = "i64" }
local B2 = orion.zeros { nr, nc, type = "i64" }
local C2 = orion.zeros { nr, nc, type = "i64" }
local T3 = orion.zeros { nr, nc, 4, type = "i64" }
local function reset2()
  G.fill(A2, function(i, j) return (i * 7 + j * 3) % 19 + 1 end)
  G.fill(B2, function(i, j) return (i * 5 + j * 2) % 13 end)
  G.fill(C2, function(i, j) return (i + j * 11) % 29 end)
  G.fill(T3, function(i, j, k) return (i * 3 + j * 5 + k * 7) % 31 end)
end
local function state2() return { G.snap(A2), G.snap(B2), G.snap(C2), G.snap(T3) } end

local function alias_pair(i, j, v)
  local r, c = i, j
  B2[r][c] = (v * 3 + C2[r][c] + B2[r][c] * 7) % MOD
end

G.check {
  name = "key_alias_pair_2d_none", iter = A2, iname = "A2", body = alias_pair,
  expect = { schedule = "none", space = 1, vectors = {},
             place = { B2 = "local", C2 = "local" } },
  reset = reset2, state = state2,
}

-- up = r - 1 = i - 1: B2[up][j] is one row above: vector (1, 0), blocks
-- on key 2.  Ordered, so the run must equal the serial one.
local function alias_chain(i, j, v)
  local r = i
  local up = r - 1
  if up >= 1 then B2[r][j] = (B2[up][j] * 3 + v) % MOD end
end

G.check {
  name = "key_alias_chain_ordered_1d", iter = A2, iname = "A2", body = alias_chain,
  opts = { ordered = true },
  expect = { schedule = "1d", space = 2, time = false, vectors = { "(1, 0)" },
             place = { B2 = "local" } },
  reset = reset2, state = state2,
}

-- A slice alias of a 3-D array with two known subscripts: a 2-D loop
-- touches only its own (i, j) row.
local function slice3(i, j, v)
  local row = T3[i][j]
  for k = 1, 4 do row[k] = (row[k] * 3 + v + k) % MOD end
end

G.check {
  name = "slice_alias_3d_row_none", iter = A2, iname = "A2", body = slice3,
  expect = { schedule = "none", space = 1, vectors = {}, place = { T3 = "local" } },
  reset = reset2, state = state2,
}

-- A row alias written at column j: no dependence...
local function row_alias(i, j, v)
  local row = B2[i]
  row[j] = (row[j] * 3 + v) % MOD
end

G.check {
  name = "slice_alias_row_none", iter = A2, iname = "A2", body = row_alias,
  expect = { schedule = "none", space = 1, vectors = {}, place = { B2 = "local" } },
  reset = reset2, state = state2,
}

-- ...but assigned again, the alias is not followed: the row it holds is
-- read and written anywhere, so the loop needs blocks on key 1.
local function row_alias_reassigned(i, j, v)
  local row = B2[i]
  if v < 0 then row = B2[i] end
  row[j] = (row[j] * 3 + v) % MOD
end

G.check {
  name = "slice_alias_row_reassigned_1d", iter = A2, iname = "A2", body = row_alias_reassigned,
  expect = { schedule = "1d", space = 1, time = false, vectors = { "(0, NONNEG)" },
             place = { B2 = "local" } },
  reset = reset2, state = state2,
}

-- Matrix factorisation with reassigned slice aliases.
local nu, ni, K = 9, 7, 3
local lines = {}
for u = 1, nu do
  for i = 1, ni do
    if (u * 7 + i * 3) % 4 ~= 0 then lines[#lines + 1] = ("%d %d %d"):format(u, i, (u + i) % 5 + 1) end
  end
end
local path = os.tmpname()
local f = assert(io.open(path, "w")); f:write(table.concat(lines, "\n"), "\n"); f:close()
local R = orion.text_file(path, { format = "coo", dims = { nu, ni } })
os.remove(path)
local W = orion.zeros { nu, K }
local H = orion.zeros { ni, K }
local lr, reg = 0.05, 0.01
local function resetmf()
  G.fill(W, function(u, k) return (u * 0.37 + k * 0.11) % 1 end)
  G.fill(H, function(i, k) return (i * 0.23 + k * 0.29) % 1 end)
end
local function statemf() return { G.snap(W), G.snap(H) } end

-- Re-fetching the same row: still only row u of W, so still 2-D.
local function sgd_refetch(u, i, r)
  local wu = W[u]
  local hi = H[i]
  local e = r
  for k = 1, K do e = e - wu[k] * hi[k] end
  if r > 3 then wu = W[u] end
  for k = 1, K do
    local w, h = wu[k], hi[k]
    wu[k] = w + lr * (e * h - reg * w)
    hi[k] = h + lr * (e * w - reg * h)
  end
end

G.check {
  name = "slice_alias_reassigned_same_row_2d", iter = R, iname = "R", body = sgd_refetch,
  expect = { schedule = "2d", space = 1, time = 2,
             vectors = { "(0, NONNEG)", "(NONNEG, 0)" },
             place = { W = "local", H = "rotating" } },
  reset = resetmf, state = statemf,
}

-- Reassigned to another user's row: W is touched at an unknown row, which
-- no schedule allows.
local function sgd_neighbour(u, i, r)
  local wu = W[u]
  local hi = H[i]
  if r > 3 then wu = W[u % nu + 1] end
  local e = r
  for k = 1, K do e = e - wu[k] * hi[k] end
  for k = 1, K do
    local w, h = wu[k], hi[k]
    wu[k] = w + lr * (e * h - reg * w)
    hi[k] = h + lr * (e * w - reg * h)
  end
end

G.check {
  name = "slice_alias_reassigned_other_row_rejected", iter = R, iname = "R", body = sgd_neighbour,
  expect = { schedule = "rejected",
             vectors = { "(0, NONNEG)", "(NONNEG, ANY)", "(NONNEG, 0)" },
             reason = "on W" },
}

-- Multiple assignment through slice aliases.
local function sgd_multi(u, i, r)
  local wu, hi = W[u], H[i]
  local e = r
  for k = 1, K do e = e - wu[k] * hi[k] end
  for k = 1, K do
    wu[k], hi[k] = wu[k] + lr * (e * hi[k] - reg * wu[k]), hi[k] + lr * (e * wu[k] - reg * hi[k])
  end
end

G.check {
  name = "mf_multiple_assignment_2d", iter = R, iname = "R", body = sgd_multi,
  expect = { schedule = "2d", space = 1, time = 2,
             vectors = { "(0, NONNEG)", "(NONNEG, 0)" },
             place = { R = "iterated", W = "local", H = "rotating" } },
  reset = resetmf, state = statemf,
}
