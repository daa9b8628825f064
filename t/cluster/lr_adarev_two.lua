-- The two-loop version of apps/lr/lr.lua --optimizer adarev (issue 21):
--
--   orion-driver lr_adarev_two.lua TRAIN TEST EPOCHS ALPHA BIAS(0/1) REG OUT
--
-- lr.lua applies AdaRevision in its buffer's apply function, reading and
-- writing each weight's state in helper arrays, one loop per epoch.  Here
-- each epoch is two loops with no apply function: the first sums each
-- block's gradients per weight into P[block][k] (and counts them in
-- C[block][k]) through "add" buffers, the second walks the weights and
-- applies, per block in ascending order, the same AdaRevision step
-- (apps/lr/lr_adarev.lua) to the weight and its state.  That is what
-- lr.lua's flush = "loop" buffer does (each block's pending writes are
-- applied in block order, keys ascending), so the weights written to OUT
-- (%.17g, one per line, the intercept last) must be the same bits.  The
-- blocks are the runtime's: 8 equal parts of the samples' keys,
-- floor(n * p / 8) (docs/design-notes.md, "Partitioning").
local orion = require "orion"
local dir = arg[0]:match("^(.*/)") or "./"
local app = dir .. "../../apps/lr/"
local eval = dofile(app .. "lr_eval.lua")
local adarev = dofile(app .. "lr_adarev.lua")

local train, test, epochs = arg[1], arg[2], math.tointeger(tonumber(arg[3]))
local alpha, use_bias, reg, out = tonumber(arg[4]), math.tointeger(tonumber(arg[5])), tonumber(arg[6]), arg[7]

local X, labels = orion.text_file(train, { format = "libsvm", rows = true })
local Ytr = labels:map(function(i, v) return eval.class(v, train, i) end)
local Xte = orion.text_file(test, { format = "libsvm", rows = true })
local ntr, nf = X:dims()
local _, nf2 = Xte:dims()
nf = math.max(nf, nf2)
local bias, NB = nf + 1, 8

local W = orion.zeros { nf + 1 }
local Gsum, Gold, Stamp = orion.zeros { nf + 1 }, orion.zeros { nf + 1 }, orion.zeros { nf + 1 }
local Z = orion.array { nf + 1, init = adarev.DELTA }
local Zmax = orion.array { nf + 1, init = adarev.DELTA }
local step, lr, pass = adarev.step, -1, 0

for epoch = 1, epochs do
  pass = epoch
  local P = orion.zeros { NB, nf + 1 }
  local C = orion.zeros { NB, nf + 1, type = "i64" }
  local PB = orion.buffer(P, { apply = "add", flush = "loop" })
  local CB = orion.buffer(C, { apply = "add", flush = "loop" })
  -- Loop 1: the gradients, as lr.lua's body computes them, per block.
  orion.parallel_for(X, function(i, row)
    local b = NB - 1
    while (ntr * b) // NB > i - 1 do b = b - 1 end
    b = b + 1
    local z = W[bias]
    for j = 1, #row do z = z + W[row:key(j)] * row:value(j) end
    local p = 1 / (1 + math.exp(-z))
    local y = Ytr[i]
    local g = lr * (y - p)
    for j = 1, #row do
      local k = row:key(j)
      PB[b][k] = PB[b][k] + g * row:value(j) - lr * reg * W[k]
      CB[b][k] = CB[b][k] + 1
    end
    if use_bias == 1 then
      PB[b][bias] = PB[b][bias] + g
      CB[b][bias] = CB[b][bias] + 1
    end
  end)
  -- Loop 2: every weight takes its blocks' steps, in block order.
  orion.parallel_for(W, function(k, w)
    local gsum, z, zmax, gold, stamp = Gsum[k], Z[k], Zmax[k], Gold[k], Stamp[k]
    for b = 1, NB do
      if C[b][k] > 0 then
        w, gsum, z, zmax, gold, stamp = step(alpha, pass, w, P[b][k], gsum, z, zmax, gold, stamp)
      end
    end
    Gsum[k] = gsum
    Z[k] = z
    Zmax[k] = zmax
    Gold[k] = gold
    Stamp[k] = stamp
    return w
  end)
end
local f = assert(io.open(out, "w"))
for _, w in ipairs(W:to_table()) do f:write(("%.17g\n"):format(w)) end
f:close()
print(("two loops: %d epochs, %d weights written to %s"):format(epochs, nf + 1, out))
