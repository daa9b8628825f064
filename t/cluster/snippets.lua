-- Numeric snippets that stress Lua 5.4's semantics, run in both tiers:
--   orion-driver [--executors N] snippets.lua
-- Each snippet is a body over a 600 x 8 f64 array (values randn, plus
-- planted edge values); it writes a float result to F[i][k] and an integer
-- result to N[i][k] (one element per iteration, so no two blocks write the
-- same element). Run once with tier "lua" and once with tier "c" (which
-- fails rather than falling back), every element and the accumulator must
-- be equal bit for bit.
local orion = require "orion"

local R, C = 600, 8
local X = orion.array { R, C, type = "f64", init = "randn", seed = 5 }
-- Edge values in the first rows: zeros of both signs, integral floats,
-- values near 2^53 and 2^63, tiny and huge numbers.
local edges = { 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5, 2^53, -2^53, 2^53 + 2,
  2^63, -2^63, 1e308, -1e308, 5e-324, 1e-310, 3.0, -7.0, 1e15 + 0.5, 123456789.0,
  -2^62, 2^31, -2^31 - 1.0 }
for n, x in ipairs(edges) do X:set((n - 1) // C + 1, (n - 1) % C + 1, x) end

local S = {}
local function snippet(name, make) S[#S + 1] = { name, make } end

local MAXI, MINI = math.maxinteger, math.mininteger
local big = 1 << 40

snippet("int_add_wraps", function(F, N, acc)
  return function(i, k, v)
  N[i][k] = MAXI + i * k
end end)
snippet("int_mul_wraps", function(F, N, acc)
  return function(i, k, v)
  N[i][k] = (i * 0x7fffffffffff) * (k * 1000003)
end end)
snippet("int_neg_mininteger", function(F, N, acc)
  return function(i, k, v)
  N[i][k] = -(MINI + i - 1) - k
end end)
snippet("int_floordiv_signs", function(F, N, acc)
  return function(i, k, v)
  local a = i - 300
  N[i][k] = a // k + a // -k * 1000 + (-a) // (k + 1)
end end)
snippet("int_mod_signs", function(F, N, acc)
  return function(i, k, v)
  local a = i - 300
  N[i][k] = a % k + 100 * (a % -k) + 10000 * ((-a) % (k + 2))
end end)
snippet("int_floordiv_mininteger", function(F, N, acc)
  return function(i, k, v)
  N[i][k] = MINI // (k % 2 == 0 and -1 or k) + MINI % (-k)
end end)
snippet("float_floordiv_signs", function(F, N, acc)
  return function(i, k, v)
  F[i][k] = v // 0.3 + (-v) // 0.7 * 3 + v // -1.5
end end)
snippet("float_mod_signs", function(F, N, acc)
  return function(i, k, v)
  F[i][k] = v % 0.3 + (v % -0.7) * 10 + (-v) % 2.0 * 100
end end)
snippet("float_mod_inf_and_zero", function(F, N, acc)
  return function(i, k, v)
  local m = k % 3 == 0 and math.huge or (k % 3 == 1 and -math.huge or 0.0)
  F[i][k] = v % m
end end)
snippet("float_divide_by_zero", function(F, N, acc)
  return function(i, k, v)
  local z = k % 2 == 0 and 0.0 or -0.0
  F[i][k] = (v / z) + (i - 300) / 0
  if v / z ~= v / z then acc:add(1) end
end end)
snippet("int_div_is_float", function(F, N, acc)
  return function(i, k, v)
  F[i][k] = i / k + (i * big) / 3
end end)
snippet("nan_comparisons", function(F, N, acc)
  return function(i, k, v)
  local nan = v * (0 / 0)
  local c = 0
  if nan < v then c = c + 1 end
  if nan > v then c = c + 2 end
  if nan ~= nan then c = c + 4 end
  if not (nan <= v) then c = c + 8 end
  if nan == nan then c = c + 16 end
  N[i][k] = c
  F[i][k] = math.max(nan, v) + math.min(v, nan)
end end)
snippet("inf_arithmetic", function(F, N, acc)
  return function(i, k, v)
  local inf = math.huge
  F[i][k] = (inf - inf) + inf * (v - v) + (-inf) * v + inf / inf
end end)
snippet("negative_zero", function(F, N, acc)
  return function(i, k, v)
  F[i][k] = (-0.0) * v + 0.0 * (-v) + (-0.0) // 1 + (v - v) * -1
end end)
snippet("tointeger_edges", function(F, N, acc)
  return function(i, k, v)
  local t = math.tointeger(v * 4)
  N[i][k] = t == nil and -1 or t
end end)
snippet("floor_ceil_large", function(F, N, acc)
  return function(i, k, v)
  N[i][k] = math.floor(math.fmod(v, 1e6) * 3.5) + math.ceil(math.fmod(v, 1e6) * -2.5)
  F[i][k] = math.floor(v * 1e18) + math.ceil(v * 1e19) + math.floor(v * 3.5)
end end)
snippet("float_subscript_integral", function(F, N, acc)
  return function(i, k, v)
  local col = (k * 1.0) -- a float with an integral value indexes fine
  N[i][col] = i + k
end end)
snippet("int_float_equality", function(F, N, acc)
  return function(i, k, v)
  local c = 0
  if i == i + 0.0 then c = c + 1 end
  if MAXI + 0.0 == 2^63 then c = c + 2 end
  if MAXI < 2^63 then c = c + 4 end
  if MINI == -2^63 then c = c + 8 end
  if (1 << 53) + 1 == 2^53 + 1 then c = c + 16 end
  if MAXI ~= MAXI + 0.0 then c = c + 32 end
  N[i][k] = c
end end)
snippet("mixed_ordering", function(F, N, acc)
  return function(i, k, v)
  local c = 0
  if i < v * 300 then c = c + 1 end
  if k <= v then c = c + 2 end
  if MAXI < v then c = c + 4 end
  if MINI > v then c = c + 8 end
  if (1 << 62) < v * 2^63 then c = c + 16 end
  N[i][k] = c
end end)
snippet("math_abs_wraps", function(F, N, acc)
  return function(i, k, v)
  N[i][k] = math.abs(MINI + (i % 3)) + math.abs(-i)
  F[i][k] = math.abs(v) + math.abs(-0.0)
end end)
snippet("fmod_ints_and_floats", function(F, N, acc)
  return function(i, k, v)
  N[i][k] = math.fmod(i - 300, k) + 1000 * math.fmod(i, -k) + math.fmod(MINI, -1)
  F[i][k] = math.fmod(v, 0.7) + math.fmod(-v, -2.0)
end end)
snippet("max_min_subtypes", function(F, N, acc)
  return function(i, k, v)
  N[i][k] = math.max(i, k) - math.min(i, k * 100)
  F[i][k] = math.max(v, 0.5) + math.min(i, v) + math.max(i, v, k)
end end)
snippet("power_and_sqrt", function(F, N, acc)
  return function(i, k, v)
  F[i][k] = 2 ^ k + i ^ 0.5 + v ^ 2 + (-8) ^ (1 / 3) + math.sqrt(v)
end end)
snippet("shifts", function(F, N, acc)
  return function(i, k, v)
  N[i][k] = (1 << (60 + k)) + (-1 >> (k * 8)) + (i << -k) + (i >> 64) + (MINI >> 63)
end end)
snippet("bitwise_on_floats", function(F, N, acc)
  return function(i, k, v)
  local x = (i * 1.0) | 0
  N[i][k] = (x & 0xff) ~ (k * 2.0) | (~i)
end end)
snippet("log_exp_edges", function(F, N, acc)
  return function(i, k, v)
  F[i][k] = math.log(0) + math.log(v) + math.log(8, 2) + math.log(100, 10) +
            math.exp(v * 800) + math.log(i, k + 1)
end end)
snippet("trig", function(F, N, acc)
  return function(i, k, v)
  F[i][k] = math.sin(v) * math.cos(i) + math.atan(v, k) + math.atan(-v) + math.tan(v)
end end)
snippet("ult", function(F, N, acc)
  return function(i, k, v)
  local c = 0
  if math.ult(i, -k) then c = c + 1 end
  if math.ult(-i, k) then c = c + 2 end
  if math.ult(MAXI, MINI) then c = c + 4 end
  N[i][k] = c
end end)
snippet("for_float_step", function(F, N, acc)
  return function(i, k, v)
  local n, s = 0, 0.0
  for x = 1, 2, 0.1 do n = n + 1; s = s + x end
  for x = 0.5, -0.5, -0.25 do n = n + 1; s = s + x end
  N[i][k] = n
  F[i][k] = s + k
end end)
snippet("for_near_maxinteger", function(F, N, acc)
  return function(i, k, v)
  local n = 0
  for j = MAXI - k, MAXI do n = n + 1 end
  for j = MINI, MINI + k, 3 do n = n + 1 end
  for j = MAXI, MAXI - 2, -1 do n = n + j % 7 end
  N[i][k] = n
end end)
snippet("for_float_limit", function(F, N, acc)
  return function(i, k, v)
  local n = 0
  for j = 1, k + 0.7 do n = n + j end
  for j = k, 1.5, -1 do n = n + 10 * j end
  for j = 1, 2^70 do n = n + 1; if j > 3 then break end end
  N[i][k] = n
end end)
snippet("while_repeat_float", function(F, N, acc)
  return function(i, k, v)
  local x, n = math.abs(v) + 1, 0
  while x > 1e-3 do x = x / 3; n = n + 1 end
  repeat x = x * 2.5; n = n + 1 until x > k
  N[i][k] = n
  F[i][k] = x
end end)
snippet("random_ranges", function(F, N, acc)
  return function(i, k, v)
  N[i][k] = math.random(k) + math.random(-k, k) * 100 + math.random(MINI, MAXI) % 1000 * 10000
  F[i][k] = math.random() + math.random(0) % 10
end end)
snippet("random_full_width", function(F, N, acc)
  return function(i, k, v)
  N[i][k] = math.random(0) ~ math.random(1, MAXI) ~ math.random(MINI, -1)
end end)
snippet("accumulate_mixed", function(F, N, acc)
  return function(i, k, v)
  if k % 2 == 0 then acc:add(i) else acc:add(v) end
end end)
snippet("returned_value_subtype", function(F, N, acc)
  return function(i, k, v)
  if k == 1 then return i end  -- an integer into an f64 array
  if k == 2 then return v // 1 end
  if k == 3 then return -0.0 end
end end)
snippet("goto_and_nested_break", function(F, N, acc)
  return function(i, k, v)
  local n = 0
  for a = 1, 5 do
    for b = 1, 5 do
      if b > a then break end
      if (a + b) % 3 == 0 then goto next end
      n = n + a * b
      ::next::
    end
  end
  N[i][k] = n + k
end end)

local function bits(x)
  if math.type(x) == "integer" then return "i" .. x end
  return string.pack("<d", x)
end

local function differ(a, b)
  local ta, tb = a:to_table(), b:to_table()
  for r = 1, #ta do
    for c = 1, #ta[r] do
      if bits(ta[r][c]) ~= bits(tb[r][c]) then
        return ("element (%d, %d): %s vs %s"):format(r, c, tostring(ta[r][c]),
          tostring(tb[r][c]))
      end
    end
  end
end

local base = X:to_table()
local function reset_X()
  for r = 1, R do for c = 1, C do X:set(r, c, base[r][c]) end end
end

local agreed = 0
for _, s in ipairs(S) do
  local name, make = s[1], s[2]
  local res = {}
  for _, tier in ipairs { "lua", "c" } do
    reset_X()
    local F = orion.array { R, C, type = "f64" }
    local N = orion.array { R, C, type = "i64" }
    local acc = orion.accumulator("sum", 0)
    local st = orion.parallel_for(X, make(F, N, acc), { tier = tier, seed = 3 })
    assert(st.tier == tier, ("%s: ran tier %s"):format(name, st.tier))
    res[tier] = { X = X:to_table(), F = F, N = N, acc = acc:get() }
    res[tier].Xa = orion.array { R, C, type = "f64" }
    for r = 1, R do for c = 1, C do res[tier].Xa:set(r, c, res[tier].X[r][c]) end end
  end
  for _, a in ipairs { "Xa", "F", "N" } do
    local why = differ(res.lua[a], res.c[a])
    assert(why == nil, ("%s: %s differs between tiers: %s"):format(name, a, why or ""))
  end
  assert(bits(res.lua.acc) == bits(res.c.acc), ("%s: accumulator %s vs %s"):format(
    name, tostring(res.lua.acc), tostring(res.c.acc)))
  agreed = agreed + 1
  print("snippet agrees: " .. name)
end
print(("snippets: %d of %d agree"):format(agreed, #S))
