-- Topics of new documents under a trained model (apps/lda/lda.lua's
-- --test and apps/lda/infer.lua, MALLET's infer-topics): Gibbs sampling
-- of the new tokens' topics with the topic-word counts held fixed,
--
--   p(z = k) ~ (alpha_k + n_dk) (beta + n_wk) / (n_k + V beta),
--
-- n_dk the document's own counts.  Each sweep is one parallel_for over
-- the new tokens: it writes only the document's counts and reads the
-- model, so it runs 1-D over the documents, in a fixed number of blocks
-- (the random numbers are drawn per block: the same bits on any number
-- of executors).
--
-- Held-out perplexity (--test), document completion: the tokens with
-- (word + occurrence) even are observed and sampled; the others are
-- scored with the last sample, log sum_k theta_dk phi_kw, theta_dk =
-- (n_dk + alpha_k) / (n_d + sum alpha), phi_kw = (n_wk + beta) / (n_k +
-- V beta).  Perplexity = exp(-sum / scored tokens).  The sums are kept
-- per document and added on the driver in document order.

local orion = require "orion"

local lda_text = require "lda_text"

local M = {}

-- New documents as a token array: raw text (a folder, or a file whose
-- first line is not a UCI header) imported with the model's vocabulary
-- (vocab, a list; o: the --import options), or a UCI docword file.
function M.load_docs(path, vocab, o)
  local f = io.open(path, "r")
  local first = f and f:read("l")
  if f then f:close() end
  if vocab and not (first and first:match("^%s*%d+%s*$")) then
    local vpath = os.tmpname()
    lda_text.write_lines(vpath, vocab)
    local ok, r = pcall(lda_text.import, path, { stoplist = "none", vocab = vpath,
                                                  skip_header = o.skip_header })
    os.remove(vpath)
    if not ok then error(r, 0) end
    local ok2, t = pcall(orion.text_file, r.docword, { format = "uci-bow", expand = true, value_type = "i32" })
    r.cleanup()
    if not ok2 then error(t, 0) end
    return t, r.names
  end
  return orion.text_file(path, { format = "uci-bow", expand = true, value_type = "i32" })
end

local PARTS = 8

-- m: { tokens = the new documents' token array (values 0), nwk = the
-- model's W x K counts (array), nk = topic sizes (list), alpha (list),
-- beta, iters, burn_in (sweeps before the average of infer starts),
-- half (true: --test's observed half only) }.  Returns { ndk = D x K
-- counts of the last sweep, acc = their sum over the sweeps after
-- burn_in (nil when half), samples = how many, dlen = observed tokens
-- per document (list) }.
function M.fold(m)
  local tokens, nwk = m.tokens, m.nwk
  local D, W = tokens:dims()
  local V, K = nwk:dims()
  if W > V then
    error(("the new documents have %d words, the model %d"):format(W, V), 0)
  end
  local beta, half = m.beta, m.half and 1 or 0
  local alph, inv = orion.zeros { K }, orion.zeros { K }
  local asum = 0.0
  for k = 1, K do
    alph:set(k, m.alpha[k])
    inv:set(k, 1.0 / (m.nk[k] + V * beta))
    asum = asum + m.alpha[k]
  end
  local ndk = orion.zeros { D, K, type = "i32" }
  local acc = (not m.half) and orion.zeros { D, K } or nil
  local lopts = { partitions = { PARTS }, space = 1 }
  local function sweep(d, w, o, z)
    if half == 1 and (w + o) % 2 == 1 then return z end
    local nd, nw = ndk[d], nwk[w]
    if z > 0 then nd[z] = nd[z] - 1 end
    local total = 0.0
    for k = 1, K do total = total + (alph[k] + nd[k]) * (beta + nw[k]) * inv[k] end
    local u = math.random() * total
    local t = K
    for k = 1, K do
      u = u - (alph[k] + nd[k]) * (beta + nw[k]) * inv[k]
      if u < 0 then
        t = k
        break
      end
    end
    nd[t] = nd[t] + 1
    return t
  end
  local samples = 0
  for it = 1, m.iters do
    orion.parallel_for(tokens, sweep, lopts)
    if acc and it > m.burn_in then
      orion.parallel_for(ndk, function(d, k, c)
        local a = acc[d]
        a[k] = a[k] + c
      end)
      samples = samples + 1
    end
  end
  local dlen = {}
  for d, row in ipairs(ndk:to_table()) do
    local n = 0
    for k = 1, K do n = n + row[k] end
    dlen[d] = n
  end
  return { ndk = ndk, acc = acc, samples = samples, dlen = dlen, alph = alph,
           inv = inv, asum = asum }
end

-- The held-out half's log-likelihood after M.fold(m with half = true):
-- returns the sum, the scored tokens and the perplexity.
function M.perplexity(m, f)
  local tokens, nwk, ndk = m.tokens, m.nwk, f.ndk
  local D = tokens:dims()
  local _, K = nwk:dims()
  local beta, alph, inv, asum = m.beta, f.alph, f.inv, f.asum
  local dll = orion.zeros { D }
  local dcount = orion.zeros { D, type = "i32" }
  orion.parallel_for(tokens, function(d, w, o, z)
    if (w + o) % 2 == 1 then
      local nd, nw = ndk[d], nwk[w]
      local n = 0
      for k = 1, K do n = n + nd[k] end
      local p = 0.0
      for k = 1, K do p = p + (alph[k] + nd[k]) * (beta + nw[k]) * inv[k] end
      dll[d] = dll[d] + math.log(p / (n + asum))
      dcount[d] = dcount[d] + 1
    end
  end, { partitions = { PARTS }, space = 1 })
  local ll, n = 0.0, 0
  local counts = dcount:to_table()
  for d, x in ipairs(dll:to_table()) do
    ll = ll + x
    n = n + counts[d]
  end
  if n == 0 then error("--test: no held-out token to score (every document has fewer than 2 tokens?)", 0) end
  return ll, n, math.exp(-ll / n)
end

-- Topic proportions per document after M.fold (the average over the
-- samples after burn-in, or the last sample when there are none), as a
-- table of rows.
function M.proportions(m, f)
  local rows = (f.samples > 0 and f.acc or f.ndk):to_table()
  local S = f.samples > 0 and f.samples or 1
  local out = {}
  for d, row in ipairs(rows) do
    local den = f.dlen[d] + f.asum
    local p = {}
    for k = 1, #m.alpha do p[k] = (row[k] / S + m.alpha[k]) / den end
    out[d] = p
  end
  return out
end

return M
