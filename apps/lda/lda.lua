-- Latent Dirichlet allocation by collapsed Gibbs sampling (Orion-C built-in
-- app).
--
--   orion-driver apps/lda/lda.lua                    # embedded synthetic corpus
--   orion-driver apps/lda/lda.lua --corpus docword.kos.txt.gz \
--       --vocab vocab.kos.txt --k 100 --iters 100
--
-- The corpus is a UCI bag-of-words file, loaded with one element per token
-- occurrence: (doc, word, occurrence) -> topic.  Each iteration is one
-- parallel_for over the tokens.  Documents are the space dimension (the
-- doc-topic counts stay with their executor) and words the time dimension
-- (the word-topic counts rotate); the topic totals are written through an
-- orion.buffer and read as of the start of the iteration, as in AD-LDA and
-- MALLET's threads.  The default sampler is SparseLDA's bucket
-- decomposition (Yao, Mimno and McCallum, KDD 2009); --sampler dense draws
-- from the same conditional in O(K) per token.
--
-- One line per iteration: iter, seconds (sampling only), tokens/s, and the
-- joint log-likelihood log p(w, z) per token, computed as MALLET's
-- modelLogLikelihood and WarpLDA do.  With --metrics FILE (an orion-driver
-- option) each iteration is recorded with the keys iter, seconds,
-- tokens_per_s, ll_per_token, ll_seconds, elapsed and executors.
-- See docs/apps-lda.md.

local orion = require "orion"
local cli = require "orion.cli"

local spec = {
  name = "lda.lua",
  summary = "Collapsed Gibbs sampling LDA over a UCI bag-of-words corpus.",
  options = {
    { "corpus", "FILE", nil, "UCI docword.*.txt[.gz] (default: embedded synthetic corpus)" },
    { "vocab", "FILE", nil, "vocab.*.txt, one word per line, to print each topic's top words" },
    { "k", "N", 100, "number of topics" },
    { "iters", "N", 100, "Gibbs sweeps over the tokens" },
    { "alpha", "X", nil, "symmetric document-topic prior (default: 50/K)", type = "number" },
    { "beta", "X", 0.01, "symmetric topic-word prior" },
    { "seed", "N", 1, "seed of the initial topics and of the sampler" },
    { "sampler", "NAME", "sparse", "sparse (SparseLDA buckets) or dense (O(K) per token)" },
    { "ll-every", "N", 1, "compute the log-likelihood every N iterations (and after the last)" },
    { "partitions", "N", 0, "blocks per dimension of the sampling loop; 0: one per executor, at least 2" },
    { "top", "N", 10, "top words printed per topic (with a vocabulary; 0: none)" },
    { "save", "PATH", nil, "save the word-topic counts (W x K, i32) to PATH (.txt: text)" },
    { "save-assignments", "PATH", nil, "save each token's topic, (doc, word, occurrence) -> topic" },
  },
  epilog = "The corpus is plain or gzip-compressed.  Seconds and tokens/s exclude\n" ..
           "the log-likelihood evaluation, which is reported as ll_seconds.",
}

local opts = cli.parse(arg, spec)
if opts.k < 1 then cli.fail(spec, "--k must be at least 1") end
if opts.iters < 0 then cli.fail(spec, "--iters must not be negative") end
if opts.ll_every < 1 then cli.fail(spec, "--ll-every must be at least 1") end
if opts.partitions < 0 then cli.fail(spec, "--partitions must not be negative") end
if opts.top < 0 then cli.fail(spec, "--top must not be negative") end
local K = opts.k
local alpha = opts.alpha or 50.0 / K
local beta = opts.beta
if not (alpha > 0) then cli.fail(spec, "--alpha must be positive") end
if not (beta > 0) then cli.fail(spec, "--beta must be positive") end
if opts.sampler ~= "sparse" and opts.sampler ~= "dense" and opts.sampler ~= "exact" then
  cli.fail(spec, ("--sampler must be sparse, dense or exact, not '%s'"):format(opts.sampler))
end
if opts.vocab and not opts.corpus then cli.fail(spec, "--vocab needs --corpus") end
orion.seed(opts.seed)

-- lgamma for x > 0: Stirling's series after shifting x to at least 10
-- (absolute error below 1e-13).  The loop bodies below inline the same
-- steps, because a compiled body cannot call a Lua function.
local HALF_LOG_2PI = 0.91893853320467274178
local function lgamma(x)
  local shift = 1.0
  while x < 10 do shift = shift * x; x = x + 1 end
  local xi = 1 / x
  local x2 = xi * xi
  return (x - 0.5) * math.log(x) - x + HALF_LOG_2PI
    + xi * (1 / 12 - x2 * (1 / 360 - x2 * (1 / 1260 - x2 * (1 / 1680 - x2 / 1188))))
    - math.log(shift)
