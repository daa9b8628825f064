-- DistArray creation and the driver-side methods.
-- usage: orion-driver arrays.lua COO-FILE BIG-COO-FILE
local orion = require "orion"

local function flat(A)
  local out = {}
  local function walk(t)
    for _, x in ipairs(t) do
      if type(x) == "table" then walk(x) else out[#out + 1] = x end
    end
  end
  walk(A:to_table())
  return out
end

local function same(A, B)
  local a, b = flat(A), flat(B)
  if #a ~= #b then return false end
  for i = 1, #a do
    if a[i] ~= b[i] then return false end
  end
  return true
end

-- Seeds make randn reproducible.
local R1 = orion.randn{3, 4, seed = 11}
local R2 = orion.randn{3, 4, seed = 11}
local R3 = orion.randn{3, 4, seed = 12}
local R4 = orion.array{3, 4, init = "randn", seed = 11}
print("randn", same(R1, R2), same(R1, R3), same(R1, R4))

-- Scale and distribution.
local big = flat(orion.randn{200, 100, scale = 0.5, seed = 3})
local sum, sq = 0, 0
for _, x in ipairs(big) do sum = sum + x; sq = sq + x * x end
local mean = sum / #big
local sd = math.sqrt(sq / #big - mean * mean)
print("scale", #big, math.abs(mean) < 0.02, math.abs(sd - 0.5) < 0.02)
local lo, hi = math.huge, -math.huge
for _, x in ipairs(flat(orion.array{1000, init = "rand", seed = 4})) do
  lo = math.min(lo, x); hi = math.max(hi, x)
end
print("rand", lo >= 0, hi < 1, hi - lo > 0.9)

-- Types.
print("types", orion.array{2, type = "f32"}:type(),
  orion.array{2, type = "f64"}:type(), orion.array{2, type = "i32"}:type(),
  orion.array{2, type = "i64"}:type(), orion.array{2}:type(),
  orion.randn{2, type = "f32", seed = 1}:type())

-- Shape.
local Z = orion.zeros{2, 3, 4}
print("dims", Z:dims())
print("nnz", Z:nnz(), orion.array{5}:nnz(), Z:is_sparse())

-- get/set and value types.
local I = orion.array{2, 2, type = "i32"}
I:set(1, 2, -5)
print("i32", I:get(1, 2), math.type(I:get(1, 2)), I:get(2, 2))
local F = orion.array{2, type = "f32"}
F:set(2, 0.1)
print("f32", F:get(2) == 0.1, ("%.7g"):format(F:get(2)), math.type(F:get(1)))
local C = orion.array{2, 2, init = 2.5}
print("fill", C:get(2, 2), C:get(1, 1))

-- to_table of dense and sparse arrays.
local dt = I:to_table()
print("to_table", #dt, #dt[1], dt[1][2], dt[2][1])

-- map: a new array, the original untouched.
local M = I:map(function(i, j, v) return v + i * 10 + j end)
local mt = M:to_table()
print("map", table.concat(mt[1], " ") .. " / " .. table.concat(mt[2], " "),
  I:get(1, 1), M:type())

-- A sparse array from a file: histogram and split.
local R = orion.text_file(arg[1])
print("sparse", R:nnz(), R:dims())
print("hist", table.concat(R:histogram(1, 4), " ") .. " | " ..
  table.concat(R:histogram(1, 2), " ") .. " | " ..
  table.concat(R:histogram(2, 4), " "))
local st = R:to_table()
print("sparse_table", #st, #st[1])

local function keys(A)
  local k = {}
  for _, e in ipairs(A:to_table()) do k[e[1] .. "," .. e[2]] = e[3] end
  return k
end
local B = orion.text_file(arg[2])
local rest, held = B:split(0.25, 5)
local rk, hk, all = keys(rest), keys(held), keys(B)
local covered, overlap = 0, 0
for key, v in pairs(all) do
  if rk[key] == v or hk[key] == v then covered = covered + 1 end
  if rk[key] and hk[key] then overlap = overlap + 1 end
end
local frac = held:nnz() / B:nnz()
local _, held2 = B:split(0.25, 5)
local _, held3 = B:split(0.25, 6)
print("split", rest:nnz() + held:nnz() == B:nnz(), covered == B:nnz(),
  overlap, frac > 0.15 and frac < 0.35, same(held, held2), same(held, held3),
  table.concat({held:dims()}, "x"))
local none, every = B:split(0, 1)
local _, all_held = B:split(1, 1)
print("split_edges", none:nnz() == B:nnz(), every:nnz(), all_held:nnz() == B:nnz())

-- A[k] is a body's syntax: on the driver it says to use A:get and A:set
-- (it read a method slot, nil, and A[k] = v failed with Lua's own message).
local I = orion.zeros { 3 }
local ok1, e1 = pcall(function() return I[2] end)
local ok2, e2 = pcall(function() I[2] = 1 end)
print("index", ok1, (e1:gsub("^.-:%d+: ", "")), ok2, (e2:gsub("^.-:%d+: ", "")),
  I.nope, I:get(2))
