-- Tier "gpu" against tier "c":
--   orion-driver [--executors N] [--gpus 1] gpu_tier.lua [cpu|gpu]
-- Each body runs twice on fresh copies of the same inputs, once with
-- tier = "c" and once with tier = "gpu".  With `cpu` (the default: no
-- executor has a device) the "gpu" run must say it ran tier "c" and agree
-- bit for bit.  With `gpu` it must have run on the device: integer arrays
-- and accumulators agree bit for bit; floats within a relative 1e-9
-- (|x - y| / max(|y|, 1e-3)) where the device keeps the CPU's order of
-- every dependent pair (1d, none, 2d-ordered's wavefront: only the
-- accumulators' summation order differs).  The 2d rotation runs the
-- block in another serial order, a different SGD trajectory: with one
-- block and a 1 x 1 device grid (mf_grid1) that order is the CPU's, so it
-- must agree within 1e-9; with the default grid (mf) the pass's squared
-- error (the accumulator) and each factor matrix's sum of squares must
-- lie within the spread of CPU runs in other block orders (partitions 4,
-- 8, 16 and 40 per dimension), widened by 2%: the orders a serial run
-- allows move H's sum of squares by 6% among themselves, W's by 0.02% and
-- the error by 0.1%, while a lost or repeated update moves them far more.
-- With fast = true the device claims the rotation's cells instead of
-- running its steps (util/gclaim.h), in an order that depends on timing:
-- mf_fast is checked as mf is, and counts_fast, whose integer counts per
-- row and per column do not depend on the order, bit for bit.
-- Buffers' adds run on the device as atomic adds (util/gbody.h): the
-- integer sums of buffer_counts agree bit for bit on any grid, and
-- buffer_fast's float sums (fast mode) within 1e-9.  math.random draws a
-- stream per group, group 0 the block's own: on one block and a 1 x 1
-- grid (random_grid1, with `seed` pinning the streams so that the two
-- loops draw alike) the device draws what the CPU draws, bit for bit.
-- Prints one line per comparison.
local orion = require "orion"
local expect = arg[1] or "cpu"

local N = 300
local function inputs()
  local R = orion.array { N, 40, type = "f64", init = "randn", seed = 3 }
  local W = orion.array { N, 4, type = "f64", init = "randn", seed = 4 }
  local H = orion.array { 40, 4, type = "f32", init = "randn", seed = 5 }
  local I = orion.array { N, 4, type = "i64", init = "zeros" }
  local J = orion.array { 40, 2, type = "i64", init = "zeros" }
  return R, W, H, I, J
end

local function mf(R, W, H, I, acc)
  return function(i, j, v)
    local e = v
    for k = 1, 4 do e = e - W[i][k] * H[j][k] end
    acc:add(e * e)
    for k = 1, 4 do
      local w, h = W[i][k], H[j][k]
      W[i][k] = w + 0.01 * e * h
      H[j][k] = h + 0.01 * e * w
    end
  end
end

local opts = { mf_ordered = { ordered = true },
               mf_grid1 = { partitions = { 1, 1 }, gpu_grid = 1 },
               mf_fast = { fast = true },
               counts_fast = { fast = true },
               buffer_fast = { fast = true },
               random_grid1 = { partitions = { 1, 1 }, gpu_grid = 1, seed = 11 } }
-- Bodies compared in aggregate on a device: the CPU orders that give the
-- spread, and how far beyond it (relative) the device may be.
local aggregate = { mf = { parts = { 4, 8, 16, 40 }, widen = 0.02 },
                    mf_fast = { parts = { 4, 8, 16, 40 }, widen = 0.02 } }

local bodies = {
  -- Matrix factorisation, ordered: 2d-ordered (a wavefront on the device).
  mf_ordered = mf,
  -- The same unordered: 2d (a rotation on the device).
  mf = mf,
  -- Unordered in one block on a 1 x 1 device grid: the CPU's order.
  mf_grid1 = mf,
  -- Fast math: the device claims the rotation's cells (util/gclaim.h),
  -- in an order that depends on timing.
  mf_fast = mf,
  -- Fast, claimed, on integers: counts per row and per column that a
  -- lost or repeated update (two cells of one row or column at once)
  -- would change; 300 rows of cells over 40 columns, so that the
  -- workers contend for columns.
  counts_fast = function(R, W, H, I, acc, J)
    return function(i, j, v)
      I[i][1] = I[i][1] + 1
      I[i][2] = I[i][2] + j * j
      J[j][1] = J[j][1] + 1
      J[j][2] = J[j][2] + i
      acc:add(1)
    end
  end,
  -- Integer sums through a buffer (schedule none: no dependences).
  buffer_counts = function(R, W, H, I, acc, J)
    local B = orion.buffer(J, { apply = "add" })
    return function(i, j, v)
      B[j][1] = B[j][1] + 1
      B[j][2] = B[j][2] - i * i
      acc:add(1)
    end
  end,
  -- Float sums through a buffer, in fast mode.
  buffer_fast = function(R, W, H, I, acc, J)
    local B = orion.buffer(W, { apply = "add" })
    return function(i, j, v)
      B[i][1] = B[i][1] + v * j
      B[i][4] = 0.5 + B[i][4]
    end
  end,
  -- math.random and a buffer on one block, a 1 x 1 grid: the CPU's draws.
  random_grid1 = function(R, W, H, I, acc, J)
    local B = orion.buffer(J, { apply = "add" })
    return function(i, j, v)
      local t = math.random(1, 40)
      B[t][1] = B[t][1] + 1
      B[t][2] = B[t][2] + math.random(1000)
      acc:add(math.random() < 0.5 and 1 or 0)
    end
  end,
  -- Integers, 1d on i: wrap-around, floor division, modulo.
  ints = function(R, W, H, I, acc)
    return function(i, j, v)
      local n = i * 1000003 - 500000 * j
      I[i][1] = I[i][1] + n // 7
      I[i][2] = I[i][2] ~ (n % -7)
      I[i][3] = (math.maxinteger - i) + j * 1000 + I[i][3]
      I[i][4] = (n << 3) ~ (n >> 2)
      acc:add(n % 13)
    end
  end,
  -- The element's own value, returned: none (no dependences).
  scale = function(R, W, H, I, acc)
    return function(i, j, v)
      acc:add(1)
      return v * 2 + i - j
    end
  end,
}

local names = {}
for name in pairs(bodies) do names[#names + 1] = name end
table.sort(names)

local function worst_diff(a, b, exact)
  local ta, tb = a:to_table(), b:to_table()
  local worst = 0.0
  for i = 1, #ta do
    for j = 1, #ta[i] do
      local x, y = ta[i][j], tb[i][j]
      if exact or math.type(x) == "integer" then
        if x ~= y and not (x ~= x and y ~= y) then return math.huge end
      else
        local d = math.abs(x - y) / math.max(math.abs(y), 1e-3)
        if d > worst then worst = d end
      end
    end
  end
  return worst
end

local function sumsq(a)
  local s = 0.0
  for _, row in ipairs(a:to_table()) do
    for _, x in ipairs(row) do s = s + x * x end
  end
  return s
end

-- The accumulator and the sums of squares of W and H after the body ran
-- on the CPU with `parts` partitions per dimension.
local function cpu_aggregate(name, parts)
  local R, W, H, I, J = inputs()
  local acc = orion.accumulator("sum", 0)
  orion.parallel_for(R, bodies[name](R, W, H, I, acc, J),
    { tier = "c", partitions = { parts, parts } })
  return { acc = acc:get(), W = sumsq(W), H = sumsq(H) }
end

for _, name in ipairs(names) do
  local res = {}
  local tol = 1e-9
  for _, tier in ipairs { "c", "gpu" } do
    local R, W, H, I, J = inputs()
    local acc = orion.accumulator("sum", 0)
    local o = { tier = tier }
    for k, v in pairs(opts[name] or {}) do o[k] = v end
    local st = orion.parallel_for(R, bodies[name](R, W, H, I, acc, J), o)
    res[tier] = { R = R, W = W, H = H, I = I, J = J, acc = acc:get(), tier = st.tier }
  end
  local want = expect == "gpu" and "gpu" or "c"
  assert(res.gpu.tier == want, ("%s: tier \"gpu\" ran tier %s, expected %s")
    :format(name, res.gpu.tier, want))
  local exact = expect ~= "gpu"
  local agg = not exact and aggregate[name]
  if agg then
    local refs = {}
    for _, p in ipairs(agg.parts) do refs[#refs + 1] = cpu_aggregate(name, p) end
    local got = { acc = res.gpu.acc, W = sumsq(res.gpu.W), H = sumsq(res.gpu.H) }
    for _, k in ipairs { "acc", "W", "H" } do
      local lo, hi = math.huge, -math.huge
      for _, r in ipairs(refs) do
        lo, hi = math.min(lo, r[k]), math.max(hi, r[k])
      end
      local ok = got[k] >= lo * (1 - agg.widen) and got[k] <= hi * (1 + agg.widen)
      print(("%s: %s: %.9g (gpu), CPU orders %.9g .. %.9g (widened by %g)")
        :format(name, k == "acc" and "accumulator" or "sum of squares of " .. k,
          got[k], lo, hi, agg.widen))
      assert(ok, ("%s: %s lies outside the CPU orders' spread"):format(name, k))
    end
  end
  for _, k in ipairs(agg and {} or { "R", "W", "H", "I", "J" }) do
    local d = worst_diff(res.gpu[k], res.c[k], exact)
    print(("%s: array %s: max relative difference %.3g (tolerance %s)")
      :format(name, k, d, exact and "0" or tostring(tol)))
    assert(d <= (exact and 0 or tol), ("%s: array %s differs between tiers c and gpu")
      :format(name, k))
  end
  local a, b = res.gpu.acc, res.c.acc
  local same = agg or math.type(a) == "integer" and a == b or
    (not exact and math.abs(a - b) / math.max(math.abs(b), 1e-3) <= tol) or
    string.pack("<d", a) == string.pack("<d", b)
  print(("%s: accumulator %s (gpu) vs %s (c)"):format(name, tostring(a), tostring(b)))
  assert(same, name .. ": the accumulators differ")
  print(("gpu tier agrees: %s (ran %s)"):format(name, res.gpu.tier))
end
