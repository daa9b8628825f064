-- The analysis reads the text each chunk was loaded with, not the file as
-- it is when the loop starts (docs/analysis.md, "Names").
-- usage: orion-driver src_edit.lua MODE DIR
--   loadfile, dofile, require: writes DIR/srcedit_body.lua, loads the body
--     from it that way, writes another body over it (same lines, same
--     parameters), then prints the loaded body's plan;
--   twice: loads two different texts from one file, then runs the first
--     one's body (analysed as the first text: the store keeps both, and
--     the body's compiled code tells which one it comes from);
--   twice-later: the same, running the second one's body (no recurrence:
--     it runs, W[9] = 9 as a serial run gives);
--   self: rewrites this script's own file before its loop (run a copy).
local orion = require "orion"
local mode, dir = arg[1], arg[2]

W = orion.zeros{9} -- a global, so that the body files see it
local V = orion.zeros{8}

-- The body that runs: each element adds one to the one before it, a
-- recurrence.  The text written over it afterwards has none.
local loaded = "return function(i, v)\n  W[i + 1] = W[i] + 1\nend\n"
local later = "return function(i, v)\n  W[i + 1] = i + 1\nend\n"
local path = dir .. "/srcedit_body.lua"

local function write(file, text)
  local f = assert(io.open(file, "wb"))
  f:write(text)
  f:close()
end

local body
if mode == "loadfile" then
  write(path, loaded)
  body = assert(loadfile(path))()
  write(path, later)
elseif mode == "dofile" then
  write(path, loaded)
  body = dofile(path)
  write(path, later)
elseif mode == "require" then
  package.path = dir .. "/?.lua;" .. package.path
  write(path, loaded)
  body = require "srcedit_body"
  write(path, later)
elseif mode == "twice" or mode == "twice-later" then
  write(path, loaded)
  body = assert(loadfile(path))()
  write(path, later)
  local second = assert(loadfile(path))()
  if mode == "twice-later" then body = second end
elseif mode == "self" then
  body = function(i, v)
    W[i + 1] = W[i] + 1 -- @self
  end
  -- The edit below changes the line above; its pattern is built in two
  -- pieces so that it matches that line only.
  local f = assert(io.open(arg[0], "rb"))
  local me = f:read("a")
  f:close()
  local n
  me, n = me:gsub("W%[i%] %+ 1 %-%- " .. "@self", "i + 1 -- edited")
  assert(n == 1, "the body line was not found")
  write(arg[0], me)
else
  error("unknown mode " .. tostring(mode))
end
io.write(orion.explain(V, body))
-- Run as planned: the recurrence forbids parallel blocks, so the loop is
-- refused; a plan made from the later text ran it, and its compiled code
-- ran the later text (W[9] = 9 instead of the 8 a serial run gives).
local ok, err = pcall(orion.parallel_for, V, body)
print("parallel", ok and ("W[9] " .. W:get(9)) or err)
