-- Scores (user, item) pairs with a model saved by mf.lua --save.
--
--   orion-driver apps/mf/predict.lua --model m --pairs pairs.txt [--out scores.txt]
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
  },
}

local opts = cli.parse(arg, spec)
if not opts.model then cli.fail(spec, "--model is required") end
if not opts.pairs then cli.fail(spec, "--pairs is required") end
if opts.unseen ~= "mean" and opts.unseen ~= "skip" then
  cli.fail(spec, ("--unseen must be mean or skip, not '%s'"):format(opts.unseen))
end
-- Checked before the model is read and the pairs scored: a missing input
-- or an --out that cannot be written is named now.
cli.check_input(spec, opts.pairs, "--pairs")
cli.check_output(spec, opts.out, "--out")

-- The model ------------------------------------------------------------------
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
local K, mean = math.tointeger(tonumber(meta.k)), tonumber(meta.mean)
local W = orion.load(opts.model .. ".W")
local H = orion.load(opts.model .. ".H")
local nu, wk = W:dims()
local ni, hk = H:dims()
if wk ~= K or hk ~= K then
  error(("%s: the factors have %d and %d columns, the metadata says k %d")
    :format(opts.model, wk, hk, K), 0)
end
local W_rows, H_rows = W:to_table(), H:to_table()
local seen_u = orion.load(opts.model .. ".users"):to_table()
local seen_i = orion.load(opts.model .. ".items"):to_table()
if #seen_u ~= nu or #seen_i ~= ni then
  error(("%s: the id counts do not match the factors (%d users, %d items)")
    :format(opts.model, nu, ni), 0)
end

-- The pairs ------------------------------------------------------------------
local input, err = io.open(opts.pairs, "r")
if not input then error(("cannot open %s"):format(err), 0) end
-- With --out the scores are written whole at the end (orion.write_file:
-- the file appears complete or not at all, and a device such as /dev/null
-- or a named pipe is written into, not replaced); else they stream out.
local scores = {}
local function emit(text)
  if opts.out then scores[#scores + 1] = text else io.stdout:write(text) end
end

local function id_of(text, lineno, line, what)
  local v = math.tointeger(tonumber(text))
  if v == nil or v < 1 then
    input:close()
    error(("%s:%d: the %s id must be a positive integer: \"%s\"")
      :format(opts.pairs, lineno, what, line:sub(1, 80)), 0)
  end
  return v
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
      emit(("%d %d %.6f\n"):format(u, i, score))
      if r ~= nil then
        rated = rated + 1
        sse = sse + (r - score) ^ 2
      end
    end
  end
end
input:close()
if opts.out then
  orion.write_file(opts.out, table.concat(scores))
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
