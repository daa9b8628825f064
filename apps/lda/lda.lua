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
-- decomposition (Yao, Mimno and McCallum, KDD 2009) over MALLET's packed,
-- sorted word-topic lists; --sampler dense draws from the same conditional
-- in O(K) per token.  By default the chain starts from a sequential sweep
-- (each token's first topic drawn from the conditional given the tokens
-- placed before it), which is timed as sampling.
--
-- One line per iteration: iter, seconds (sampling only), tokens/s, and the
-- joint log-likelihood log p(w, z) per token, computed as MALLET's
-- modelLogLikelihood and WarpLDA do.  With --metrics FILE (an orion-driver
-- option) each iteration is recorded with the keys iter, seconds,
-- tokens_per_s, ll_per_token, ll_seconds, elapsed (sampling seconds so far,
-- the initial sweep included), executors, driver_bytes and peer_bytes
-- (bytes through the driver and between executors in the iteration's
-- loops: sampling and log-likelihood), managed_bytes and managed_staleness
-- (--flush managed: the topic-total updates sent during the sweep, and
-- the blocks they waited on average).  See docs/apps-lda.md.

local orion = require "orion"
local cli = require "orion.cli"
local train_loop = require "orion.train"
-- The app's own modules, beside this script.
package.path = ((arg and arg[0] or ""):match("^(.*)/[^/]*$") or ".") .. "/?.lua;" .. package.path
local lda_text = require "lda_text"
local lda_out = require "lda_out"
local lda_hyper = require "lda_hyper"
local lda_fold = require "lda_fold"

local spec = {
  name = "lda.lua",
  summary = "Collapsed Gibbs sampling LDA over a UCI bag-of-words corpus or raw text (--import).",
  options = {
    { "corpus", "FILE", nil, "UCI docword.*.txt[.gz] (default: embedded synthetic corpus)" },
    { "vocab", "FILE", nil, "vocab.*.txt, one word per line, to print each topic's top words" },
    { "k", "N", 100, "number of topics" },
    { "iters", "N", 100, "Gibbs sweeps over the tokens" },
    { "alpha", "X", nil, "symmetric document-topic prior (default: 50/K)", type = "number" },
    { "beta", "X", 0.01, "symmetric topic-word prior" },
    { "seed", "N", 1, "seed of the initial topics and of the sampler" },
    { "sampler", "NAME", "sparse", "sparse (SparseLDA buckets) or dense (O(K) per token)" },
    { "init", "NAME", "sequential", "initial topics: sequential (drawn from the conditional, token by token) or random" },
    { "ll-every", "N", 10, "compute the log-likelihood every N iterations (and after the last)" },
    { "partitions", "N", 0, "blocks per dimension of the sampling loop; 0: 8 (see docs/apps-lda.md)" },
    { "parallel", "P", "2d", "2d (the dependence-preserving schedule) or data (data-parallel, --sampler dense: every executor reads the word-topic counts as of the last flush and adds its changes through an orion.buffer)" },
    { "flush", "F", nil, "when buffered count changes are applied: with 2d the topic totals' (loop, the default: at the end of the sweep; managed: sent during it), with --parallel data the word-topic counts' (block, the default, loop, managed, clock or every N tokens)" },
    { "clock", "N", nil, "with --parallel data --flush clock: blocks per clock (an executor pushes its count changes and pulls the counts once a clock; default 4)", type = "int" },
    { "gpu", false, false, "run the sampling sweeps on the executors' GPUs (tier gpu; start them with orion-driver --gpus): each block is cut again into a device grid of documents x words, the topic totals' changes added on the device (see docs/apps-lda.md)" },
    { "gpu-grid", "B", 0, "with --gpu, cut each block into a B x B device grid (0: from the block's size; 1: one stream per block, the CPU's draws)" },
    { "check", nil, false, "at the end, check the count tables against the topic assignments" },
    { "top", "N", 10, "top words printed per topic (with a vocabulary; 0: none)" },
    { "save", "PATH", nil, "save the word-topic counts (W x K, i32) to PATH (.txt: text)" },
    { "save-assignments", "PATH", nil, "save each token's topic, (doc, word, occurrence) -> topic" },
    { "import", "PATH", nil, "raw text instead of --corpus: a folder (one document per file) or a file (one per line), see --stoplist" },
    { "stoplist", "FILE", nil, "stop words dropped by --import (default: apps/lda/stoplist-en.txt; none: keep all)" },
    { "skip-header", nil, false, "--import: drop each document's text before its first blank line (e-mail headers)" },
    { "min-df", "N", 1, "--import: keep words in at least N documents" },
    { "max-df", "F", 1.0, "--import: keep words in at most this fraction of the documents", type = "number" },
    { "save-vocab", "FILE", nil, "--import: write the vocabulary (use with --save-corpus for --corpus/--vocab)" },
    { "save-corpus", "FILE", nil, "--import: write the corpus as a UCI docword file" },
    { "topic-keys", "FILE", nil, "write MALLET's topic keys: topic, alpha, its --num-top-words words" },
    { "num-top-words", "N", 20, "words per topic in --topic-keys" },
    { "doc-topics", "FILE", nil, "write MALLET's doc-topics: doc, name, then each topic's proportion" },
    { "word-topic-counts", "FILE", nil, "write MALLET's word-topic counts: word id, word, topic:count ..." },
    { "save-state", "PREFIX", nil, "save the model to PREFIX.* (topics, priors, vocabulary, counts) for --load-state and infer.lua" },
    { "load-state", "PREFIX", nil, "continue training a --save-state model (its corpus, topics and priors)" },
    { "optimize-interval", "N", 0, "re-estimate an asymmetric alpha and beta every N iterations (Minka's fixed point; 0: never)" },
    { "optimize-burn-in", "N", 10, "first optimise after this many iterations" },
    { "test", "PATH", nil, "held-out documents (docword, or text like --import): print their perplexity at the end" },
    { "test-iters", "N", 20, "--test: Gibbs sweeps over the observed half of each held-out document" },
    { "checkpoint-every", "N", 0, "write a checkpoint every N iterations (needs orion-driver --checkpoint-dir; 0: never); a restarted or --resume'd run goes on from the newest" },
  },
  epilog = "The corpus is plain or gzip-compressed.  Seconds and tokens/s exclude\n" ..
           "the log-likelihood evaluation, which is reported as ll_seconds; the\n" ..
           "elapsed time of --metrics includes the initial sweep.",
}

