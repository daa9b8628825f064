-- LIBMF's text model format, written by mf.lua --save-libmf and read by
-- predict.lua --libmf-model (LIBMF's mf_save_model / mf_load_model):
--
--   f FUN      the loss's -f code
--   m M        rows of P (users), n N: rows of Q (items), k K: factors
--   b B        the score of a pair with an unknown id (the training mean)
--   pR T v1 .. vK    row R (0-based, the file's id) of P; "F" and K zeros
--   qR T v1 .. vK    for a row no training rating reached (LIBMF: NaN)
--
-- Values are written with 9 significant digits, so f32 factors read back
-- exactly.  Orion-C's id x (1-based) is LIBMF's row x - 1 + base, base
-- being the files' smallest id (--index-base): the row LIBMF gives the
-- same id when it reads the same files.

local orion = require "orion"

local M = {}

-- model: { fun, b, k, base, P, Q (lists of rows of k numbers, 1-based ids),
-- seen_p, seen_q (per id, > 0 when trained) }.
function M.write(path, model)
  local out = {}
  local P, Q, k, base = model.P, model.Q, model.k, model.base
  local extra = base == 1 and 1 or 0 -- row 0, no id of a 1-based file
  out[1] = ("f %d\nm %d\nn %d\nk %d\nb %.9g\n"):format(model.fun, #P + extra, #Q + extra, k, model.b)
  local zeros = ("0 "):rep(k)
  for _, part in ipairs { { "p", P, model.seen_p }, { "q", Q, model.seen_q } } do
    local prefix, rows, seen = part[1], part[2], part[3]
    if base == 1 then out[#out + 1] = ("%s0 F %s\n"):format(prefix, zeros) end
    for id, row in ipairs(rows) do
      local row_id = id - 1 + base
      if seen[id] > 0 then
        local v = {}
        for d = 1, k do v[d] = ("%.9g"):format(row[d]) end
        out[#out + 1] = ("%s%d T %s \n"):format(prefix, row_id, table.concat(v, " "))
      else
        out[#out + 1] = ("%s%d F %s\n"):format(prefix, row_id, zeros)
      end
    end
  end
  orion.write_file(path, table.concat(out))
end

-- Reads a LIBMF model: { fun, m, n, k, b, P, Q }, P[r + 1] the row of
-- LIBMF's row r, or false for an "F" row.  Errors name the file and line.
function M.read(path)
  local f, err = io.open(path, "r")
  if not f then error(("cannot open the LIBMF model: %s"):format(err), 0) end
  local lineno, model = 0, {}
  local function bad(what, line)
    f:close()
    error(("%s:%d: %s: \"%s\""):format(path, lineno, what, (line or ""):sub(1, 80)), 0)
  end
  for _, key in ipairs { "f", "m", "n", "k", "b" } do
    local line = f:read("l")
    lineno = lineno + 1
    if line == nil then bad(("the file ends before its '%s' line (is it a LIBMF model?)"):format(key)) end
    local kk, v = line:match("^(%a)%s+(%S+)%s*$")
    v = tonumber(v)
    if kk ~= key or v == nil then bad(("expected '%s NUMBER' (LIBMF's model header)"):format(key), line) end
    if key ~= "b" and (math.tointeger(v) == nil or v < 0) then
      bad(("'%s' must be a non-negative integer"):format(key), line)
    end
    model[key] = key == "b" and v or math.tointeger(v)
  end
  if model.k < 1 then bad("'k' must be at least 1") end
  for _, part in ipairs { { "p", "m", "P" }, { "q", "n", "Q" } } do
    local rows = {}
    for r = 0, model[part[2]] - 1 do
      local line = f:read("l")
      lineno = lineno + 1
      if line == nil then
        bad(("the file ends at row %d of %s's %d (truncated?)"):format(r, part[1], model[part[2]]))
      end
      local fields = {}
      for w in line:gmatch("%S+") do fields[#fields + 1] = w end
      if fields[1] ~= part[1] .. r then bad(("expected row %s%d"):format(part[1], r), line) end
      if #fields ~= model.k + 2 or (fields[2] ~= "T" and fields[2] ~= "F") then
        bad(("expected '%s%d T|F' and %d numbers"):format(part[1], r, model.k), line)
      end
      if fields[2] == "T" then
        local row = {}
        for d = 1, model.k do
          row[d] = tonumber(fields[d + 2])
          if row[d] == nil or row[d] ~= row[d] then bad(("value %d is not a number"):format(d), line) end
        end
        rows[r + 1] = row
      else
        rows[r + 1] = false
      end
    end
    model[part[3]] = rows
  end
  f:close()
  return model
end

return M
