-- Hyperparameter optimisation for apps/lda/lda.lua (--optimize-interval):
-- Minka's fixed-point iteration ("Estimating a Dirichlet distribution",
-- 2000; as MALLET runs it, from count histograms) for an asymmetric
-- document-topic prior alpha_k and a symmetric topic-word prior beta.
--
--   alpha_k <- alpha_k * sum_d [psi(n_dk + alpha_k) - psi(alpha_k)]
--                      / sum_d [psi(N_d + sum alpha) - psi(sum alpha)]
--   beta    <- beta * sum_{w,k} [psi(n_wk + beta) - psi(beta)]
--                   / (V * sum_k [psi(n_k + V beta) - psi(V beta)])
--
-- Each sum runs over histograms (a count value -> how many documents,
-- or (word, topic) pairs, have it), so an iteration costs the number of
-- distinct counts, not of tokens.  Everything runs on the driver from
-- integer histograms, so the result does not depend on the executors.

local M = {}

-- The digamma function for x > 0: the recurrence up to x >= 6, then the
-- asymptotic series (absolute error below 1e-12).
local function digamma(x)
  local r = 0.0
  while x < 6 do
    r = r - 1 / x
    x = x + 1
  end
  local f = 1 / (x * x)
  return r + math.log(x) - 0.5 / x
    - f * (1 / 12 - f * (1 / 120 - f * (1 / 252 - f * (1 / 240 - f / 132))))
end
M.digamma = digamma

-- sum over hist (value -> count) of count * (psi(value + a) - psi(a)).
local function psi_sum(hist, a)
  local s, pa = 0.0, digamma(a)
  for n, c in pairs(hist) do s = s + c * (digamma(n + a) - pa) end
  return s
end

-- Sorted keys, so that sums are added in the same order on every run.
local function sorted(hist)
  local keys = {}
  for n in pairs(hist) do keys[#keys + 1] = n end
  table.sort(keys)
  local out = {}
  for i, n in ipairs(keys) do out[i] = { n, hist[n] } end
  return out
end

local function psi_sum_sorted(list, a)
  local s, pa = 0.0, digamma(a)
  for _, e in ipairs(list) do s = s + e[2] * (digamma(e[1] + a) - pa) end
  return s
end

-- New alpha (a list of K) from doc_hist[k] (n_dk value -> documents,
-- values > 0) and len_hist (N_d -> documents).  iters: fixed-point steps
-- (stops early when no alpha_k moves by 1e-7 relatively).  A topic no
-- document uses keeps a floor of 1e-6 of the mean alpha.
function M.alpha(alpha, doc_hist, len_hist, iters)
  local K = #alpha
  local a = {}
  for k = 1, K do a[k] = alpha[k] end
  local lens = sorted(len_hist)
  local hs = {}
  for k = 1, K do hs[k] = sorted(doc_hist[k]) end
  for _ = 1, iters or 20 do
    local asum = 0.0
    for k = 1, K do asum = asum + a[k] end
    local den = psi_sum_sorted(lens, asum)
    local moved = 0.0
    local floor = 1e-6 * asum / K
    for k = 1, K do
      local new = a[k] * psi_sum_sorted(hs[k], a[k]) / den
      if new < floor then new = floor end
      moved = math.max(moved, math.abs(new - a[k]) / a[k])
      a[k] = new
    end
    if moved < 1e-7 then break end
  end
  return a
end

-- New beta from word_hist (n_wk value -> (word, topic) pairs, values > 0),
-- the topic sizes n_k (a list) and V.
function M.beta(beta, word_hist, sizes, V, iters)
  local words = sorted(word_hist)
  local size_hist = {}
  for _, n in ipairs(sizes) do
    if n > 0 then size_hist[n] = (size_hist[n] or 0) + 1 end
  end
  local ns = sorted(size_hist)
  local b = beta
  for _ = 1, iters or 200 do
    local new = b * psi_sum_sorted(words, b) / (V * psi_sum_sorted(ns, V * b))
    local moved = math.abs(new - b) / b
    b = new
    if moved < 1e-9 then break end
  end
  return b
end

M.psi_sum = psi_sum

return M
