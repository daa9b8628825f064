-- Dynamic block assignment (scheduler/loop.h): whichever executor runs a
-- block, the results are the bits of a run inside the driver.  A 2-D SGD
-- loop with resident W (space-keyed) and H (time-keyed) rows, early
-- dispatch and an accumulator folded in block order, three epochs
-- (placed as $ORION_ASSIGN says); then a 1-D loop with assign = "dynamic"
-- whose buffered writes (flush = "loop") are applied in block order; then
-- the script reads W and H back.  stdout: the exact bits of
-- every result; stderr: "blocks LOOP ASSIGN n0 n1 ..." (parallel_for's
-- executor_blocks) for t/test_cluster.c.
local orion = require "orion"

local train = orion.synthetic_ratings { users = 800, items = 500, ratings = 24000, seed = 9 }
local nu, ni = train:dims()
local K = 8
local W = orion.randn { nu, K, scale = 0.1, seed = 3 }
local H = orion.randn { ni, K, scale = 0.1, seed = 4 }
local sse = orion.accumulator("sum", 0.0)
local lr, reg = 0.02, 0.05

local function bits(x) return ("%a"):format(x) end
local function checksum(A)
  local s, n = 0.0, 0
  for _, row in ipairs(A:to_table()) do
    for _, v in ipairs(type(row) == "table" and row or { row }) do
      n = n + 1
      s = s + v * (1 + (n % 7) * 1e-3)
    end
  end
  return bits(s)
end
local function blocks(what, st)
  io.stderr:write(("blocks %s %s %s\n"):format(what, st.assign,
    table.concat(st.executor_blocks, " ")))
end

for ep = 1, 3 do
  sse:reset()
  local st = orion.parallel_for(train, function(u, i, r)
    local wu, hi = W[u], H[i]
    local e = r
    for k = 1, K do e = e - wu[k] * hi[k] end
    sse:add(e * e)
    for k = 1, K do
      local w, h = wu[k], hi[k]
      wu[k] = w + lr * (e * h - reg * w)
      hi[k] = h + lr * (e * w - reg * h)
    end
  end)
  print("epoch " .. ep, st.schedule, "rmse", bits(math.sqrt(sse:get() / train:nnz())))
  blocks("epoch" .. ep, st)
end

-- Per-item sums of the ratings' residuals through a buffer, applied at the
-- end of the loop in block order (so a floating-point sum does not depend
-- on who ran which block).
local T = orion.zeros { ni }
local B = orion.buffer(T, { apply = "add", flush = "loop" })
local st = orion.parallel_for(train, function(u, i, r)
  local wu, hi = W[u], H[i]
  local e = r
  for k = 1, K do e = e - wu[k] * hi[k] end
  B[i] = e
end, { schedule = "1d", assign = "dynamic" })
print("buffer", st.schedule, checksum(T))
blocks("buffer", st)
print("final W", checksum(W), "H", checksum(H))
local ok, err = pcall(orion.parallel_for, train, function() end, { assign = "sometimes" })
print("assign = \"sometimes\":", ok, err)
