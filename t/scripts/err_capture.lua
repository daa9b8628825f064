-- Bodies that capture what cannot be shipped, or assign a global.
-- usage: orion-driver err_capture.lua file|coroutine|global|globalfile
local orion = require "orion"
local A = orion.array{3}
local which = arg[1]
local log = io.stderr
local co = coroutine.create(function() end)
LOGFILE = io.stdout

if which == "file" then
  orion.parallel_for(A, function(i, v) -- @file
    log:write(i, "\n")
  end)
elseif which == "coroutine" then
  orion.parallel_for(A, function(i, v) -- @coroutine
    coroutine.resume(co)
  end)
elseif which == "global" then
  orion.parallel_for(A, function(i, v) -- @global
    local x = v + i
    total = x -- @assign
  end)
elseif which == "globalfile" then
  orion.parallel_for(A, function(i, v) -- @globalfile
    LOGFILE:write(i)
  end)
end
print("not reached")
