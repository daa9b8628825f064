-- The files MALLET users read, written by apps/lda/lda.lua (and read
-- back by apps/lda/infer.lua): topic keys, doc-topics, word-topic counts,
-- and the saved model (--save-state PREFIX, --load-state PREFIX).
--
-- Formats (MALLET 2.0.9's, topics and documents numbered from 0):
--   topic keys         "topic<TAB>alpha<TAB>word word ...", the topic's
--                      words by decreasing count
--   doc-topics         "doc<TAB>name<TAB>p_0<TAB>...<TAB>p_{K-1}", with
--                      p_k = (n_dk + alpha_k) / (N_d + sum alpha)
--   word-topic counts  "word-id word topic:count topic:count ...", counts
--                      decreasing (ties: lower topic first), word ids from 0
-- The saved model is PREFIX.model (text: "K", "beta", "alpha" with K
-- values, "iterations", "docs", "words" lines), PREFIX.vocab and
-- PREFIX.names (one per line, when the corpus had them),
-- PREFIX.assignments (the token array (doc, word, occurrence) -> topic,
-- A:save's binary format) and PREFIX.word-topic (the W x K counts, the
-- same format), which infer.lua reads.

local lda_text = require "lda_text"

local M = {}

local function open_out(path)
  local f, err = io.open(path, "w")
  if not f then error(("cannot write %s"):format(err), 0) end
  return f
end

local function close_out(f, path)
  local ok, err = f:close()
  if not ok then error(("cannot write %s: %s"):format(path, err), 0) end
end

-- A number as %.17g would, but short when it is short (MALLET prints
-- Java doubles; this keeps every bit).
local function num(x)
  local s = ("%.15g"):format(x)
  if tonumber(s) ~= x then s = ("%.17g"):format(x) end
  return s
end
M.num = num

-- top[k] = list of word ids of topic k (most frequent first).
function M.topic_keys(path, top, alpha, vocab)
  local f = open_out(path)
  for k = 1, #top do
    local words = {}
    for j, w in ipairs(top[k]) do words[j] = vocab and vocab[w] or tostring(w - 1) end
    f:write(("%d\t%s\t%s\n"):format(k - 1, num(alpha[k]), table.concat(words, " ")))
  end
  close_out(f, path)
end

-- props: a table of rows, document d's topic proportions.
function M.doc_topic_rows(path, props, names)
  local f = open_out(path)
  local cells = {}
  for d, row in ipairs(props) do
    for k, p in ipairs(row) do cells[k] = num(p) end
    f:write(("%d\t%s\t%s\n"):format(d - 1, names and names[d] or tostring(d),
      table.concat(cells, "\t")))
  end
  close_out(f, path)
end

-- ndk: the D x K counts as a table of rows; dlen the document lengths.
function M.doc_topics(path, ndk, dlen, alpha, names)
  local K, asum = #alpha, 0.0
  for k = 1, K do asum = asum + alpha[k] end
  local props = {}
  for d, row in ipairs(ndk) do
    local den, p = dlen[d] + asum, {}
    for k = 1, K do p[k] = (row[k] + alpha[k]) / den end
    props[d] = p
  end
  M.doc_topic_rows(path, props, names)
end

-- nwk: the W x K counts as a table of rows.
function M.word_topic_counts(path, nwk, vocab)
  local f = open_out(path)
  for w, row in ipairs(nwk) do
    local ks = {}
    for k, c in ipairs(row) do if c > 0 then ks[#ks + 1] = k end end
    if #ks > 0 then
      table.sort(ks, function(a, b)
        if row[a] ~= row[b] then return row[a] > row[b] end
        return a < b
      end)
      local cells = {}
      for j, k in ipairs(ks) do cells[j] = ("%d:%d"):format(k - 1, row[k]) end
      f:write(("%d %s %s\n"):format(w - 1, vocab and vocab[w] or tostring(w - 1),
        table.concat(cells, " ")))
    end
  end
  close_out(f, path)
end

-- Saves the model: m = { K, beta, alpha (list), iterations, tokens
-- (array), nwk (array), vocab, names }.
function M.save_state(prefix, m)
  local D, V = m.tokens:dims()
  local f = open_out(prefix .. ".model")
  local a = {}
  for k = 1, m.K do a[k] = num(m.alpha[k]) end
  f:write("# Orion-C LDA model (apps/lda/lda.lua --save-state)\n",
    ("K %d\nbeta %s\nalpha %s\niterations %d\ndocs %d\nwords %d\n"):format(
      m.K, num(m.beta), table.concat(a, " "), m.iterations, D, V))
  close_out(f, prefix .. ".model")
  if m.vocab then lda_text.write_lines(prefix .. ".vocab", m.vocab) end
  if m.names then lda_text.write_lines(prefix .. ".names", m.names) end
  m.tokens:save(prefix .. ".assignments")
  m.nwk:save(prefix .. ".word-topic")
end

-- Reads PREFIX.model and the word lists; errors name the file and line.
function M.read_state(prefix)
  local path = prefix .. ".model"
  local f, err = io.open(path, "r")
  if not f then error(("cannot open %s (a --save-state prefix?)"):format(err), 0) end
  local st, line = { dir = prefix }, 0
  for l in f:lines() do
    line = line + 1
    local key, rest = l:match("^(%S+)%s+(.-)%s*$")
    if l:match("^%s*#") or l:match("^%s*$") then
      key = nil
    elseif not key then
      f:close()
      error(("%s:%d: expected \"KEY VALUE\": \"%s\""):format(path, line, l:sub(1, 80)), 0)
    end
    if key == "alpha" then
      st.alpha = {}
      for x in rest:gmatch("%S+") do st.alpha[#st.alpha + 1] = tonumber(x) end
    elseif key then
      st[key] = tonumber(rest)
      if st[key] == nil then
        f:close()
        error(("%s:%d: %s is not a number: \"%s\""):format(path, line, key, rest), 0)
      end
    end
  end
  f:close()
  for _, key in ipairs { "K", "beta", "alpha", "iterations", "words" } do
    if st[key] == nil then error(("%s: no %s line"):format(path, key), 0) end
  end
  if #st.alpha ~= st.K then
    error(("%s: alpha has %d values for K = %d"):format(path, #st.alpha, st.K), 0)
  end
  for k, a in ipairs(st.alpha) do
    if not (a and a > 0) then error(("%s: alpha's value %d is not a positive number"):format(path, k), 0) end
  end
  local vf = io.open(prefix .. ".vocab", "r")
  if vf then
    vf:close()
    st.vocab = lda_text.read_lines(prefix .. ".vocab")
    local seen = {}
    for i, w in ipairs(st.vocab) do
      if seen[w] then error(("%s.vocab:%d: the word \"%s\" is already in the vocabulary"):format(prefix, i, w), 0) end
      seen[w] = true
    end
    if #st.vocab ~= st.words then
      error(("%s.vocab: has %d words but %s says words %d"):format(prefix, #st.vocab, path, st.words), 0)
    end
  end
  local nf = io.open(prefix .. ".names", "r")
  if nf then
    nf:close()
    st.names = lda_text.read_lines(prefix .. ".names")
  end
  return st
end

return M
