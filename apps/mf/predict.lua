-- Scores (user, item) pairs with a model saved by mf.lua --save.
--
--   orion-driver apps/mf/predict.lua --model m --pairs pairs.txt [--out scores.txt]
--   orion-driver apps/mf/predict.lua --libmf-model m.txt --pairs pairs.txt
--   orion-driver apps/mf/predict.lua --model m --top 10 --rated train.txt
--
-- --pairs holds one pair per line, "user item" or "user item rating"
-- (blank lines and lines starting with # are skipped). The output has one
-- line "user item score" per scored pair, in input order. When every line
-- has a rating, the RMSE of the scored pairs is printed at the end.
--
-- An id that never appeared in the training ratings (its row was never
-- trained, or it is beyond the model's size) follows --unseen:
--   mean  score the pair with the training mean rating (the default)
--   skip  leave the pair out of the output
-- Either way the number of such pairs is reported.

local orion = require "orion"
local cli = require "orion.cli"

local spec = {
  name = "predict.lua",
  summary = "Score (user, item) pairs with a model saved by mf.lua --save.",
  options = {
    { "model", "PATH", nil, "the --save PATH of mf.lua (reads PATH.W, .H, .users, .items, .meta)", type = "string" },
    { "pairs", "FILE", nil, "pairs to score: 'user item [rating]' per line", type = "string" },
    { "out", "FILE", nil, "write the scores here (default: standard output)", type = "string" },
    { "unseen", "P", "mean", "pairs with an id never seen in training: mean or skip" },
    { "libmf-model", "FILE", nil, "read a model in LIBMF's text format (mf-train's, or mf.lua --save-libmf's) instead of --model; ids are LIBMF's rows (the files' ids, 0 allowed)", type = "string" },
    { "top", "N", nil, "instead of --pairs: the N best items of every trained user, without the items --rated lists for the user, as 'user item score' lines, best first", type = "int" },
    { "rated", "FILE", nil, "with --top: the ratings to leave out (the training file, 'user item rating' lines, plain or gzip)", type = "string" },
    { "index-base", "B", 1, "with --model: the smallest id in --rated (1, or 0 for LIBMF's files)", type = "int" },
  },
}

local opts = cli.parse(arg, spec)
if opts.model and opts.libmf_model then cli.fail(spec, "--model and --libmf-model exclude each other") end
if not opts.model and not opts.libmf_model then cli.fail(spec, "--model (or --libmf-model) is required") end
if opts.top then
  if opts.pairs then cli.fail(spec, "--top and --pairs exclude each other") end
  if opts.top < 1 then cli.fail(spec, "--top must be at least 1") end
  if not opts.rated then cli.fail(spec, "--top needs --rated FILE (the training ratings, left out of each user's list)") end
elseif not opts.pairs then
  cli.fail(spec, "--pairs is required (or --top N)")
elseif opts.rated then
  cli.fail(spec, "--rated applies to --top only")
end
if opts.unseen ~= "mean" and opts.unseen ~= "skip" then
  cli.fail(spec, ("--unseen must be mean or skip, not '%s'"):format(opts.unseen))
end
if opts.index_base ~= 0 and opts.index_base ~= 1 then
  cli.fail(spec, ("--index-base must be 0 or 1, not %d"):format(opts.index_base))
end
-- Checked before the model is read and the pairs scored: a missing input
-- or an --out that cannot be written is named now.
cli.check_input(spec, opts.pairs, "--pairs")
cli.check_input(spec, opts.rated, "--rated")
cli.check_input(spec, opts.libmf_model, "--libmf-model")
cli.check_output(spec, opts.out, "--out")

-- The model ------------------------------------------------------------------
-- W_rows[u], H_rows[i] (1-based ids), seen_u/seen_i (> 0: trained), K and
-- mean; a LIBMF model's row r is id r + 1 here, and ids print as r.
local K, mean, W_rows, H_rows, seen_u, seen_i, nu, ni
local id_shift = 0 -- added to an input id to get the row, subtracted to print
if opts.libmf_model then
  local libmf = dofile(((arg and arg[0] or ""):match("^(.*/)") or "./") .. "mf_libmf.lua")
  local m = libmf.read(opts.libmf_model)
  K, mean, nu, ni, id_shift = m.k, m.b, m.m, m.n, 1
  W_rows, H_rows, seen_u, seen_i = {}, {}, {}, {}
  local zero = {}
  for d = 1, K do zero[d] = 0.0 end
  for r = 1, nu do W_rows[r], seen_u[r] = m.P[r] or zero, m.P[r] and 1 or 0 end
  for r = 1, ni do H_rows[r], seen_i[r] = m.Q[r] or zero, m.Q[r] and 1 or 0 end
else
  local meta_path = opts.model .. ".meta"
  local meta = {}
  do
    local f, err = io.open(meta_path, "r")
    if not f then error(("cannot open the model: %s"):format(err), 0) end
    local n = 0
    for line in f:lines() do
      n = n + 1
      local key, value = line:match("^(%S+)%s+(%S+)$")
      if not key then
        f:close()
        error(("%s:%d: malformed line: \"%s\""):format(meta_path, n, line:sub(1, 80)), 0)
      end
      meta[key] = value
    end
    f:close()
    if meta["orion-mf"] ~= "1" then
      error(("%s: not an mf.lua model (no 'orion-mf 1' line)"):format(meta_path), 0)
    end
    for _, key in ipairs { "k", "users", "items", "mean" } do
      if tonumber(meta[key]) == nil then
        error(("%s: missing or bad '%s'"):format(meta_path, key), 0)
      end
    end
  end
  -- Each part must be the one the manifest names (size and the CRC-32 its
  -- file ends with): a save that did not finish, or parts from two saves,
  -- are refused, and so is a manifest that does not name every part.
  for _, part in ipairs { "W", "H", "users", "items" } do
    local want = meta["file." .. part]
    local path = opts.model .. "." .. part
    if not want then
      error(("%s names no %s (no 'file.%s' line): it is not the manifest of a whole model; "
        .. "save the model again"):format(meta_path, path, part), 0)
    end
    local got, err = cli.file_stamp(path)
    if not got then error(("cannot open the model: %s"):format(err), 0) end
    if got ~= want then
      error(("%s does not belong to %s (a save that did not finish, or parts of two saves): "
        .. "its size and checksum are %s, the manifest says %s"):format(path, meta_path, got, want), 0)
    end
  end
  K, mean = math.tointeger(tonumber(meta.k)), tonumber(meta.mean)
  local W = orion.load(opts.model .. ".W")
  local H = orion.load(opts.model .. ".H")
  local wk, hk
  nu, wk = W:dims()
  ni, hk = H:dims()
  if wk ~= K or hk ~= K then
    error(("%s: the factors have %d and %d columns, the metadata says k %d")
      :format(opts.model, wk, hk, K), 0)
  end
  W_rows, H_rows = W:to_table(), H:to_table()
  seen_u = orion.load(opts.model .. ".users"):to_table()
  seen_i = orion.load(opts.model .. ".items"):to_table()
  if #seen_u ~= nu or #seen_i ~= ni then
    error(("%s: the id counts do not match the factors (%d users, %d items)")
      :format(opts.model, nu, ni), 0)
  end
end

-- With --out the scores are written whole at the end (orion.write_file:
-- the file appears complete or not at all, and a device such as /dev/null
-- or a named pipe is written into, not replaced); else they stream out.
local out_lines = {}
local function emit(text)
  if opts.out then out_lines[#out_lines + 1] = text else io.stdout:write(text) end
end

-- Top-k ----------------------------------------------------------------------
-- One iteration per user: every item not rated by the user is scored and
-- kept in the user's sorted list of the best N (ties: the smaller id
-- first), in TOPI/TOPS; users never trained get no list.
if opts.top then
  local N = opts.top
  local W = orion.zeros { nu, K }
  local H = orion.zeros { ni, K }
  local SU, SI = orion.zeros { nu }, orion.zeros { ni }
  for u = 1, nu do
    SU:set(u, seen_u[u])
    for k = 1, K do W:set(u, k, W_rows[u][k]) end
  end
  for i = 1, ni do
    SI:set(i, seen_i[i])
    for k = 1, K do H:set(i, k, H_rows[i][k]) end
  end
  -- The model's ids as orion.text_file numbers them: a LIBMF model's rows
  -- are the files' ids, counted from 0.
  local rated = orion.text_file(opts.rated, { value_type = "f64", dims = { nu, ni },
    index_base = opts.libmf_model and 0 or opts.index_base })
  local RATED = orion.zeros { nu, ni, type = "f32" }
  orion.parallel_for(rated, function(u, i, r) RATED[u][i] = 1 end)
  local TOPI, TOPS = orion.zeros { nu, N }, orion.zeros { nu, N }
  orion.parallel_for(SU, function(u, s)
    if s <= 0 then return end
    local wu, ru, ti, ts = W[u], RATED[u], TOPI[u], TOPS[u]
    local n = 0
    for j = 1, ni do
      if ru[j] == 0 and SI[j] > 0 then
        local hj = H[j]
        local z = 0.0
        for k = 1, K do z = z + wu[k] * hj[k] end
        if n < N or z > ts[N] then
          if n < N then n = n + 1 end
          local p = n
          while p > 1 and ts[p - 1] < z do
            ti[p] = ti[p - 1]
            ts[p] = ts[p - 1]
            p = p - 1
          end
          ti[p] = j
          ts[p] = z
        end
      end
    end
  end)
  local ids, scores, lists = TOPI:to_table(), TOPS:to_table(), 0
  for u = 1, nu do
    if seen_u[u] > 0 then
      lists = lists + 1
      for r = 1, N do
        local j = math.tointeger(ids[u][r])
        if j and j > 0 then emit(("%d %d %.6f\n"):format(u - id_shift, j - id_shift, scores[u][r])) end
      end
    end
  end
  if opts.out then orion.write_file(opts.out, table.concat(out_lines)) else io.stdout:flush() end
  io.stderr:write(("# predict: the top %d items of %d users, without the items %s lists\n"):format(N, lists, opts.rated))
  return
end

-- The pairs ------------------------------------------------------------------
local input, err = io.open(opts.pairs, "r")
if not input then error(("cannot open %s"):format(err), 0) end
local function id_of(text, lineno, line, what)
  local v = math.tointeger(tonumber(text))
  if v == nil or v < 1 - id_shift then
    input:close()
    error(("%s:%d: the %s id must be a %s integer: \"%s\"")
      :format(opts.pairs, lineno, what, id_shift == 0 and "positive" or "non-negative", line:sub(1, 80)), 0)
  end
  return v + id_shift
end

local scored, unseen, rated, sse = 0, 0, 0, 0.0
local lineno = 0
for line in input:lines() do
  lineno = lineno + 1
  local body = line:gsub("\r$", "")
  if body:match("^%s*$") == nil and body:match("^%s*#") == nil then
    local f = {}
    for w in body:gmatch("%S+") do f[#f + 1] = w end
    if #f < 2 or #f > 3 then
      input:close()
      error(("%s:%d: expected 'user item [rating]', found %d fields: \"%s\"")
        :format(opts.pairs, lineno, #f, body:sub(1, 80)), 0)
    end
    local u = id_of(f[1], lineno, body, "user")
    local i = id_of(f[2], lineno, body, "item")
    local r
    if f[3] then
      r = tonumber(f[3])
      if r == nil or r ~= r then
        input:close()
        error(("%s:%d: the rating is not a number: \"%s\"")
          :format(opts.pairs, lineno, body:sub(1, 80)), 0)
      end
    end
    local known = u <= nu and i <= ni and seen_u[u] > 0 and seen_i[i] > 0
    local score
    if known then
      local wu, hi = W_rows[u], H_rows[i]
      score = 0.0
      for k = 1, K do score = score + wu[k] * hi[k] end
    else
      unseen = unseen + 1
      if opts.unseen == "mean" then score = mean end
    end
    if score ~= nil then
      scored = scored + 1
      emit(("%d %d %.6f\n"):format(u - id_shift, i - id_shift, score))
      if r ~= nil then
        rated = rated + 1
        sse = sse + (r - score) ^ 2
      end
    end
  end
end
input:close()
if opts.out then
  orion.write_file(opts.out, table.concat(out_lines))
else
  io.stdout:flush() -- the scores come before the summary, on a pipe too
end

local summary = ("# predict: %d pairs scored, %d with an unseen id (%s)")
  :format(scored, unseen, opts.unseen == "mean" and ("scored with the training mean " .. ("%.4f"):format(mean)) or "skipped")
if rated > 0 and rated == scored then
  summary = summary .. ("; rmse %.4f"):format(math.sqrt(sse / rated))
end
io.stderr:write(summary, "\n")
orion.record { scored = scored, unseen = unseen, rmse = rated > 0 and rated == scored and math.sqrt(sse / rated) or nil }
