-- The general loop bodies of apps/mf/mf.lua: every --loss but the plain
-- squared one, --bias, --nmf, --l1-w/--l1-h and --cv (docs/apps-mf.md,
-- "Losses, biases, NMF and L1").  mf.lua loads this file only for them,
-- so the plain path's file (which the analysis compiles again at each
-- loop) stays as small as it was.
--
--   local gen = dofile("apps/mf/mf_general.lua")
--   gen.setup { K = 32, ni = 3706, loss = 5, ... }   -- once
--   gen.set { W = W, H = H, lr = lr, salt = ..., ... } -- before each loop
--   orion.parallel_for(train, gen.train, opts)
--
-- One body for every loss, on the ratings (explicit losses) or, one-class,
-- on every cell of Y (1: a training positive, 0 or 2: not; 2 marks a test
-- positive, which training treats as any unobserved cell).  Its switches
-- are numbers (a captured boolean would keep the body out of the compiled
-- tier).  Two hashes of the keys decide, the same on any number of
-- executors and partitions: which --cv fold a rating belongs to (salt
-- CVSALT), and which unobserved cells are this epoch's negatives (salt
-- SALT, new each epoch; cell (u, i) is one when the hash's low 24 bits are
-- below RATE[u], the user's sampling rate times 2^24).

local orion = require "orion"

local M = {}

-- What the bodies read, as upvalues captured when each loop starts: set
-- once by M.setup, and before each loop by M.set.
local K, ni, LOSS, OC, POS, NEG, ALPHA, BIAS, NMF, RK = 1, 1, 0, 0, 0.0, 0.0, 1.0, 0, 0, 10
local regw, regh, regb, l1w, l1h = 0.0, 0.0, 0.0, 0.0, 0.0
local NFOLD, FOLD, CVSALT, SALT, lr, mu = 0, 0, 0, 0, 0.0, 0.0
local W, H, BU, BI, RATE, Y, S
local train_sse, test_sse
local train_n = orion.accumulator("sum", 0.0)
local test_n = orion.accumulator("sum", 0.0)
local test_hit = orion.accumulator("sum", 0.0)
local oc_auc = orion.accumulator("sum", 0.0)
local oc_mpr = orion.accumulator("sum", 0.0)
local oc_recall = orion.accumulator("sum", 0.0)
local oc_users = orion.accumulator("sum", 0.0)
local oc_pos = orion.accumulator("sum", 0.0)
M.train_n, M.test_n, M.test_hit = train_n, test_n, test_hit
M.oc = { auc = oc_auc, mpr = oc_mpr, recall = oc_recall, users = oc_users, pos = oc_pos }

