-- Topic proportions of new documents from a saved LDA model (MALLET's
-- infer-topics), distributed over the documents with parallel_for.
--
--   orion-driver apps/lda/lda.lua --import train/ --save-state model
--   orion-driver apps/lda/infer.lua --model model --input new/ --doc-topics new.txt
--
-- The model is a --save-state prefix of lda.lua.  --input is raw text (a
-- folder or a file, one document per line, read with the model's
-- vocabulary: other words are dropped) when the model has a vocabulary,
-- else a UCI docword file over the model's word ids.  Each sweep samples
-- every new token's topic with the model's word-topic counts held fixed
-- (apps/lda/lda_fold.lua); the proportions are averaged over the sweeps
-- after --burn-in and written in MALLET's doc-topics format.

local orion = require "orion"
local cli = require "orion.cli"
package.path = ((arg and arg[0] or ""):match("^(.*)/[^/]*$") or ".") .. "/?.lua;" .. package.path
local lda_out = require "lda_out"
local lda_fold = require "lda_fold"

local spec = {
  name = "infer.lua",
  summary = "Topic proportions of new documents from a saved LDA model.",
  options = {
    { "model", "PREFIX", nil, "the model: lda.lua's --save-state PREFIX" },
    { "input", "PATH", nil, "the new documents: raw text (folder or file) or a UCI docword file" },
    { "doc-topics", "FILE", nil, "write the proportions (MALLET's doc-topics format)" },
    { "iters", "N", 100, "Gibbs sweeps over the new tokens" },
    { "burn-in", "N", 10, "sweeps before the proportions are averaged" },
    { "skip-header", nil, false, "drop each document's text before its first blank line" },
    { "seed", "N", 1, "seed of the sampler" },
  },
}

local opts = cli.parse(arg, spec)
if not opts.model then cli.fail(spec, "--model is required") end
if not opts.input then cli.fail(spec, "--input is required") end
if opts.iters < 1 then cli.fail(spec, "--iters must be at least 1") end
if opts.burn_in < 0 or opts.burn_in >= opts.iters then cli.fail(spec, "--burn-in must be in 0..--iters - 1") end
cli.check_output(spec, opts.doc_topics, "--doc-topics")
orion.seed(opts.seed)

local st = lda_out.read_state(opts.model)
local nwk = orion.load(opts.model .. ".word-topic")
local V, K = nwk:dims()
if V ~= st.words or K ~= st.K then
  error(("%s.word-topic: is %d x %d but %s.model says %d words, K = %d")
    :format(opts.model, V, K, opts.model, st.words, st.K), 0)
end
-- The topic sizes, from the counts.
local nk = {}
for k = 1, K do nk[k] = 0 end
for _, row in ipairs(nwk:to_table()) do
  for k = 1, K do nk[k] = nk[k] + row[k] end
end
local tokens, names = lda_fold.load_docs(opts.input, st.vocab, opts)
local m = { tokens = tokens, nwk = nwk, nk = nk, alpha = st.alpha, beta = st.beta,
            iters = opts.iters, burn_in = opts.burn_in }
local D, _ = tokens:dims()
print(("# infer: %d documents, %d tokens, K=%d, %d sweeps (%d burn-in)")
  :format(D, tokens:nnz(), K, opts.iters, opts.burn_in))
local t0 = orion.clock()
local f = lda_fold.fold(m)
print(("# sampled in %.3f s"):format(orion.clock() - t0))
local props = lda_fold.proportions(m, f)
if opts.doc_topics then
  lda_out.doc_topic_rows(opts.doc_topics, props, names)
  print(("# wrote the topic proportions of %d documents to %s"):format(D, opts.doc_topics))
else
  for d, p in ipairs(props) do
    local best = 1
    for k = 2, K do if p[k] > p[best] then best = k end end
    print(("%d\t%s\ttopic %d (%.3f)"):format(d - 1, names and names[d] or tostring(d), best - 1, p[best]))
  end
end
