-- The LDA apps' documents as words (apps/lda/lda.lua, apps/lda/infer.lua):
-- raw text imported with orion.import_text (dsm/textbow.h: MALLET's
-- token pattern, lower-casing, a stoplist, document-frequency limits) into
-- a UCI docword file that orion.text_file loads as any corpus, and the
-- word lists (vocabulary, document names) that go with it.

local orion = require "orion"

local M = {}

-- The folder of this file: the default stoplist lives beside it.
M.here = (debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$")) or "."
M.default_stoplist = M.here .. "/stoplist-en.txt"

-- Reads a word-per-line file into a list (blank lines skipped).
function M.read_lines(path)
  local f, err = io.open(path, "r")
  if not f then error(("cannot open %s"):format(err), 0) end
  local list = {}
  for line in f:lines() do
    local w = line:match("^%s*(.-)%s*$")
    if w ~= "" then list[#list + 1] = w end
  end
  f:close()
  return list
end

-- Imports src (a folder or a file of raw text).  o: stoplist (nil: the
-- default English list, "none" or a path), skip_header, min_df, max_df, vocab (a fixed
-- vocabulary file: words outside it are dropped, no df limits),
-- save_corpus and save_vocab (paths to keep the files at, else temporary
-- ones).  Returns { docword = path, vocab = list, names = list, stats =,
-- cleanup = function removing the temporary files }.
function M.import(src, o)
  local tmp = {}
  local function out(path)
    if path then return path end
    local p = os.tmpname()
    tmp[#tmp + 1] = p
    return p
  end
  local stop = o.stoplist or M.default_stoplist
  if stop == "none" then stop = nil end
  local r = { docword = out(o.save_corpus), cleanup = function()
    for _, p in ipairs(tmp) do os.remove(p) end
  end }
  local vpath, npath = out(o.save_vocab), out(nil)
  local ok, st = pcall(orion.import_text, src, {
    docword = r.docword, vocab_out = vpath, names = npath, stoplist = stop,
    vocab = o.vocab, skip_header = o.skip_header, min_df = o.min_df,
    max_df = o.max_df })
  if not ok then
    r.cleanup()
    error(st, 0)
  end
  r.stats = st
  r.vocab = M.read_lines(vpath)
  r.names = M.read_lines(npath)
  return r
end

-- Writes list, one entry per line, to path.
function M.write_lines(path, list)
  local f, err = io.open(path, "w")
  if not f then error(("cannot write %s"):format(err), 0) end
  for _, w in ipairs(list) do f:write(w, "\n") end
  local done, werr = f:close()
  if not done then error(("cannot write %s: %s"):format(path, werr), 0) end
end

return M
