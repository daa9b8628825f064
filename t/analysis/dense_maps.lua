-- Loops without dependences: dense maps, bodies that return a new element,
-- bodies that touch no array at all.
local orion = require "orion"
local G = dofile((os.getenv("ORION_SRCDIR") or ".") .. "/t/analysis/golden.lua")

local n = 40
local MOD = 1000003
local A = orion.zeros { n, type = "i64" }
local B = orion.zeros { n, type = "i64" }
local function resetA() G.fill(A, function(i) return (i * 37) % 101 end) end

-- B[i] from A[i]: one write per iteration, to its own element.
local function map(i, v)
  B[i] = (v * 3 + i) % MOD
end

G.check {
  name = "dense_map_none", iter = A, iname = "A", body = map,
  expect = { schedule = "none", space = 1, time = false, vectors = {},
             place = { A = "iterated", B = "local" } },
  reset = function() resetA(); G.fill(B, function(i) return i end) end,
  state = function() return { G.snap(A), G.snap(B) } end,
}

-- The returned value replaces the element it was computed from.
local function double(i, v)
  return v * 2
end

G.check {
  name = "return_double_none", iter = A, iname = "A", body = double,
  expect = { schedule = "none", space = 1, vectors = {}, place = { A = "iterated" } },
  reset = resetA,
  state = function() return G.snap(A) end,
}

-- Only an accumulator.
local acc = orion.accumulator("sum", 0)
local function accumulate(i, v)
  acc:add(v * i)
end
local expected_sum = 0
for i = 1, n do expected_sum = expected_sum + ((i * 37) % 101) * i end

G.check {
  name = "accumulator_only_none", iter = A, iname = "A", body = accumulate,
  expect = { schedule = "none", space = 1, vectors = {}, place = { A = "iterated" } },
  reset = function() resetA(); acc:reset() end,
  state = function() return G.snap(A) end,
  verify = function()
    assert(acc:get() == expected_sum, ("sum %s, expected %d"):format(tostring(acc:get()), expected_sum))
  end,
}

-- Nothing at all.
local function nothing(i)
end

G.check {
  name = "empty_body_none", iter = A, iname = "A", body = nothing,
  expect = { schedule = "none", space = 1, vectors = {}, place = { A = "iterated" } },
  reset = resetA,
  state = function() return G.snap(A) end,
}

-- Locals and arithmetic only: the value is read, nothing is written.
local function locals_only(i, v)
  local x = math.sqrt(v + i)
  local y = x * x - v
  if y > 1e9 then error("impossible") end
end

G.check {
  name = "locals_only_none", iter = A, iname = "A", body = locals_only,
  expect = { schedule = "none", space = 1, vectors = {} },
  reset = resetA,
  state = function() return G.snap(A) end,
}

-- A 2-D dense loop over its keys only, into an accumulator: both keys are
-- free of cost, the first one wins.
local nr, nc = 6, 5
local A2 = orion.zeros { nr, nc, type = "i64" }
local function resetA2() G.fill(A2, function(i, j) return (i * 7 + j * 11) % 23 end) end
local acc2 = orion.accumulator("sum", 0)
local function keys_only(i, j)
  acc2:add(i * 100 + j)
end

G.check {
  name = "keys_only_2d_none", iter = A2, iname = "A2", body = keys_only,
  expect = { schedule = "none", space = 1, time = false, vectors = {} },
  reset = function() resetA2(); acc2:reset() end,
  state = function() return G.snap(A2) end,
  verify = function()
    local want = 0
    for i = 1, nr do for j = 1, nc do want = want + i * 100 + j end end
    assert(acc2:get() == want, "keys_only sum " .. tostring(acc2:get()))
  end,
}

-- A 2-D dense map through the return value.
local function remap(i, j, v)
  return (v * 7 + i * 3 + j) % 1009
end

G.check {
  name = "dense_2d_return_none", iter = A2, iname = "A2", body = remap,
  expect = { schedule = "none", space = 1, vectors = {}, place = { A2 = "iterated" } },
  reset = resetA2,
  state = function() return G.snap(A2) end,
}
