-- lr.lua --solver newton: L2-regularised logistic regression by a
-- trust-region Newton method (Lin, Weng and Keerthi, "Trust Region Newton
-- Method for Large-Scale Logistic Regression", JMLR 2008; liblinear's
-- -s 0), written for Orion: every function, gradient and Hessian-vector
-- evaluation is one parallel_for over the distributed training rows,
-- and the conjugate-gradient steps between them run on the driver.
--
--   min_w  0.5 w.w + sum_i C cw_i log(1 + exp(-y_i w.x_i))
--
-- (cw_i the class weight of row i, y_i = +1 for the column's class and -1
-- for the others; the intercept, with --bias, is a weight like the
-- others, as liblinear's -B 1).  The sums over rows go through buffers
-- with flush = "loop", applied block by block in block order, so every
-- evaluation, and so the weights, are the same bits on any number of
-- executors.  A one-vs-rest model trains its columns one after another.

local orion = require "orion"

local M = {}

local function dot(a, b, m)
  local s = 0.0
  for k = 1, m do s = s + a[k] * b[k] end
  return s
end

-- Sets every element of the 1-D DistArray A to T[k] (or 0 without T):
-- one A:assign, not m calls of A:set (at a million features the calls
-- took longer than a pass over the rows).
local function upload(A, T)
  A:assign(T or 0.0)
end

-- A solver over the training rows X (ragged), their classes Y (a dense
-- DistArray of class numbers), the class weights CW (a dense DistArray,
-- one per class), nf features, an intercept when use_bias is 1, and the
-- strength C.  Returns a function(col, eps, max_iter, log) that trains
-- the binary problem "class col against the rest" and returns its
-- weights (a list of nf + 1, the intercept last), the Newton iterations
-- and the data passes it took.
function M.new(X, Y, CW, nf, use_bias, C, tier)
  local m = nf + 1
  local bias = m
  local ntr = X:dims()
  local WN, V = orion.zeros { m }, orion.zeros { m }
  local Gsum, Hsum, F = orion.zeros { m }, orion.zeros { m }, orion.zeros { 1 }
  local D = orion.zeros { math.max(ntr, 1) }
  local GB = orion.buffer(Gsum, { apply = "add", flush = "loop" })
  local HB = orion.buffer(Hsum, { apply = "add", flush = "loop" })
  local FB = orion.buffer(F, { apply = "add", flush = "loop" })
  local loop_opts = { tier = tier }
  local passes = 0
  local col = 1

  -- f and the loss part of the gradient at WN; each row's curvature
  -- C cw s (1 - s) goes to D for the Hessian-vector products.
  local function fg_body(i, row)
    local z = 0.0
    if use_bias == 1 then z = WN[bias] end
    for j = 1, #row do z = z + WN[row:key(j)] * row:value(j) end
    local cl = Y[i]
    local y = -1.0
    if cl == col then y = 1.0 end
    local cc = C * CW[cl]
    local yz = y * z
    local l
    if yz >= 0 then l = math.log(1 + math.exp(-yz)) else l = -yz + math.log(1 + math.exp(yz)) end
    FB[1] = FB[1] + cc * l
    local s = 1 / (1 + math.exp(-yz))
    D[i] = cc * s * (1 - s)
    local g = cc * (s - 1) * y
    for j = 1, #row do
      local k = row:key(j)
      GB[k] = GB[k] + g * row:value(j)
    end
    if use_bias == 1 then GB[bias] = GB[bias] + g end
  end

  local function hv_body(i, row)
    local xv = 0.0
    if use_bias == 1 then xv = V[bias] end
    for j = 1, #row do xv = xv + V[row:key(j)] * row:value(j) end
    local t = D[i] * xv
    for j = 1, #row do
      local k = row:key(j)
      HB[k] = HB[k] + t * row:value(j)
    end
    if use_bias == 1 then HB[bias] = HB[bias] + t end
  end

  local function fg(w)
    upload(WN, w)
    upload(Gsum)
    F:set(1, 0.0)
    orion.parallel_for(X, fg_body, loop_opts)
    passes = passes + 1
    local gs = Gsum:to_table()
    local f = 0.5 * dot(w, w, m) + F:get(1)
    local g = {}
    for k = 1, m do g[k] = w[k] + gs[k] end
    return f, g
  end

  local function hv(d)
    upload(V, d)
    upload(Hsum)
    orion.parallel_for(X, hv_body, loop_opts)
    passes = passes + 1
    local hs = Hsum:to_table()
    local h = {}
    for k = 1, m do h[k] = d[k] + hs[k] end
    return h
  end

  -- Conjugate gradients for H s = -g inside the trust region |s| <= delta
  -- (Steihaug): stops at |r| <= 0.1 |g|, or on the region's boundary.
  local function trcg(delta, g)
    local s, r, d = {}, {}, {}
    for k = 1, m do s[k] = 0.0; r[k] = -g[k]; d[k] = r[k] end
    local rtr = dot(r, r, m)
    local cgtol = 0.1 * math.sqrt(dot(g, g, m))
    local iters = 0
    while math.sqrt(rtr) > cgtol do
      iters = iters + 1
      local hd = hv(d)
      local alpha = rtr / dot(d, hd, m)
      for k = 1, m do s[k] = s[k] + alpha * d[k] end
      if math.sqrt(dot(s, s, m)) > delta then
        for k = 1, m do s[k] = s[k] - alpha * d[k] end
        local std, sts, dtd = dot(s, d, m), dot(s, s, m), dot(d, d, m)
        local dsq = delta * delta
        local rad = math.sqrt(std * std + dtd * (dsq - sts))
        if std >= 0 then alpha = (dsq - sts) / (std + rad) else alpha = (rad - std) / dtd end
        for k = 1, m do
          s[k] = s[k] + alpha * d[k]
          r[k] = r[k] - alpha * hd[k]
        end
        break
      end
      for k = 1, m do r[k] = r[k] - alpha * hd[k] end
      local rnew = dot(r, r, m)
      local beta = rnew / rtr
      for k = 1, m do d[k] = r[k] + beta * d[k] end
      rtr = rnew
    end
    return s, r, iters
  end

  return function(c, eps, max_iter, log)
    col, passes = c, 0
    local w = {}
    for k = 1, m do w[k] = 0.0 end
    local eta0, eta1, eta2 = 1e-4, 0.25, 0.75
    local sigma1, sigma2, sigma3 = 0.25, 0.5, 4.0
    local f, g = fg(w)
    local gnorm0 = math.sqrt(dot(g, g, m))
    local gnorm = gnorm0
    local delta = gnorm0
    local iter = 0
    while iter < max_iter and gnorm > eps * gnorm0 do
      iter = iter + 1
      local s, r, cg = trcg(delta, g)
      local wnew = {}
      for k = 1, m do wnew[k] = w[k] + s[k] end
      local gs = dot(g, s, m)
      local prered = -0.5 * (gs - dot(s, r, m))
      local fnew, gnew = fg(wnew)
      local actred = f - fnew
      local snorm = math.sqrt(dot(s, s, m))
      if iter == 1 then delta = math.min(delta, snorm) end
      local alpha
      if fnew - f - gs <= 0 then alpha = sigma3
      else alpha = math.max(sigma1, -0.5 * (gs / (fnew - f - gs))) end
      if actred < eta0 * prered then
        delta = math.min(math.max(alpha, sigma1) * snorm, sigma2 * delta)
      elseif actred < eta1 * prered then
        delta = math.max(sigma1 * delta, math.min(alpha * snorm, sigma2 * delta))
      elseif actred < eta2 * prered then
        delta = math.max(sigma1 * delta, math.min(alpha * snorm, sigma3 * delta))
      else
        delta = math.max(delta, math.min(alpha * snorm, sigma3 * delta))
      end
      local accepted = actred > eta0 * prered
      if accepted then
        w, f, g = wnew, fnew, gnew
        gnorm = math.sqrt(dot(g, g, m))
      else
        -- D holds the rejected point's curvature: evaluate w again.
        f, g = fg(w)
      end
      if log then log(iter, f, gnorm, cg, accepted) end
      if f < -1e32 then break end
      if math.abs(actred) <= 0 and prered <= 0 then break end
      if math.abs(actred) <= 1e-12 * math.abs(f) and math.abs(prered) <= 1e-12 * math.abs(f) then break end
    end
    return w, iter, passes
  end
end

return M
