-- The compiled and interpreted tiers give bit-identical results:
--   orion-driver [--executors N] tiers.lua
-- Each body runs twice on fresh copies of the same inputs, once with
-- tier = "lua" and once with tier = "c", and every array element and
-- accumulator must be equal bit for bit (NaN equal to NaN).
local orion = require "orion"

local N = 600
local function inputs()
  local A = orion.array { N, 8, type = "f64", init = "randn", seed = 7 }
  local F = orion.array { N, 8, type = "f32", init = "randn", seed = 8 }
  local I = orion.array { N, 4, type = "i64", init = "zeros" }
  local J = orion.array { N, 4, type = "i32", init = "zeros" }
  return A, F, I, J
end

local bodies = {
  -- SGD-style update over f32 slices with a captured rate.
  sgd = function(A, F, I, J, acc, lr)
    return function(i, k, v)
      local a, f = A[i], F[i]
      local e = v
      for q = 1, 8 do e = e - a[q] * f[q] end
      acc:add(e * e)
      for q = 1, 8 do
        local x, y = a[q], f[q]
        a[q] = x + lr * (e * y - 0.01 * x)
        f[q] = y + lr * (e * x - 0.01 * y)
      end
    end
  end,
  -- Integer semantics: wrap-around, floor division and modulo with signs.
  ints = function(A, F, I, J, acc)
    return function(i, k, v)
      local n = i * 1000003 - 500000 * k
      I[i][1] = n // 7
      I[i][2] = n % -7
      I[i][3] = (math.maxinteger - i) + k * 1000 -- wraps for large k
      I[i][4] = (n << 3) ~ (n >> 2)
      J[i][k % 4 + 1] = (n % 1000) // 3
      acc:add(n % 13)
    end
  end,
  -- Floats: NaN, infinities, mixed comparisons, math functions.
  floats = function(A, F, I, J, acc)
    return function(i, k, v)
      local x = v * 1e308 * 10
      local y = (i % 3 == 0) and (0 / 0) or math.sqrt(math.abs(v))
      A[i][k] = math.floor(v * 100) / 100 + math.fmod(i, 7) + (x > 1 and 1 or 0)
      F[i][k] = y
      if y ~= y then acc:add(1) end
      if i == 2 ^ 53 then acc:add(100) end
      return math.max(v, -0.5)
    end
  end,
  -- Control flow: while, repeat, goto continue, break, early return.
  control = function(A, F, I, J, acc)
    return function(i, k, v)
      local s, t = 0, i
      while t > 1 do
        if t % 2 == 0 then t = t // 2 else t = 3 * t + 1 end
        s = s + 1
        if s > 500 then break end
      end
      repeat s = s - 3 until s < 10
      for q = 1, 4 do
        if q == k % 4 then goto continue end
        I[i][q] = I[i][q] + s * q
        ::continue::
      end
      if k == 8 then return v * 2 end
      acc:add(s)
    end
  end,
  -- math.random streams: floats, ranges and 0.
  random = function(A, F, I, J, acc)
    return function(i, k, v)
      A[i][k] = math.random()
      I[i][k % 4 + 1] = math.random(1, 1000000) + math.random(7)
      acc:add(math.random(-5, 5))
    end
  end,
}

local names = {}
for name in pairs(bodies) do names[#names + 1] = name end
table.sort(names)

local function bits(x)
  if math.type(x) == "integer" then return "i" .. x end
  return string.pack("<d", x)
end

local function same(a, b)
  local ta, tb = a:to_table(), b:to_table()
  for i = 1, #ta do
    for j = 1, #ta[i] do
      if bits(ta[i][j]) ~= bits(tb[i][j]) then
        return false, ("element (%d, %d): %s vs %s"):format(i, j,
          tostring(ta[i][j]), tostring(tb[i][j]))
      end
    end
  end
  return true
end

for _, name in ipairs(names) do
  local res = {}
  for _, tier in ipairs { "lua", "c" } do
    local A, F, I, J = inputs()
    local acc = orion.accumulator("sum", 0)
    local body = bodies[name](A, F, I, J, acc, 0.01)
    local st = orion.parallel_for(A, body, { tier = tier, seed = 99 })
    assert(st.tier == tier, ("%s: ran tier %s, asked for %s"):format(
      name, st.tier, tier))
    res[tier] = { A = A, F = F, I = I, J = J, acc = acc:get() }
  end
  for _, k in ipairs { "A", "F", "I", "J" } do
    local ok, why = same(res.lua[k], res.c[k])
    assert(ok, ("%s: array %s differs between tiers: %s"):format(name, k, why))
  end
  assert(bits(res.lua.acc) == bits(res.c.acc),
    ("%s: accumulator %s (lua) vs %s (c)"):format(name, tostring(res.lua.acc),
                                                tostring(res.c.acc)))
  print(("tiers agree: %s"):format(name))
end

-- Outside the subset: tier "c" fails with the reason; auto interprets.
local A = inputs()
local ok, err = pcall(orion.parallel_for, A, function(i, k, v)
  print(i) -- @print
end, { tier = "c", schedule = "none" })
assert(not ok and err:find("a call to 'print' is outside the compiled subset",
                           1, true), err)
print("tier c refused: " .. err:gsub("^.-parallel_for: ", ""))

-- Fast math (opts.fast): f32 expressions in single precision, contracted
-- multiply-adds and reassociated reductions. The results match the
-- interpreter within a relative 1e-5 per element (the stated tolerance,
-- docs/lua-api.md), and the accumulator within 1e-5 as well.
do
  local function reldiff(a, b)
    local ta, tb = a:to_table(), b:to_table()
    local worst = 0.0
    for i = 1, #ta do
      for j = 1, #ta[i] do
        local x, y = ta[i][j], tb[i][j]
        local d = math.abs(x - y) / math.max(math.abs(y), 1e-3)
        if d > worst then worst = d end
      end
    end
    return worst
  end
  local res = {}
  for _, mode in ipairs { "lua", "fast" } do
    local A, F, I, J = inputs()
    local acc = orion.accumulator("sum", 0)
    local body = bodies.sgd(A, F, I, J, acc, 0.01)
    local st = orion.parallel_for(A, body, { tier = mode == "lua" and "lua" or "c",
                                             fast = mode == "fast", seed = 99 })
    res[mode] = { A = A, F = F, acc = acc:get(), tier = st.tier }
  end
  assert(res.fast.tier == "c", "the fast run was not compiled")
  local worst = math.max(reldiff(res.fast.A, res.lua.A), reldiff(res.fast.F, res.lua.F))
  local dacc = math.abs(res.fast.acc - res.lua.acc) / math.abs(res.lua.acc)
  assert(worst <= 1e-5, ("fast math: an element differs by %.3g (relative)"):format(worst))
  assert(dacc <= 1e-5, ("fast math: the accumulator differs by %.3g"):format(dacc))
  print(("fast within tolerance: sgd (max relative difference %.1e, accumulator %.1e)")
    :format(worst, dacc))
end
