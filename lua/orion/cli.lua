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
-- and exits 2; --help prints the usage and exits 0.

local cli = {}

local function fail(spec, msg)
  io.stderr:write(spec.name, ": ", msg, "\nTry '", spec.name, " --help'.\n")
  os.exit(2, true)
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
