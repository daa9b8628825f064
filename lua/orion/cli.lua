-- orion.cli: `--long-option value` parsing for Orion-C apps.
--
--   local cli = require "orion.cli"
--   local opts = cli.parse(arg, {
--     name = "mf.lua", summary = "SGD matrix factorisation",
--     options = {
--       { "train", "FILE",  nil,  "training ratings" },
--       { "k",     "N",     32,   "latent factors", type = "int" },
--       { "lr",    "X",     0.01, "learning rate" },
--       { "quiet", false,   false, "a flag (no value)" },
--     } })
--
-- Each option is { name, METAVAR or false for a flag, default, help,
-- type = "int"|"number"|"string" (inferred from the default when absent) }.
-- Option names use dashes on the command line and underscores in the result
-- (--test-split -> opts.test_split).  A bad command line prints the problem
-- and a runnable help command (orion-driver SCRIPT --help) and exits 2; an
-- orion-driver option given after the script is named as one, with the
-- command line that puts it before the script.  --help prints the usage
-- and exits 0.  cli.check_output and cli.check_input check the files an
-- app writes and reads before it starts any work.

local cli = {}

-- A word as sh reads it back: quoted when it holds anything but the
-- characters of plain paths and options.
local function shell_word(w)
  if w ~= "" and not w:find("[^%w%-_./=:,@+%%]") then return w end
  return "'" .. w:gsub("'", "'\\''") .. "'"
end

