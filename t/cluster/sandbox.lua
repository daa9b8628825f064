-- Loop bodies run sandboxed unless orion-driver --allow-io: each refused
-- function fails the body with its name and the way out; what stays
-- (os.clock, text chunks through load, math, string) works.  With
-- --allow-io (arg[1] == "allow") the same calls succeed.
local orion = require "orion"

local allow = arg[1] == "allow"
local X = orion.zeros { 2 }
local path = os.tmpname()
os.remove(path)
local cases = {
  { "os.execute", function(i, x) os.execute("true") end },
  { "io.open", function(i, x) local f = io.open(path, "w"); f:write("x"); f:close() end },
  { "io.popen", function(i, x) io.popen("true"):close() end },
  { "os.getenv", function(i, x) local v = os.getenv("PATH") end },
  { "os.remove", function(i, x) os.remove(path) end },
  { "require", function(i, x) require("string") end },
  { "debug.getinfo", function(i, x) debug.getinfo(1) end },
}
-- A captured standard function arrives as the refusing one too.
local ex = os.execute
cases[#cases + 1] = { "os.execute", function(i, x) ex("true") end }
for _, c in ipairs(cases) do
  local ok, err = pcall(orion.parallel_for, X, c[2])
  if allow then
    print(("%s: %s"):format(c[1], ok and "allowed" or "FAILED " .. tostring(err)))
  else
    local want = c[1] .. " is not available in loop bodies (orion-driver --allow-io allows it)"
    print(("%s: %s"):format(c[1], (not ok and tostring(err):find(want, 1, true))
      and "refused" or "NOT REFUSED " .. tostring(err)))
  end
end
os.remove(path)
-- A binary chunk through load is refused; a text chunk is fine.
local bin = string.dump(function() return 1 end)
local ok, err = pcall(orion.parallel_for, X, function(i, x)
  local f = load(bin, "c", "b")
  return f()
end)
print("load binary: " .. ((allow and ok) and "allowed"
  or (not ok and tostring(err):find("binary chunks are not available", 1, true)) and "refused"
  or "WRONG " .. tostring(err)))
ok, err = pcall(orion.parallel_for, X, function(i, x)
  return load("return 40 + " .. i)() + os.clock() * 0
end)
print(("load text, os.clock: %s %s"):format(ok and "ok" or tostring(err), X:get(2)))