train_loop.options(spec, { metric = "ll_per_token", goal = "max", unit = "iteration",
                           patience_units = "evaluations (--ll-every)",
                           save_help = "the word-topic counts, as --save writes them" })
local opts = cli.parse(arg, spec)
if opts.k < 1 then cli.fail(spec, "--k must be at least 1") end
if opts.iters < 0 then cli.fail(spec, "--iters must not be negative") end
if opts.ll_every < 1 then cli.fail(spec, "--ll-every must be at least 1") end
if opts.partitions < 0 then cli.fail(spec, "--partitions must not be negative") end
if opts.gpu_grid < 0 or opts.gpu_grid > 65536 then cli.fail(spec, "--gpu-grid must be 0..65536") end
if opts.gpu_grid ~= 0 and not opts.gpu then cli.fail(spec, "--gpu-grid needs --gpu") end
if opts.top < 0 then cli.fail(spec, "--top must not be negative") end
-- --load-state: the saved model's K and priors.
local state = opts.load_state and lda_out.read_state(opts.load_state) or nil
if state then
  for _, o in ipairs { "corpus", "import", "vocab", "alpha" } do
    if opts[o] then cli.fail(spec, ("--load-state brings its corpus, K and priors: --%s is not allowed with it"):format(o)) end
  end
  opts.k, opts.beta = state.K, state.beta
end
local K = opts.k
local alpha = opts.alpha or 50.0 / K
if state then alpha = state.alpha[1] end
local beta = opts.beta
if not (alpha > 0) then cli.fail(spec, "--alpha must be positive") end
if not (beta > 0) then cli.fail(spec, "--beta must be positive") end
if opts.sampler ~= "sparse" and opts.sampler ~= "dense" and opts.sampler ~= "exact" then
  cli.fail(spec, ("--sampler must be sparse, dense or exact, not '%s'"):format(opts.sampler))
end
if opts.parallel ~= "2d" and opts.parallel ~= "data" then
  cli.fail(spec, ("--parallel must be 2d or data, not '%s'"):format(opts.parallel))
end
local data_parallel = opts.parallel == "data"
opts.flush = opts.flush or (data_parallel and "block" or "loop")
local dp_flush = tonumber(opts.flush) or opts.flush
if data_parallel and opts.sampler ~= "dense" then
  cli.fail(spec, "--parallel data needs --sampler dense")
end
if data_parallel and math.type(dp_flush) ~= "integer" and dp_flush ~= "block"
    and dp_flush ~= "loop" and dp_flush ~= "managed" and dp_flush ~= "clock" then
  cli.fail(spec, ("--flush must be block, loop, managed, clock or a positive integer, not '%s'"):format(opts.flush))
end
if opts.clock ~= nil and (not data_parallel or dp_flush ~= "clock" or opts.clock < 1) then
  cli.fail(spec, (not data_parallel or dp_flush ~= "clock") and "--clock goes with --parallel data --flush clock"
    or "--clock must be at least 1")
end
if not data_parallel and opts.flush ~= "loop" and opts.flush ~= "managed" then
  cli.fail(spec, ("--flush must be loop or managed with --parallel 2d, not '%s'"):format(opts.flush))
end
if opts.init ~= "sequential" and opts.init ~= "random" then
  cli.fail(spec, ("--init must be sequential or random, not '%s'"):format(opts.init))
end
if opts.vocab and not opts.corpus then cli.fail(spec, "--vocab needs --corpus") end
if opts.import and opts.corpus then cli.fail(spec, "--import and --corpus are two corpora: give one") end
if opts.min_df < 1 then cli.fail(spec, "--min-df must be at least 1") end
if not (opts.max_df > 0 and opts.max_df <= 1) then cli.fail(spec, "--max-df must be in (0, 1]") end
if opts.optimize_interval < 0 then cli.fail(spec, "--optimize-interval must not be negative") end
if opts.optimize_burn_in < 0 then cli.fail(spec, "--optimize-burn-in must not be negative") end
if opts.num_top_words < 1 then cli.fail(spec, "--num-top-words must be at least 1") end
if opts.test_iters < 1 then cli.fail(spec, "--test-iters must be at least 1") end
for _, o in ipairs { "save_vocab", "save_corpus", "skip_header" } do
  if opts[o] and not opts.import then cli.fail(spec, ("--%s needs --import"):format(o:gsub("_", "-"))) end
end
if opts.checkpoint_every < 0 then cli.fail(spec, "--checkpoint-every must not be negative") end
if opts.checkpoint_every > 0 and not orion.checkpoint_dir() then
  cli.fail(spec, "--checkpoint-every needs orion-driver --checkpoint-dir DIR")
end
-- What the run reads and writes, checked on the driver before the corpus
-- is loaded and sampled: a bad path is named now, not after the sweeps.
cli.check_input(spec, opts.corpus, "--corpus")
cli.check_input(spec, opts.vocab, "--vocab")
if opts.stoplist and opts.stoplist ~= "none" then cli.check_input(spec, opts.stoplist, "--stoplist") end
for _, o in ipairs { "save_vocab", "save_corpus", "topic_keys", "doc_topics", "word_topic_counts" } do
  cli.check_output(spec, opts[o], "--" .. o:gsub("_", "-"))