-- c: K, ni, loss (LIBMF's -f code; 13: one-class logistic), pos, neg,
-- alpha, bias, nmf (0 or 1), recall_k, reg_w, reg_h, reg_b, l1_w, l1_h,
-- nfold, cvsalt, and the accumulators train_sse and test_sse.
function M.setup(c)
  K, ni, LOSS, POS, NEG, ALPHA = c.K, c.ni, c.loss, c.pos, c.neg, c.alpha
  OC = LOSS >= 12 and 1 or 0
  BIAS, NMF, RK = c.bias, c.nmf, c.recall_k
  regw, regh, regb, l1w, l1h = c.reg_w, c.reg_h, c.reg_b, c.l1_w, c.l1_h
  NFOLD, CVSALT = c.nfold, c.cvsalt
  train_sse, test_sse = c.train_sse, c.test_sse
end

-- s: the arrays W, H, BU, BI, RATE, Y, S (those the run has), lr, mu,
-- fold (the --cv fold held out, 1..nfold) and salt (the epoch's).
function M.set(s)
  W, H, BU, BI, RATE, Y, S = s.W, s.H, s.BU, s.BI, s.RATE, s.Y, s.S
  lr, mu, FOLD, SALT = s.lr, s.mu, s.fold or 0, s.salt or 0
end

-- The --cv fold (0 .. NFOLD - 1) of rating (u, i), as the bodies compute
-- it inline (a body calls no helper, to stay in the compiled tier).
function M.fold_of(u, i)
  local f = u * 0x9E3779B1 + i * 0x85EBCA77 + CVSALT
  f = (f ~ (f >> 15)) * 0x2C1B3C6D
  f = f ~ (f >> 13)
  return f % NFOLD
end

local function sgd_general(u, i, v)
  if NFOLD > 0 then
    local f = u * 0x9E3779B1 + i * 0x85EBCA77 + CVSALT
    f = (f ~ (f >> 15)) * 0x2C1B3C6D
    f = f ~ (f >> 13)
    if f % NFOLD == FOLD - 1 then return end
  end
  local r, y, wt = v, 1.0, 1.0
  if OC == 1 then
    if v == 1 then
      r = 1.0
    else
      local h = u * 0x9E3779B1 + i * 0x85EBCA77 + SALT
      h = (h ~ (h >> 15)) * 0x2C1B3C6D
      h = (h ~ (h >> 12)) * 0x297A2D39
      h = h ~ (h >> 15)
      if (h & 0xFFFFFF) >= RATE[u] then return end
      r, y, wt = NEG, -1.0, ALPHA
    end
  elseif r < POS then
    y = -1.0
  end
  local wu, hi = W[u], H[i]
  local z = mu + BU[u] + BI[i]
  for k = 1, K do z = z + wu[k] * hi[k] end
  local g, l
  if LOSS == 5 or LOSS == 13 then
    -- log(1 + exp(-y z)), and its slope y / (1 + exp(y z)), without overflow
    local m = -y * z
    if m > 0 then
      l = m + math.log(1 + math.exp(-m))
      g = y / (1 + math.exp(-m))
    else
      local e = math.exp(m)
      l = math.log(1 + e)
      g = y * e / (1 + e)
    end
  elseif LOSS == 1 then
    local e = r - z
    l = math.abs(e)
    g = 0.0
    if e > 0 then g = 1.0 elseif e < 0 then g = -1.0 end
  else
    g = r - z
    l = g * g
  end
  train_sse:add(wt * l)
  train_n:add(1)
  g = wt * g
  local tw, th = lr * l1w, lr * l1h
  for k = 1, K do
    local w, h = wu[k], hi[k]
    local nw = w + lr * (g * h - regw * w)
    local nh = h + lr * (g * w - regh * h)
    -- L1: a proximal step, the soft threshold at lr * l1
    if tw > 0 then
      if nw > tw then nw = nw - tw elseif nw < -tw then nw = nw + tw else nw = 0.0 end
    end
    if th > 0 then
      if nh > th then nh = nh - th elseif nh < -th then nh = nh + th else nh = 0.0 end
    end
    if NMF == 1 then
      if nw < 0 then nw = 0.0 end
      if nh < 0 then nh = 0.0 end
    end
    wu[k] = nw
    hi[k] = nh
  end
  if BIAS == 1 then
    local bu, bi = BU[u], BI[i]
    BU[u] = bu + lr * (g - regb * bu)
    BI[i] = bi + lr * (g - regb * bi)
  end
end

-- The held-out pass of the explicit losses: the --cv fold of the training
-- ratings, or the test ratings.  test_sse sums the squared or absolute
-- error or the logloss, test_hit the right signs (logistic).
local function evaluate_general(u, i, r)
  if NFOLD > 0 then
    local f = u * 0x9E3779B1 + i * 0x85EBCA77 + CVSALT
    f = (f ~ (f >> 15)) * 0x2C1B3C6D
    f = f ~ (f >> 13)
    if f % NFOLD ~= FOLD - 1 then return end
  end
  local wu, hi = W[u], H[i]
  local z = mu + BU[u] + BI[i]
  for k = 1, K do z = z + wu[k] * hi[k] end
  test_n:add(1)
  if LOSS == 5 then
    local y = -1.0
    if r >= POS then y = 1.0 end
    local m = -y * z
    if m > 0 then test_sse:add(m + math.log(1 + math.exp(-m))) else test_sse:add(math.log(1 + math.exp(m))) end
    if m < 0 then test_hit:add(1) end
  elseif LOSS == 1 then
    test_sse:add(math.abs(r - z))
  else
    test_sse:add((r - z) * (r - z))
  end
end

-- The score of each test rating, for the logistic loss's AUC.
local function score(u, i, r)
  local wu, hi = W[u], H[i]
  local z = mu + BU[u] + BI[i]
  for k = 1, K do z = z + wu[k] * hi[k] end
  return z
end

-- One-class evaluation, one user per iteration (as LIBMF's calc_mpr_auc):
-- every item is scored into S[u]; against the user's test positives
-- (Y = 2), every other item is a negative (training positives included,
-- as in LIBMF).  AUC: the share of (positive, negative) pairs ranked
-- right, averaged over users; MPR: the share of negatives scored at least
-- as high as a positive, averaged over positives; recall@k: the share of
-- the user's test positives that fewer than k items which are not
-- training positives outrank, averaged over users.
local function rank_user(u, v)
  local wu, yu, su = W[u], Y[u], S[u]
  local npos = 0
  for j = 1, ni do
    local hj = H[j]
    local z = 0.0
    for k = 1, K do z = z + wu[k] * hj[k] end
    su[j] = z
    if yu[j] == 2 then npos = npos + 1 end
  end
  if npos == 0 or npos == ni then return end
  local auc, mpr, hits = 0.0, 0.0, 0
  for p = 1, ni do
    if yu[p] == 2 then
      local sp = su[p]
      local below, ahead = 0, 0
      for j = 1, ni do
        local yj, sj = yu[j], su[j]
        if yj ~= 2 and sj < sp then below = below + 1 end
        if yj ~= 1 and j ~= p and sj > sp then ahead = ahead + 1 end
      end
      auc = auc + below
      mpr = mpr + (ni - npos - below)
      if ahead < RK then hits = hits + 1 end
    end
  end
  oc_auc:add(auc / (ni - npos) / npos)
  oc_mpr:add(mpr / (ni - npos))
  oc_recall:add(hits / npos)
  oc_users:add(1)
  oc_pos:add(npos)
end

M.train, M.evaluate, M.score, M.rank_user = sgd_general, evaluate_general, score, rank_user

return M