-- The driver's words before the script (arg[-n] .. arg[-1], arg[-n] the
-- driver itself) and the script (arg[0]), as orion-driver passes them;
-- { "orion-driver" } and the spec's name outside it.
local function command_words(spec)
  local words, n = {}, 0
  if type(arg) == "table" and arg[0] ~= nil then
    while arg[-(n + 1)] ~= nil do n = n + 1 end
    for k = -n, -1 do words[#words + 1] = arg[k] end
    if #words == 0 then words[1] = "orion-driver" end
    return words, arg[0]
  end
  return { "orion-driver" }, spec.name
end

-- The command that prints the script's help, runnable as it stands.
local function help_command(spec)
  local words, script = command_words(spec)
  return ("%s %s --help"):format(shell_word(words[1]), shell_word(script))
end

local function fail(spec, msg)
  io.stderr:write(spec.name, ": ", msg, "\nTry '", help_command(spec), "'.\n")
  os.exit(2, true)
end

-- Whether "--NAME" is one of orion-driver's options, and whether it takes
-- a value (the table drivers/driver.c publishes; absent outside it).
local function driver_option(name)
  local ok, known = pcall(require, "orion.driver_options")
  if not ok or type(known) ~= "table" then return nil end
  return known[name]
end

-- argv with every orion-driver option that the script does not know moved
-- before the script, as a command line: what the user meant by
-- "orion-driver mf.lua --executors 4".
local function corrected_command(argv, spec, byname)
  local words, script = command_words(spec)
  local moved, rest, i = {}, {}, 1
  while argv[i] ~= nil do
    local a = argv[i]
    local name, inline = a:match("^%-%-([%w%-_]+)(=?)")
    local takes
    if name and not byname[name:gsub("_", "-")] then takes = driver_option(name) end
    if takes ~= nil then
      moved[#moved + 1] = a
      if takes and inline == "" and argv[i + 1] ~= nil then
        i = i + 1
        moved[#moved + 1] = argv[i]
      end
    else
      rest[#rest + 1] = a
    end
    i = i + 1
  end
  local all = {}
  for _, list in ipairs { words, moved, { script }, rest } do
    for _, w in ipairs(list) do all[#all + 1] = shell_word(w) end
  end
  return table.concat(all, " ")
end

function cli.usage(spec)
  local lines = { ("usage: orion-driver %s [OPTIONS]"):format(spec.name) }
  if spec.summary then lines[#lines + 1] = "\n" .. spec.summary end
  lines[#lines + 1] = "\nOptions:"
  for _, o in ipairs(spec.options) do
    local flag = "--" .. o[1]:gsub("_", "-")
    if o[2] then flag = flag .. " " .. o[2] end
    local def = ""
    if o[3] ~= nil and o[2] then def = (" (default: %s)"):format(tostring(o[3])) end
    lines[#lines + 1] = ("  %-22s %s%s"):format(flag, o[4] or "", def)
  end
  lines[#lines + 1] = ("  %-22s %s"):format("-h, --help", "show this help")
  if spec.epilog then lines[#lines + 1] = "\n" .. spec.epilog end
  return table.concat(lines, "\n") .. "\n"
end

local function kind_of(o)
  if o.type then return o.type end
  if not o[2] then return "flag" end
  if math.type(o[3]) == "integer" then return "int" end
  if type(o[3]) == "number" then return "number" end
  return "string"
end

function cli.parse(argv, spec)
  local opts, byname = {}, {}
  for _, o in ipairs(spec.options) do
    local key = o[1]:gsub("-", "_")
    byname[o[1]:gsub("_", "-")] = o
    opts[key] = o[3]
  end
  local i = 1
  while argv[i] ~= nil do
    local a = argv[i]
    if a == "-h" or a == "--help" then
      io.stdout:write(cli.usage(spec))
      os.exit(0, true)
    end
    local name, inline = a:match("^%-%-([%w%-_]+)=(.*)$")
    if not name then name = a:match("^%-%-([%w%-_]+)$") end
    if not name then fail(spec, ("unexpected argument '%s'"):format(a)) end
    local o = byname[name:gsub("_", "-")]
    if not o and driver_option(name) ~= nil then
      fail(spec, ("--%s is an option of orion-driver, not of %s: it must come before the script, as in\n  %s")
        :format(name, spec.name, corrected_command(argv, spec, byname)))
    end
    if not o then fail(spec, ("unknown option '--%s'"):format(name)) end
    local key = o[1]:gsub("-", "_")
    local kind = kind_of(o)
    if kind == "flag" then
      if inline then fail(spec, ("--%s takes no value"):format(name)) end
      opts[key] = true
    else
      local v = inline
      if v == nil then
        i = i + 1
        v = argv[i]
        if v == nil then fail(spec, ("--%s needs a value (%s)"):format(name, o[2])) end
      end
      if kind == "int" then
        local n = math.tointeger(tonumber(v))
        if not n then fail(spec, ("--%s needs an integer, not '%s'"):format(name, v)) end
        v = n
      elseif kind == "number" then
        local n = tonumber(v)
        if not n then fail(spec, ("--%s needs a number, not '%s'"):format(name, v)) end
        v = n
      end
      opts[key] = v
    end
    i = i + 1
  end
  return opts
end

-- Raises a usage error from app code (exit 2), e.g. for a bad combination.
function cli.fail(spec, msg) fail(spec, msg) end

-- A warning from app code on stderr ("mf.lua: warning: ..."); the run
-- goes on.
function cli.warn(spec, msg)
  io.stderr:write(spec.name, ": warning: ", msg, "\n")
end

-- Checks an output option before any work starts (orion.check_output:
-- the folder exists and takes files, what stands at path is of the right
-- kind), so that a run does not train for hours and then fail to write
-- its result.  kind: "file" (default), "prefix" (files PATH.SUFFIX) or
-- "folder".  A path that cannot be written is a usage error naming the
-- option and the path (exit 2); a nil path (the option not given) passes.
function cli.check_output(spec, path, option, kind)
  if path == nil then return end
  local ok, err = pcall(require("orion").check_output, path, option, kind)
  if not ok then fail(spec, err) end
end

-- Checks an input option on the driver before any work starts: path
-- opens and reads (a folder does not), or a usage error naming the option
-- and the path (exit 2), before executors start and load it.  A nil path
-- passes.
function cli.check_input(spec, path, option)
  if path == nil then return end
  local f, err = io.open(path, "rb")
  if f then
    -- read(0) gives nil and no message at the end of a file (an empty
    -- one reads), nil and the reason when it cannot read (a folder).
    local _, rerr = f:read(0)
    f:close()
    if rerr == nil then return end
    err = rerr
  end
  if err:sub(1, #path + 2) == path .. ": " then err = err:sub(#path + 3) end
  fail(spec, ("%s %s: cannot read it: %s"):format(option, path, err))
end

-- "SIZE:CRC" of a saved array file (its size and the CRC-32 it ends
-- with, in hex), for an app's manifest of the files one save wrote; nil
-- and the error when it cannot be read.  A file under 4 bytes gives
-- "SIZE:?".
function cli.file_stamp(path)
  local f, err = io.open(path, "rb")
  if not f then return nil, err end
  local size = f:seek("end")
  local crc = "?"
  if size >= 4 then
    f:seek("set", size - 4)
    crc = f:read(4):gsub(".", function(c) return ("%02x"):format(c:byte()) end)
  end
  f:close()
  return ("%d:%s"):format(size, crc)
end

return cli