end
cli.check_output(spec, opts.save_state, "--save-state", "prefix")
cli.check_output(spec, opts.save, "--save")
cli.check_output(spec, opts.save_assignments, "--save-assignments")
train_loop.check(spec, opts, { metric_given = true })
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
local tmp_corpus, imported, names
if state then
  corpus_path, vocab, names = opts.load_state, state.vocab, state.names
elseif opts.import then
  local ti = orion.clock()
  imported = lda_text.import(opts.import, opts)
  local st = imported.stats
  print(("# imported %d documents from %s in %.3f s: %d words, %d tokens (%d stop words and %d outside the df limits dropped)")
    :format(st.docs, opts.import, orion.clock() - ti, st.words, st.tokens, st.stopped, st.pruned))
  corpus_path, vocab, names = opts.import, imported.vocab, imported.names
elseif not corpus_path then
  corpus_path, vocab = synthetic_corpus(opts.seed)
  tmp_corpus = corpus_path
end
-- One element per token occurrence, (doc, word, occurrence) -> topic.
local tokens
if state then
  -- The saved topics, negated: the first sweep puts each token back
  -- with its topic (the samplers' z < 0) and so rebuilds the counts.
  tokens = orion.load(state.dir .. ".assignments")
  orion.parallel_for(tokens, function(d, w, o, z) return -z end)
elseif imported then
  local ok, t = pcall(orion.text_file, imported.docword,
                      { format = "uci-bow", expand = true, value_type = "i32" })
  imported.cleanup()
  if not ok then error(t, 0) end
  tokens = t
elseif tmp_corpus then
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
-- ndk[d][k]: document-topic counts.  nk[k]: tokens per topic, written
-- only through nk_add.  inv[k] = 1 / (nk[k] + V * beta), fixed for an
-- iteration, and cinv[k] = inv[1] + ... + inv[k].  dlen[d]: tokens in d.
--
-- Word-topic counts: the dense and exact samplers keep nwk[w][k].  The
-- sparse sampler keeps, instead, each word's non-zero counts as a packed
-- list, MALLET's layout: entries (count << SH) | (topic - 1).  The first
-- C entries live in wa[w][1..na] (na = wa[w][C+1]), sorted in decreasing
-- order, so that the most frequent topics come first; the rest, only for
-- words with more than C topics, in wx[w][1..nx] (nx = wa[w][C+2]), in no
-- order.  Empty slots are 0.  With K > C, wa is much narrower than K:
-- the rotating rows of the many rare words stay short, and wx rows that
-- do not change are not sent again.  rd[d] caches the sparse sampler's r
-- bucket of document d (beta * sum_k ndk inv[k]), valid when rstamp[d]
-- is the current iteration.
local Vbeta = V * beta -- changes with beta (--optimize-interval)
local sparse = opts.sampler == "sparse"
local SH = 0
while (1 << SH) < K do SH = SH + 1 end
local KB, MASK = 1 << SH, (1 << SH) - 1
local C = K <= 128 and K or 64
local CA1, CA2 = C + 1, C + 2
local ndk = orion.zeros { D, K, type = "i32" }
local nwk, wa, wx, rd, rstamp
if sparse then
  -- A count is at most N: pack into i32 when N << SH fits.
  local wtype = ((N + 1) << SH) <= (1 << 31) and "i32" or "i64"
  wa = orion.zeros { V, C + 2, type = wtype }
  wx = orion.zeros { V, math.max(K - C, 1), type = wtype }
  rd = orion.zeros { D }
  rstamp = orion.zeros { D, type = "i32" }
else
  nwk = orion.zeros { V, K, type = "i32" }
end
local nk = orion.zeros { K, type = "i64" }
-- --parallel data: the word-topic changes go through a buffer.
-- (Counts are summed, never averaged: with --flush clock each executor
-- pushes its count changes once a clock, and the totals stay exact.)
local nwk_add = data_parallel and orion.buffer(nwk, { apply = "add", flush = dp_flush, clock = opts.clock }) or nil
local inv = orion.zeros { K }
local cinv = orion.zeros { K }
-- The samplers move a token's count through nk_add.  With --parallel 2d and
-- --flush loop the
-- counts go to nk at the end of the sweep, and the samplers read the
-- totals through inv = 1 / (nk + V beta) as of the start of the sweep.
-- With --flush managed the sweeps after the initial one (which is the
-- same in both) send them to inv itself, 1 / (1 / inv + delta), during the
-- sweep within the executors' bandwidth budget (flush = "managed"),
-- applied by inv's owner as they arrive, so that a block reads the totals
-- with the other executors' earlier moves in; nk is then taken back from
-- inv after the sweep (exact: a few hundred roundings of a number below
-- 2^53 stay far under 0.5).
local nk_add = orion.buffer(nk, { apply = "add", flush = "loop" })
local nk_fresh
if opts.flush == "managed" and not data_parallel then
  nk_fresh = orion.buffer(inv, { apply = function(old, d) return 1.0 / (1.0 / old + d) end,
                                 flush = "managed" })
end
local dlen = orion.zeros { D, type = "i32" }
-- The document-topic prior: alph[k], lga[k] = lgamma(alph[k]), and
-- their sum asum; symmetric (alpha) until --optimize-interval makes it
-- asymmetric.  The s bucket's running sums cinv and its factor sab keep
-- the symmetric case's arithmetic (sums of inv, times alpha beta).
local alph = orion.zeros { K }
local lga = orion.zeros { K }
local asum, sab, asym = K * alpha, alpha * beta, false
local asym1 = 0 -- asym as the integer the loop bodies read
for k = 1, K do
  local a = state and state.alpha[k] or alpha
  alph:set(k, a)
  lga:set(k, lgamma(a))
end
if state then
  asum = 0.0
  for k = 1, K do
    asum = asum + state.alpha[k]
    if state.alpha[k] ~= alpha then asym = true end
  end
  if asym then sab, asym1 = beta, 1 end
end

print(("# lda: %d documents, %d words, %d tokens, K=%d, alpha=%s, beta=%g, sampler=%s")
  :format(D, V, N, K, asym and ("asymmetric (sum %g)"):format(asum) or ("%g"):format(alpha),
          beta, opts.sampler))

-- One Gibbs step with SparseLDA's buckets (Yao, Mimno and McCallum, KDD
-- 2009), as MALLET samples.  With the token taken out, the conditional
-- (alpha + ndk)(beta + nwk) inv[k] splits into
--   s = alpha beta inv[k]        (every topic: the total S is precomputed)
--   r = ndk beta inv[k]          (the document's topics: the total is rd[d])
--   q = (alpha + ndk) nwk inv[k] (the word's topics, walked in wa[w], wx[w])
-- so a token costs a pass over the word's few topics, most frequent first.
-- A draw lands in r or s rarely (beta and alpha beta are small): r walks
-- the document's K counts, which saves keeping (and moving) lists of each
-- document's topics, and s bisects cinv.
-- z = 0 is a token without a topic yet (the initial sweep): it is only
-- added, with a topic drawn from the conditional given the tokens placed
-- so far or, when rand_init is 1, uniformly.  z < 0 (--load-state's
-- first sweep) is a token put back with its saved topic -z.
local S = 0.0
local cur_iter = 0
local rand_init = 0
local function sample_sparse(d, w, o, z)
  local nd, wl, wo = ndk[d], wa[w], wx[w]
  -- rd[d] as of this iteration's topic totals.
  if rstamp[d] ~= cur_iter then
    local s = 0.0
    for k = 1, K do s = s + nd[k] * inv[k] end
    rd[d] = s * beta
    rstamp[d] = cur_iter
  end
  local r = rd[d]
  local na = wl[CA1]
  local nx = wl[CA2]
  -- Take the token out of the document and of the word.
  if z > 0 then
    nd[z] = nd[z] - 1
    r = r - beta * inv[z]
    if r < 0 then r = 0.0 end
    local i = 1
    while i <= na and wl[i] & MASK ~= z - 1 do i = i + 1 end
    if i <= na then
      local v = wl[i] - KB
      if v < KB then
        -- The count drops to 0: the entry leaves wa, and an entry of wx,
        -- if any, takes its place.
        while i < na do
          wl[i] = wl[i + 1]
          i = i + 1
        end
        if nx > 0 then
          local e = wo[nx]
          wo[nx] = 0
          nx = nx - 1
          wl[CA2] = nx
          while i > 1 and wl[i - 1] < e do
            wl[i] = wl[i - 1]
            i = i - 1
          end
          wl[i] = e
        else
          wl[na] = 0
          na = na - 1
          wl[CA1] = na
        end
      else
        while i < na and wl[i + 1] > v do
          wl[i] = wl[i + 1]
          i = i + 1
        end
        wl[i] = v
      end
    else
      local j = 1
      while j < nx and wo[j] & MASK ~= z - 1 do j = j + 1 end
      local v = wo[j] - KB
      if v < KB then
        wo[j] = wo[nx]
        wo[nx] = 0
        nx = nx - 1
        wl[CA2] = nx
      else
        wo[j] = v
      end
    end
  end
  -- The word bucket: the hottest loop, which reads alph only once the
  -- prior is asymmetric (alph[t] == alpha before: the same sums).
  local q = 0.0
  if asym1 == 0 then
    for j = 1, na do
      local e = wl[j]
      local t = (e & MASK) + 1
      q = q + (alpha + nd[t]) * (e >> SH) * inv[t]
    end
  else
    for j = 1, na do
      local e = wl[j]
      local t = (e & MASK) + 1
      q = q + (alph[t] + nd[t]) * (e >> SH) * inv[t]
    end
  end
  for j = 1, nx do
    local e = wo[j]
    local t = (e & MASK) + 1
    q = q + (alph[t] + nd[t]) * (e >> SH) * inv[t]
  end
  -- Draw.  pa, px: the topic's place in wa or wx, 0 when not known.
  local u = math.random() * (S + r + q)
  local t = 1
  local pa, px = 0, 0
  if z < 0 then
    t = -z
  elseif z == 0 and rand_init == 1 then
    t = math.random(1, K)
  elseif u < q then
    for j = 1, na do
      local e = wl[j]
      t = (e & MASK) + 1
      pa = j
      u = u - (alph[t] + nd[t]) * (e >> SH) * inv[t]
      if u < 0 then break end
    end
    if u >= 0 and nx > 0 then
      pa = 0
      for j = 1, nx do
        local e = wo[j]
        t = (e & MASK) + 1
        px = j
        u = u - (alph[t] + nd[t]) * (e >> SH) * inv[t]
        if u < 0 then break end
      end
    end
  elseif u < q + r then
    u = (u - q) / beta
    for k = 1, K do
      local c = nd[k]
      if c > 0 then
        t = k
        u = u - c * inv[k]
        if u < 0 then break end
      end
    end
  else
    -- The smallest t with cinv[t] > u, by bisection.
    u = (u - q - r) / sab
    local lo, hi = 1, K
    while lo < hi do
      local mid = (lo + hi) // 2
      if cinv[mid] > u then hi = mid else lo = mid + 1 end
    end
    t = lo
  end
  -- Put the token back with topic t.
  nd[t] = nd[t] + 1
  rd[d] = r + beta * inv[t]
  if pa == 0 and px == 0 then
    for j = 1, na do
      if wl[j] & MASK == t - 1 then
        pa = j
        break
      end
    end
    if pa == 0 then
      for j = 1, nx do
        if wo[j] & MASK == t - 1 then
          px = j
          break
        end
      end
    end
    if pa == 0 and px == 0 then
      -- A new topic for the word: wa is full whenever wx is not empty.
      if na < C then
        na = na + 1
        wl[CA1] = na
        pa = na
        wl[pa] = t - 1
      else
        nx = nx + 1
        wl[CA2] = nx
        px = nx
        wo[px] = t - 1
      end
    end
  end
  if pa > 0 then
    local v = wl[pa] + KB
    while pa > 1 and wl[pa - 1] < v do
      wl[pa] = wl[pa - 1]
      pa = pa - 1
    end
    wl[pa] = v
  else
    -- An entry of wx that outgrows wa's smallest swaps places with it.
    local v = wo[px] + KB
    if v > wl[na] then
      wo[px] = wl[na]
      local i = na
      while i > 1 and wl[i - 1] < v do
        wl[i] = wl[i - 1]
        i = i - 1
      end
      wl[i] = v
    else
      wo[px] = v
    end
  end
  if t ~= z then
    if z > 0 then nk_add[z] = nk_add[z] - 1 end
    nk_add[t] = nk_add[t] + 1
  end
  return t
end

-- The same conditional in O(K): two passes, the second finds the topic.
local function sample_dense(d, w, o, z)
  local nd, nw = ndk[d], nwk[w]
  if z > 0 then
    nd[z] = nd[z] - 1
    nw[z] = nw[z] - 1
  end
  local total = 0.0
  for k = 1, K do
    total = total + (alph[k] + nd[k]) * (beta + nw[k]) * inv[k]
  end
  local u = math.random() * total
  local t = K
  if z < 0 then
    t = -z
  elseif z == 0 and rand_init == 1 then
    t = math.random(1, K)
  else
    for k = 1, K do
      u = u - (alph[k] + nd[k]) * (beta + nw[k]) * inv[k]
      if u < 0 then
        t = k
        break
      end
    end
  end
  nd[t] = nd[t] + 1
  nw[t] = nw[t] + 1
  if t ~= z then
    if z > 0 then nk_add[z] = nk_add[z] - 1 end
    nk_add[t] = nk_add[t] + 1
  end
  return t
end

-- The dense sampler, data-parallel (--parallel data): the word's counts
-- are nwk as of the last flush plus this executor's pending changes, as a
-- worker of AD-LDA (Newman et al.) or a parameter-server client sees them.
local function sample_dense_dp(d, w, o, z)
  local nd, nw, nb = ndk[d], nwk[w], nwk_add[w]
  if z > 0 then
    nd[z] = nd[z] - 1
    nb[z] = nb[z] - 1
  end
  local total = 0.0
  for k = 1, K do
    local c = nw[k] + nb[k]
    if c < 0 then c = 0 end
    total = total + (alph[k] + nd[k]) * (beta + c) * inv[k]
  end
  local u = math.random() * total
  local t = K
  if z < 0 then
    t = -z
  elseif z == 0 and rand_init == 1 then
    t = math.random(1, K)
  else
    for k = 1, K do
      local c = nw[k] + nb[k]
      if c < 0 then c = 0 end
      u = u - (alph[k] + nd[k]) * (beta + c) * inv[k]
      if u < 0 then
        t = k
        break
      end
    end
  end
  nd[t] = nd[t] + 1
  nb[t] = nb[t] + 1
  if t ~= z then
    if z > 0 then nk_add[z] = nk_add[z] - 1 end
    nk_add[t] = nk_add[t] + 1
  end
  return t
end

-- The dense sampler with fresh topic totals: nk as of the start of the
-- iteration plus this executor's own changes since (exact with one
-- executor).  For validation only: O(K) buffer reads per token.
local function sample_exact(d, w, o, z)
  local nd, nw = ndk[d], nwk[w]
  if z > 0 then
    nd[z] = nd[z] - 1
    nw[z] = nw[z] - 1
    nk_add[z] = nk_add[z] - 1
  end
  local total = 0.0
  for k = 1, K do
    total = total + (alph[k] + nd[k]) * (beta + nw[k]) / (nk[k] + nk_add[k] + Vbeta)
  end
  local u = math.random() * total
  local t = K
  if z < 0 then
    t = -z
  elseif z == 0 and rand_init == 1 then
    t = math.random(1, K)
  else
    for k = 1, K do
      u = u - (alph[k] + nd[k]) * (beta + nw[k]) / (nk[k] + nk_add[k] + Vbeta)
      if u < 0 then
        t = k
        break
      end
    end
  end
  nd[t] = nd[t] + 1
  nw[t] = nw[t] + 1
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
local lg_beta = lgamma(beta)
local ll_doc = orion.accumulator("sum", 0.0)
local ll_word = orion.accumulator("sum", 0.0)

-- The loops walk one row per document (over dlen) and one per word (over
-- wlen): the count tables are then read at the loop's own key, so they
-- stay on the executors that hold them (resident rows, scheduler/dist_resid.c)
-- instead of coming back to the driver to be iterated.
local wlen = orion.zeros { V, type = "i32" }

local function ll_doc_rows(d, n)
  local row = ndk[d]
  for k = 1, K do
    local c = row[k]
    if c > 0 then
      local x = alph[k] + c
      local shift = 1.0
      while x < 10 do shift = shift * x; x = x + 1 end
      local xi = 1 / x
      local x2 = xi * xi
      ll_doc:add((x - 0.5) * math.log(x) - x + HALF_LOG_2PI
        + xi * (1 / 12 - x2 * (1 / 360 - x2 * (1 / 1260 - x2 * (1 / 1680 - x2 / 1188))))
        - math.log(shift) - lga[k])
    end
  end
  local x = asum + n
  local shift = 1.0
  while x < 10 do shift = shift * x; x = x + 1 end
  local xi = 1 / x
  local x2 = xi * xi
  ll_doc:add(-((x - 0.5) * math.log(x) - x + HALF_LOG_2PI
    + xi * (1 / 12 - x2 * (1 / 360 - x2 * (1 / 1260 - x2 * (1 / 1680 - x2 / 1188))))
    - math.log(shift)))
end

local function ll_word_rows(w, _)
  local row = nwk[w]
  for k = 1, K do
    local c = row[k]
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
end

-- The same terms from the packed lists: entries (count << SH) | (topic -
-- 1), 0 when empty; wa's last two slots are list lengths, and wx holds
-- the topics past the first C (K > C).
local XW = math.max(K - C, 1)
local function ll_word_packed_rows(w, _)
  local ra, rx = wa[w], wx[w]
  for j = 1, C do
    local e = ra[j]
    if e > 0 then
      local x = beta + (e >> SH)
      local shift = 1.0
      while x < 10 do shift = shift * x; x = x + 1 end
      local xi = 1 / x
      local x2 = xi * xi
      ll_word:add((x - 0.5) * math.log(x) - x + HALF_LOG_2PI
        + xi * (1 / 12 - x2 * (1 / 360 - x2 * (1 / 1260 - x2 * (1 / 1680 - x2 / 1188))))
        - math.log(shift) - lg_beta)
    end
  end
  if K > C then
    for j = 1, XW do
      local e = rx[j]
      if e > 0 then
        local x = beta + (e >> SH)
        local shift = 1.0
        while x < 10 do shift = shift * x; x = x + 1 end
        local xi = 1 / x
        local x2 = xi * xi
        ll_word:add((x - 0.5) * math.log(x) - x + HALF_LOG_2PI
          + xi * (1 / 12 - x2 * (1 / 360 - x2 * (1 / 1260 - x2 * (1 / 1680 - x2 / 1188))))
          - math.log(shift) - lg_beta)
      end
    end
  end
end

-- Bytes through the driver and between executors (driver_bytes and
-- peer_bytes of --metrics), added up loop by loop.
local moved = { driver = 0, peer = 0 }
local function count_bytes(st)
  moved.driver = moved.driver + st.driver_bytes
  moved.peer = moved.peer + st.peer_bytes
  return st
end

local function log_likelihood()
  ll_doc:reset()
  ll_word:reset()
  count_bytes(orion.parallel_for(dlen, ll_doc_rows))
  count_bytes(orion.parallel_for(wlen, sparse and ll_word_packed_rows or ll_word_rows))
  local ll = D * lgamma(asum) + ll_doc:get() + K * lgamma(Vbeta) + ll_word:get()
  for k, n in ipairs(nk:to_table()) do
    ll = ll - lgamma(Vbeta + n)
    if n < 0 then error(("topic %d has a negative count %d"):format(k, n), 0) end
  end
  return ll / N
end

-- --flush managed: the totals the sweep moved, from inv.
local function totals_from_inv()
  if not nk_fresh then return end
  for k, x in ipairs(inv:to_table()) do
    nk:set(k, math.floor(1.0 / x - Vbeta + 0.5))
  end
end

-- inv and S from the current topic totals.
local function refresh_inv()
  local s = 0.0
  for k, n in ipairs(nk:to_table()) do
    local x = 1.0 / (n + Vbeta)
    inv:set(k, x)
    s = s + (asym and x * alph:get(k) or x)
    cinv:set(k, s)
  end
  S = sab * s
end

-- --optimize-interval: alpha (asymmetric) and beta from the counts'
-- histograms, by Minka's fixed point (apps/lda/lda_hyper.lua).
local len_hist
local function optimize()
  if not len_hist then
    len_hist = {}
    for _, n in ipairs(dlen:to_table()) do
      if n > 0 then len_hist[n] = (len_hist[n] or 0) + 1 end
    end
  end
  local doc_hist, word_hist = {}, {}
  for k = 1, K do doc_hist[k] = {} end
  for _, row in ipairs(ndk:to_table()) do
    for k = 1, K do
      local c = row[k]
      if c > 0 then doc_hist[k][c] = (doc_hist[k][c] or 0) + 1 end
    end
  end
  local function count(c) if c > 0 then word_hist[c] = (word_hist[c] or 0) + 1 end end
  if sparse then
    for _, row in ipairs(wa:to_table()) do for j = 1, C do count(row[j] >> SH) end end
    if K > C then
      for _, row in ipairs(wx:to_table()) do for _, e in ipairs(row) do count(e >> SH) end end
    end
  else
    for _, row in ipairs(nwk:to_table()) do for k = 1, K do count(row[k]) end end
  end
  local old = alph:to_table()
  local a = lda_hyper.alpha(old, doc_hist, len_hist)
  beta = lda_hyper.beta(beta, word_hist, nk:to_table(), V)
  Vbeta, lg_beta, sab, asum, asym, asym1 = V * beta, lgamma(beta), beta, 0.0, true, 1
  for k = 1, K do
    alph:set(k, a[k])
    lga:set(k, lgamma(a[k]))
    asum = asum + a[k]
  end
  print(("# optimised: alpha sum %.4f (min %.4g, max %.4g), beta %.5f")
    :format(asum, math.min(table.unpack(a)), math.max(table.unpack(a)), beta))
end

-- Run ------------------------------------------------------------------------
local samplers = { sparse = sample_sparse, dense = sample_dense, exact = sample_exact }
local sampler = samplers[opts.sampler]
if data_parallel then sampler = sample_dense_dp end
-- Document lengths, for the log-likelihood.
for d, n in ipairs(tokens:histogram(1, D)) do dlen:set(d, n) end
-- The blocks: DEFAULT_PARTS document parts x as many word parts, whatever
-- the number of executors.  The sampler draws its random numbers per block
-- and which updates a block sees depends on the cut, so the chain follows
-- the blocks: a fixed cut gives the same bits on 1, 2, 3, 4 ... executors
-- (8, the runtime's default, gives 1, 2, 4 and 8 executors equal shares;
-- one document part per executor, as before issue 36, gave another chain
-- on every count above 2).  When the word tables are larger than a
-- last-level cache (32 MiB), twice as many word parts keep a block's word
-- rows closer to the cores (20NG, K = 1000: 8% less time per sweep; no
-- gain with smaller tables).  Never more parts than documents or words.
local DEFAULT_PARTS = 8
local nparts = opts.partitions
local nwords = nparts
if nparts == 0 then
  nparts = DEFAULT_PARTS
  nwords = nparts
  if sparse and V * (K + 2) * 4 > 32 * 1024 * 1024 then nwords = 2 * nparts end
  nparts, nwords = math.min(nparts, math.max(D, 1)), math.min(nwords, math.max(V, 1))
end
-- histogram: cut both key ranges by token counts, so that the blocks of a
-- clock hold about as many tokens (20NG's second half of the documents
-- is longer).
local loop_opts = { partitions = { nparts, nwords }, space = 1, histogram = true }
if data_parallel then loop_opts = { partitions = { nparts }, space = 1, histogram = true } end
if opts.gpu then loop_opts.tier = "gpu"; loop_opts.gpu_grid = opts.gpu_grid end
-- Loading: one loop with the sampling loop's blocks and no work sends the
-- corpus blocks and the (empty) count tables to the executors that keep
-- them, as reading the file is loading; it is not timed as sampling.
local tp = orion.clock()
local place_opts = { partitions = { nparts, nwords }, space = 1, histogram = true, schedule = "2d" }
if data_parallel then place_opts = loop_opts end
if sparse then
  orion.parallel_for(tokens, function(d, w, o, z)
    local x = ndk[d][1] + wa[w][1] + wx[w][1] + rd[d] + rstamp[d] + inv[1]
  end, place_opts)
else
  orion.parallel_for(tokens, function(d, w, o, z)
    local x = ndk[d][1] + nwk[w][1] + inv[1]
  end, place_opts)
end
print(("# loaded onto the executors in %.3f s"):format(orion.clock() - tp))
-- The initial topics: one sweep of the sampler over tokens that have no
-- topic yet (value 0).  sequential: each is drawn from the conditional
-- given the tokens already placed, with equal topic totals (inv);
-- random: uniformly.  The sweep counts as sampling time (elapsed).
-- After a restart (or orion-driver --resume) the assignments and counts
-- come from the newest checkpoint instead, and the sweeps go on after it.
local resumed = orion.restore()
local t0 = orion.clock()
cur_iter = 0
if not resumed then
  rand_init = opts.init == "random" and 1 or 0
  refresh_inv()
  orion.parallel_for(tokens, sampler, loop_opts)
end
rand_init = 0
nk_add = nk_fresh or nk_add -- the samplers' upvalue, from the first sweep on
local init_seconds = orion.clock() - t0
local first_iter, elapsed = 1, init_seconds
if resumed then
  first_iter, elapsed = resumed.step + 1, resumed.state.elapsed
  -- The priors as --optimize-interval left them (alph itself is restored).
  if resumed.state.asym then
    beta, asym, asym1, asum = resumed.state.beta, true, 1, 0.0
    Vbeta, lg_beta, sab = V * beta, lgamma(beta), beta
    for _, a in ipairs(alph:to_table()) do asum = asum + a end
  end
  print(("# resumed after iteration %d"):format(resumed.step))
else
  local ll0 = log_likelihood()
  print(("# initialised in %.3f s; log-likelihood per token %.4f"):format(init_seconds, ll0))
end
print(("%5s  %8s  %12s  %12s"):format("iter", "seconds", "tokens/s", "ll/token"))
io.stdout:flush()

-- The word-topic counts: the dense sampler's own, or counted from the
-- assignments (the sparse sampler keeps none).
local function word_topic_counts()
  if not sparse then return nwk end
  local c = orion.zeros { V, K, type = "i32" }
  orion.parallel_for(tokens, function(d, w, o, z)
    local nw = c[w]
    nw[z] = nw[z] + 1
  end)
  return c
end
local run = train_loop.start(spec, opts, {
  total = opts.iters, done = math.min(first_iter - 1, opts.iters),
  show = { "ll_per_token" }, save = function(path) word_topic_counts():save(path) end,
  model = opts.save, save_option = "--save", resume = resumed and resumed.state.train })
for iter = first_iter, opts.iters do
  orion.step(iter)
  local t1 = orion.clock()
  cur_iter = iter
  refresh_inv()
  moved.driver, moved.peer = 0, 0
  local st = count_bytes(orion.parallel_for(tokens, sampler, loop_opts))
  totals_from_inv()
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
  local m = { iter = iter, seconds = seconds, tokens_per_s = N / seconds,
                 ll_per_token = ll, ll_seconds = ll_seconds, elapsed = elapsed,
                 executors = st.executors, driver_bytes = moved.driver,
                 peer_bytes = moved.peer, managed_bytes = st.managed_bytes,
                 managed_staleness = st.managed_staleness }
  orion.record(m)
  local stop = run:epoch(iter, m) -- progress line, --save-best, --early-stop
  if opts.checkpoint_every > 0 and iter % opts.checkpoint_every == 0 then
    orion.checkpoint { step = iter, state = { elapsed = elapsed, beta = beta, asym = asym, train = run:state() } }
  end
  if opts.optimize_interval > 0 and iter > opts.optimize_burn_in
      and iter % opts.optimize_interval == 0 then
    optimize()
  end
  if stop then break end
end

-- The sparse sampler keeps no dense word-topic counts: count them from
-- the assignments when the output needs them.
local keys = opts.topic_keys or opts.word_topic_counts or opts.save_state or opts.test
if sparse and ((vocab and opts.top > 0) or opts.save or opts.check or keys) then
  nwk = word_topic_counts()
end

-- --check: the counts the sampler kept must be those of the assignments.
if opts.check then
  local ndk2 = orion.zeros { D, K, type = "i32" }
  local nk2 = orion.zeros { K, type = "i64" }
  local nk2_add = orion.buffer(nk2, { apply = "add", flush = "loop" })
  orion.parallel_for(tokens, function(d, w, o, z)
    local nd = ndk2[d]
    nd[z] = nd[z] + 1
    nk2_add[z] = nk2_add[z] + 1
  end)
  local bad = orion.accumulator("sum", 0)
  orion.parallel_for(ndk, function(d, k, c)
    if c ~= ndk2[d][k] then bad:add(1) end
  end)
  local bad_doc = bad:get()
  local bad_topic = 0
  local a, b = nk:to_table(), nk2:to_table()
  for k = 1, K do
    if a[k] ~= b[k] then bad_topic = bad_topic + 1 end
  end
  local bad_word = 0
  if sparse then
    -- Every list entry is the word's count of its topic, the lengths
    -- count the entries, wa is sorted, and no non-zero count is missing.
    local entries = orion.accumulator("sum", 0)
    local nonzero = orion.accumulator("sum", 0)
    bad:reset()
    orion.parallel_for(wa, function(w, j, e)
      local row = wa[w]
      if j <= C then
        if e > 0 then
          entries:add(1)
          if nwk[w][(e & MASK) + 1] ~= e >> SH or j > row[CA1] then bad:add(1) end
          if j > 1 and row[j - 1] < e then bad:add(1) end
        end
      elseif j == CA1 then
        if e < C and row[CA2] > 0 then bad:add(1) end
      end
    end)
    if K > C then
      orion.parallel_for(wx, function(w, j, e)
        if e > 0 then
          entries:add(1)
          if nwk[w][(e & MASK) + 1] ~= e >> SH or j > wa[w][CA2] then bad:add(1) end
        end
      end)
    end
    orion.parallel_for(nwk, function(w, k, c)
      if c > 0 then nonzero:add(1) end
    end)
    bad_word = bad:get() + math.abs(entries:get() - nonzero:get())
  end
  if bad_doc + bad_topic + bad_word > 0 then
    error(("--check: the counts do not match the assignments: %d document-topic, %d topic, %d word-list errors")
      :format(bad_doc, bad_topic, bad_word), 0)
  end
  print("# check: the document, word and topic counts match the assignments")
end

-- Top words ------------------------------------------------------------------
-- top[k][j] is the j-th most frequent word of topic k (topc its count),
-- found by one loop over nwk that runs 1-D on the topic key.
if (vocab and opts.top > 0 or opts.topic_keys) and opts.iters >= 0 then
  local TOP = math.min(math.max(opts.top, opts.topic_keys and opts.num_top_words or 0), V)
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
  local ids = {}
  for k = 1, K do
    local words = {}
    ids[k] = {}
    for j = 1, TOP do
      local w = tt[k][j]
      if w > 0 then
        if j <= opts.num_top_words then ids[k][#ids[k] + 1] = w end
        if vocab and j <= opts.top then words[#words + 1] = vocab[w] end
      end
    end
    if vocab and opts.top > 0 then print(("topic %3d: %s"):format(k, table.concat(words, " "))) end
  end
  if opts.topic_keys then
    lda_out.topic_keys(opts.topic_keys, ids, alph:to_table(), vocab)
    print(("# wrote the topic keys to %s"):format(opts.topic_keys))
  end
end
if opts.test then
  local m = { tokens = lda_fold.load_docs(opts.test, vocab, opts), nwk = nwk,
              nk = nk:to_table(), alpha = alph:to_table(), beta = beta,
              iters = opts.test_iters, burn_in = 0, half = true }
  local ll, n, ppl = lda_fold.perplexity(m, lda_fold.fold(m))
  print(("# held-out: %d documents, %d scored tokens, log-likelihood per token %.4f, perplexity %.2f")
    :format((m.tokens:dims()), n, ll / n, ppl))
end
if opts.doc_topics then
  lda_out.doc_topics(opts.doc_topics, ndk:to_table(), dlen:to_table(), alph:to_table(), names)
  print(("# wrote the topic proportions of %d documents to %s"):format(D, opts.doc_topics))
end
if opts.word_topic_counts then
  lda_out.word_topic_counts(opts.word_topic_counts, nwk:to_table(), vocab)
  print(("# wrote the word-topic counts to %s"):format(opts.word_topic_counts))
end
if opts.save_state then
  lda_out.save_state(opts.save_state, { K = K, beta = beta, alpha = alph:to_table(),
    iterations = opts.iters + (state and state.iterations or 0), tokens = tokens,
    nwk = nwk, vocab = vocab, names = names })
  print(("# saved the model to %s.*"):format(opts.save_state))
end

if opts.save then
  nwk:save(opts.save)
  print(("# saved the word-topic counts (%d x %d) to %s"):format(V, K, opts.save))
end

if opts.save_assignments then
  tokens:save(opts.save_assignments)
  print(("# saved the topic of each of the %d tokens to %s"):format(N, opts.save_assignments))
end
run:finish()