end

-- Data -----------------------------------------------------------------------

-- The embedded corpus: documents drawn from an LDA model with 10 topics
-- over 500 words (topic t favours words whose name starts with letter t),
-- written as a UCI docword file and read back like any corpus.
local function synthetic_corpus(seed)
  local T, V, D = 10, 500, 400
  math.randomseed(seed)
  local per = V // T
  local vocab = {}
  for w = 1, V do
    vocab[w] = ("%s%03d"):format(string.char(96 + (w - 1) // per + 1), (w - 1) % per + 1)
  end
  local lines, nnz, tokens = {}, 0, 0
  for d = 1, D do
    -- Each document mixes 1 to 3 topics.
    local topics, ntop = {}, math.random(1, 3)
    for i = 1, ntop do topics[i] = math.random(1, T) end
    local counts, len = {}, math.random(60, 140)
    for _ = 1, len do
      local w
      if math.random() < 0.1 then
        w = math.random(1, V)                           -- background noise
      else
        local t = topics[math.random(1, ntop)]
        local r = math.random()                         -- skewed within a topic
        w = (t - 1) * per + 1 + math.floor(per * r * r)
      end
      counts[w] = (counts[w] or 0) + 1
    end
    local ws = {}
    for w in pairs(counts) do ws[#ws + 1] = w end
    table.sort(ws)
    for _, w in ipairs(ws) do
      lines[#lines + 1] = ("%d %d %d"):format(d, w, counts[w])
      nnz = nnz + 1
      tokens = tokens + counts[w]
    end
  end
  local path = os.tmpname()
  local f = assert(io.open(path, "w"))
  f:write(("%d\n%d\n%d\n"):format(D, V, nnz), table.concat(lines, "\n"), "\n")
  f:close()
  return path, vocab
end

local corpus_path, vocab = opts.corpus, nil
local tmp_corpus
if not corpus_path then
  corpus_path, vocab = synthetic_corpus(opts.seed)
  tmp_corpus = corpus_path
end
-- One element per token occurrence, (doc, word, occurrence) -> topic.
local tokens
if tmp_corpus then
  local ok, t = pcall(orion.text_file, tmp_corpus,
                      { format = "uci-bow", expand = true, value_type = "i32" })
  os.remove(tmp_corpus)
  if not ok then error(t, 0) end
  tokens = t
else
  tokens = orion.text_file(corpus_path, { format = "uci-bow", expand = true, value_type = "i32" })
end
local D, V = tokens:dims()
local N = tokens:nnz()
if N == 0 then error(("%s: the corpus has no tokens"):format(corpus_path), 0) end

if opts.vocab then
  local f, err = io.open(opts.vocab, "r")
  if not f then error(("cannot open %s"):format(err), 0) end
  local text = f:read("a")
  f:close()
  vocab = {}
  for line in text:gmatch("[^\n]+") do
    local word = line:match("^%s*(.-)%s*$")
    if word ~= "" then vocab[#vocab + 1] = word end
  end
  -- Some copies of vocab.kos.txt carry a stray word after the last line
  -- end; a file with exactly one such extra word is accepted with a note.
  if #vocab == V + 1 and text:sub(-1) ~= "\n" then
    io.stderr:write(("lda.lua: note: %s has %d words, the last ('%s') without a line end; ignoring it\n")
      :format(opts.vocab, #vocab, vocab[#vocab]))
    vocab[#vocab] = nil
  end
  if #vocab ~= V then
    error(("%s: has %d words but %s has W = %d"):format(opts.vocab, #vocab, corpus_path, V), 0)
  end
end

-- Model state ----------------------------------------------------------------
-- ndk[d][k], nwk[w][k]: counts.  dlist[d][1..n] (n = dlist[d][K+1]) lists
-- the topics with ndk[d][k] > 0, in no order; wlist the same for words.
-- nk[k]: tokens per topic, written only through nk_add.  inv[k] =
-- 1 / (nk[k] + V * beta), fixed for an iteration.  dlen[d]: tokens in d.
local KP1 = K + 1
local Vbeta = V * beta
local ndk = orion.zeros { D, K, type = "i32" }
local nwk = orion.zeros { V, K, type = "i32" }
local dlist = orion.zeros { D, KP1, type = "i32" }
local wlist = orion.zeros { V, KP1, type = "i32" }
local nk = orion.zeros { K, type = "i64" }
local nk_add = orion.buffer(nk, { apply = "add", flush = "loop" })
local inv = orion.zeros { K }
local dlen = orion.zeros { D, type = "i32" }

print(("# lda: %d documents, %d words, %d tokens, K=%d, alpha=%g, beta=%g, sampler=%s")
  :format(D, V, N, K, alpha, beta, opts.sampler))

-- Random initial topics, and the counts and lists that follow from them.
local function init(d, w, o, z)
  local t = math.random(1, K)
  local nd, nw, dl, wl = ndk[d], nwk[w], dlist[d], wlist[w]
  if nd[t] == 0 then
    local n = dl[KP1] + 1
    dl[n] = t
    dl[KP1] = n
  end
  nd[t] = nd[t] + 1
  if nw[t] == 0 then
    local n = wl[KP1] + 1
    wl[n] = t
    wl[KP1] = n
  end
  nw[t] = nw[t] + 1
  nk_add[t] = nk_add[t] + 1
  dlen[d] = dlen[d] + 1
  return t
end

-- One Gibbs step with SparseLDA's buckets.  With the token taken out, the
-- conditional (alpha + ndk)(beta + nwk) inv[k] splits into
--   s = alpha beta inv[k]        (every topic: the total S is precomputed)
--   r = ndk beta inv[k]          (the document's topics)
--   q = (alpha + ndk) nwk inv[k] (the word's topics)
local S = 0.0
local function sample_sparse(d, w, o, z)
  local nd, nw, dl, wl = ndk[d], nwk[w], dlist[d], wlist[w]
  -- Take the token out; a count that drops to 0 leaves its list.
  local c = nd[z] - 1
  nd[z] = c
  local ndn = dl[KP1]
  if c == 0 then
    for j = 1, ndn do
      if dl[j] == z then
        dl[j] = dl[ndn]
        break
      end
    end
    ndn = ndn - 1
    dl[KP1] = ndn
  end
  c = nw[z] - 1
  nw[z] = c
  local nwn = wl[KP1]
  if c == 0 then
    for j = 1, nwn do
      if wl[j] == z then
        wl[j] = wl[nwn]
        break
      end
    end
    nwn = nwn - 1
    wl[KP1] = nwn
  end
  -- The bucket masses.
  local r = 0.0
  for j = 1, ndn do
    local t = dl[j]
    r = r + nd[t] * inv[t]
  end
  r = r * beta
  local q = 0.0
  for j = 1, nwn do
    local t = wl[j]
    q = q + (alpha + nd[t]) * nw[t] * inv[t]
  end
  -- Draw.
  local u = math.random() * (S + r + q)
  local t = z
  if u < q and nwn > 0 then
    for j = 1, nwn do
      t = wl[j]
      u = u - (alpha + nd[t]) * nw[t] * inv[t]
      if u < 0 then break end
    end
  elseif u < q + r and ndn > 0 then
    u = (u - q) / beta
    for j = 1, ndn do
      t = dl[j]
      u = u - nd[t] * inv[t]
      if u < 0 then break end
    end
  else
    u = (u - q - r) / (alpha * beta)
    for k = 1, K do
      t = k
      u = u - inv[k]
      if u < 0 then break end
    end
  end
  -- Put the token back with topic t.
  c = nd[t]
  if c == 0 then
    ndn = ndn + 1
    dl[ndn] = t
    dl[KP1] = ndn
  end
  nd[t] = c + 1
  c = nw[t]
  if c == 0 then
    nwn = nwn + 1
    wl[nwn] = t
    wl[KP1] = nwn
  end
  nw[t] = c + 1
  if t ~= z then
    nk_add[z] = nk_add[z] - 1
    nk_add[t] = nk_add[t] + 1
  end
  return t
end

-- The same conditional in O(K): two passes, the second finds the topic.
local function sample_dense(d, w, o, z)
  local nd, nw, dl, wl = ndk[d], nwk[w], dlist[d], wlist[w]
  local c = nd[z] - 1
  nd[z] = c
  local ndn = dl[KP1]
  if c == 0 then
    for j = 1, ndn do
      if dl[j] == z then
        dl[j] = dl[ndn]
        break
      end
    end
    ndn = ndn - 1
    dl[KP1] = ndn
  end
  c = nw[z] - 1
  nw[z] = c
  local nwn = wl[KP1]
  if c == 0 then
    for j = 1, nwn do
      if wl[j] == z then
        wl[j] = wl[nwn]
        break
      end
    end
    nwn = nwn - 1
    wl[KP1] = nwn
  end
  local total = 0.0
  for k = 1, K do
    total = total + (alpha + nd[k]) * (beta + nw[k]) * inv[k]
  end
  local u = math.random() * total
  local t = K
  for k = 1, K do
    u = u - (alpha + nd[k]) * (beta + nw[k]) * inv[k]
    if u < 0 then
      t = k
      break
    end
  end
  c = nd[t]
  if c == 0 then
    ndn = ndn + 1
    dl[ndn] = t
    dl[KP1] = ndn
  end
  nd[t] = c + 1
  c = nw[t]
  if c == 0 then
    nwn = nwn + 1
    wl[nwn] = t
    wl[KP1] = nwn
  end
  nw[t] = c + 1
  if t ~= z then
    nk_add[z] = nk_add[z] - 1
    nk_add[t] = nk_add[t] + 1
  end
  return t
end

-- The dense sampler with fresh topic totals: nk as of the start of the
-- iteration plus this executor's own changes since (exact with one
-- executor).  For validation only: O(K) buffer reads per token.
local function sample_exact(d, w, o, z)
  local nd, nw, dl, wl = ndk[d], nwk[w], dlist[d], wlist[w]
  local c = nd[z] - 1
  nd[z] = c
  local ndn = dl[KP1]
  if c == 0 then
    for j = 1, ndn do
      if dl[j] == z then
        dl[j] = dl[ndn]
        break
      end
    end
    ndn = ndn - 1
    dl[KP1] = ndn
  end
  c = nw[z] - 1
  nw[z] = c
  local nwn = wl[KP1]
  if c == 0 then
    for j = 1, nwn do
      if wl[j] == z then
        wl[j] = wl[nwn]
        break
      end
    end
    nwn = nwn - 1
    wl[KP1] = nwn
  end
  nk_add[z] = nk_add[z] - 1
  local total = 0.0
  for k = 1, K do
    total = total + (alpha + nd[k]) * (beta + nw[k]) / (nk[k] + nk_add[k] + Vbeta)
  end
  local u = math.random() * total
  local t = K
  for k = 1, K do
    u = u - (alpha + nd[k]) * (beta + nw[k]) / (nk[k] + nk_add[k] + Vbeta)
    if u < 0 then
      t = k
      break
    end
  end
  c = nd[t]
  if c == 0 then
    ndn = ndn + 1
    dl[ndn] = t
    dl[KP1] = ndn
  end
  nd[t] = c + 1
  c = nw[t]
  if c == 0 then
    nwn = nwn + 1
    wl[nwn] = t
    wl[KP1] = nwn
  end
  nw[t] = c + 1
  nk_add[t] = nk_add[t] + 1
  return t
end

-- Log-likelihood ---------------------------------------------------------------
-- log p(w, z) = log p(z) + log p(w | z), the Dirichlet-multinomial terms:
--   log p(z)   = sum_d [ lgamma(K alpha) - lgamma(K alpha + N_d)
--                        + sum_k (lgamma(alpha + ndk) - lgamma(alpha)) ]
--   log p(w|z) = sum_k [ lgamma(V beta) - lgamma(V beta + nk)
--                        + sum_w (lgamma(beta + nwk) - lgamma(beta)) ]
-- Terms with a zero count vanish, so only non-zero counts are visited.
local lg_alpha, lg_beta = lgamma(alpha), lgamma(beta)
local Kalpha = K * alpha
local ll_doc = orion.accumulator("sum", 0.0)
local ll_word = orion.accumulator("sum", 0.0)

local function ll_docs(d, k, c)
  if c > 0 then
    local x = alpha + c
    local shift = 1.0
    while x < 10 do shift = shift * x; x = x + 1 end
    local xi = 1 / x
    local x2 = xi * xi
    ll_doc:add((x - 0.5) * math.log(x) - x + HALF_LOG_2PI
      + xi * (1 / 12 - x2 * (1 / 360 - x2 * (1 / 1260 - x2 * (1 / 1680 - x2 / 1188))))
      - math.log(shift) - lg_alpha)
  end
  if k == 1 then
    local x = Kalpha + dlen[d]
    local shift = 1.0
    while x < 10 do shift = shift * x; x = x + 1 end
    local xi = 1 / x
    local x2 = xi * xi
    ll_doc:add(-((x - 0.5) * math.log(x) - x + HALF_LOG_2PI
      + xi * (1 / 12 - x2 * (1 / 360 - x2 * (1 / 1260 - x2 * (1 / 1680 - x2 / 1188))))
      - math.log(shift)))
  end
end

local function ll_words(w, k, c)
  if c > 0 then
    local x = beta + c
    local shift = 1.0
    while x < 10 do shift = shift * x; x = x + 1 end
    local xi = 1 / x
    local x2 = xi * xi
    ll_word:add((x - 0.5) * math.log(x) - x + HALF_LOG_2PI
      + xi * (1 / 12 - x2 * (1 / 360 - x2 * (1 / 1260 - x2 * (1 / 1680 - x2 / 1188))))
      - math.log(shift) - lg_beta)
  end
end

local function log_likelihood()
  ll_doc:reset()
  ll_word:reset()
  orion.parallel_for(ndk, ll_docs)
  orion.parallel_for(nwk, ll_words)
  local ll = D * lgamma(Kalpha) + ll_doc:get() + K * lgamma(Vbeta) + ll_word:get()
  for k, n in ipairs(nk:to_table()) do
    ll = ll - lgamma(Vbeta + n)
    if n < 0 then error(("topic %d has a negative count %d"):format(k, n), 0) end
  end
  return ll / N
end

-- inv and S from the current topic totals.
local function refresh_inv()
  local s = 0.0
  for k, n in ipairs(nk:to_table()) do
    local x = 1.0 / (n + Vbeta)
    inv:set(k, x)
    s = s + x
  end
  S = alpha * beta * s
end

-- Run ------------------------------------------------------------------------
local samplers = { sparse = sample_sparse, dense = sample_dense, exact = sample_exact }
local sampler = samplers[opts.sampler]
local t0 = orion.clock()
local init_stats = orion.parallel_for(tokens, init)
local init_seconds = orion.clock() - t0
-- One block per executor and clock keeps the per-block overhead low.
local nparts = opts.partitions
if nparts == 0 then nparts = math.max(2, init_stats.executors or 1) end
local loop_opts = { partitions = { nparts }, space = 1 }
local ll0 = log_likelihood()
print(("# initialised in %.3f s; log-likelihood per token %.4f"):format(init_seconds, ll0))
print(("%5s  %8s  %12s  %12s"):format("iter", "seconds", "tokens/s", "ll/token"))
io.stdout:flush()

local elapsed = 0.0
for iter = 1, opts.iters do
  local t1 = orion.clock()
  refresh_inv()
  local st = orion.parallel_for(tokens, sampler, loop_opts)
  local seconds = orion.clock() - t1
  elapsed = elapsed + seconds
  local ll, ll_seconds
  if iter % opts.ll_every == 0 or iter == opts.iters then
    local t2 = orion.clock()
    ll = log_likelihood()
    ll_seconds = orion.clock() - t2
  end
  print(("%5d  %8.3f  %12.0f  %12s"):format(iter, seconds, N / seconds,
    ll and ("%.4f"):format(ll) or "-"))
  io.stdout:flush()
  orion.record { iter = iter, seconds = seconds, tokens_per_s = N / seconds,
                 ll_per_token = ll, ll_seconds = ll_seconds, elapsed = elapsed,
                 executors = st.executors }
end

-- Top words ------------------------------------------------------------------
-- top[k][j] is the j-th most frequent word of topic k (topc its count),
-- found by one loop over nwk that runs 1-D on the topic key.
if vocab and opts.top > 0 and opts.iters >= 0 then
  local TOP = math.min(opts.top, V)
  local top = orion.zeros { K, TOP, type = "i32" }
  local topc = orion.zeros { K, TOP, type = "i32" }
  orion.parallel_for(nwk, function(w, k, c)
    local tk, ck = top[k], topc[k]
    if c > ck[TOP] then
      local j = TOP
      while j > 1 and c > ck[j - 1] do
        ck[j] = ck[j - 1]
        tk[j] = tk[j - 1]
        j = j - 1
      end
      ck[j] = c
      tk[j] = w
    end
  end)
  local tt = top:to_table()
  for k = 1, K do
    local words = {}
    for j = 1, TOP do
      local w = tt[k][j]
      if w > 0 then words[#words + 1] = vocab[w] end
    end
    print(("topic %3d: %s"):format(k, table.concat(words, " ")))
  end
end

if opts.save then
  nwk:save(opts.save)
  print(("# saved the word-topic counts (%d x %d) to %s"):format(V, K, opts.save))
end

if opts.save_assignments then
  tokens:save(opts.save_assignments)
  print(("# saved the topic of each of the %d tokens to %s"):format(N, opts.save_assignments))
end
