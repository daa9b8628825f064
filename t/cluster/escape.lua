-- Ways out of the sandbox of loop bodies (issue 32): each case is a body
-- that tries to reach a refused library or function by a side door and,
-- should it succeed, writes a marker file with it or shows the text of a
-- file.  Each must fail with "... not available in loop bodies" and
-- leave no marker and no secret behind.  Prints "NAME: refused" per case,
-- then "escapes refused: N of M".
local orion = require "orion"

local X = orion.zeros { 2 }
local Y = orion.zeros { 2 }
local base = os.tmpname()
os.remove(base)
local marker = base .. ".escaped"
local secret = base .. ".secret"
local f = assert(io.open(secret, "w"))
f:write('return "SECRET-8f3e, the text of a file on the executor"\n')
f:close()

-- The shared Lua library this driver runs with (the executors load the
-- same one): what an attacker points package.cpath or loadlib at.
local liblua = "liblua5.4.so.0"
local maps = io.open("/proc/self/maps")
if maps then
  for line in maps:lines() do
    local path = line:match("(/%S*liblua[^/%s]*%.so[^/%s]*)$")
    if path then
      liblua = path
      break
    end
  end
  maps:close()
end

local touch = "touch " .. marker
local loadlib = package.loadlib
local bin = string.dump(function() return 1 end)

local cases = {
  { "package.searchers[1]", function(i, x)
      package.searchers[1]("string")
    end },
  -- The analysis refuses a body that assigns a field of a library table
  -- (issue 33): these run serially, unanalysed, so that the sandbox
  -- itself is what refuses.
  { "package.searchers[2]", function(i, x)
      package.path = secret
      local loader = package.searchers[2]("x")
      error(loader("x", secret), 0)
    end, { schedule = "serial" } },
  { "package.searchers[3]", function(i, x)
      package.cpath = liblua
      local loader = package.searchers[3]("os")
      loader("os", liblua).execute(touch)
    end, { schedule = "serial" } },
  { "package.searchers[4]", function(i, x)
      package.searchers[4]("os.execute")
    end },
  { "package.cpath", function(i, x)
      package.cpath = liblua
    end, { schedule = "serial" } },
  { "package.loadlib (saved)", function(i, x)
      loadlib(liblua, "luaopen_os")().execute(touch)
    end },
  { "_G.package", function(i, x)
      _G.package.searchers[3]("os")
    end },
  -- The analysis refuses a body that uses _G as a value (issue 33): run
  -- it serially, unanalysed, so that the sandbox itself is what refuses.
  { "rawget(_G, 'package')", function(i, x)
      rawget(_G, "package").loadlib(liblua, "luaopen_os")().execute(touch)
    end, { schedule = "serial" } },
  { "load('return package')", function(i, x)
      load("return package.loadlib")()(liblua, "luaopen_os")().execute(touch)
    end },
  { "string.dump", function(i, x)
      load(string.dump(function() end))
    end },
  { "load(bytecode)", function(i, x)
      assert(load(bin))()
    end },
  { "load(bytecode, 'b')", function(i, x)
      assert(load(bin, "bin", "b"))()
    end },
  { "getmetatable('').__index.dump", function(i, x)
      getmetatable("").__index.dump(function() end)
    end },
  { "('').dump", function(i, x)
      (""):dump()
    end },
  { "collectgarbage", function(i, x)
      collectgarbage("stop")
    end },
  { "setmetatable(__gc)", function(i, x)
      setmetatable({}, { __gc = function()
        while true do
        end
      end })
    end },
  { "getmetatable(array).__gc", function(i, x)
      getmetatable(Y).__gc = function()
        while true do
        end
      end
    end, { schedule = "serial" } },
  { "getmetatable(io.stdout).__gc", function(i, x)
      getmetatable(io.stdout).__gc = function()
        while true do
        end
      end
    end },
  { "debug.getregistry", function(i, x)
      debug.getregistry()._LOADED.os.execute(touch)
    end },
  { "coroutine.wrap(os.execute)", function(i, x)
      coroutine.wrap(os.execute)(touch)
    end },
  { "coroutine.resume(require)", function(i, x)
      local ok, lib = coroutine.resume(coroutine.create(require), "os")
      if not ok then
        error(lib, 0)
      end
      lib.execute(touch)
    end },
  { "coroutine.wrap(load package)", function(i, x)
      coroutine.wrap(function()
        return load("return package.searchers")()[3]("os")
      end)()
    end },
  { "pcall(os.getenv)", function(i, x)
      local ok, v = pcall(os.getenv, "ORION_TOKEN")
      error(ok and ("token " .. tostring(v)) or v, 0)
    end },
  { "io.stdin", function(i, x)
      io.stdin:setvbuf("no")
    end },
}

local refused = 0
for _, c in ipairs(cases) do
  local ok, err = pcall(orion.parallel_for, X, c[2], c[3])
  err = tostring(err)
  local m = io.open(marker)
  local why
  if m then
    m:close()
    os.remove(marker)
    why = "ESCAPED: it wrote " .. marker
  elseif err:find("SECRET-8f3e", 1, true) then
    why = "ESCAPED: it read " .. secret
  elseif ok then
    why = "NOT REFUSED: the loop ran"
  elseif not err:find("not available in loop bodies", 1, true) then
    why = "NOT REFUSED: " .. err
  end
  if why then
    print(("%s: %s"):format(c[1], why))
  else
    refused = refused + 1
    print(("%s: refused"):format(c[1]))
  end
end
os.remove(secret)
print(("escapes refused: %d of %d"):format(refused, #cases))
