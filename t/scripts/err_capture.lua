-- Bodies that capture what cannot be shipped, or assign a global or an
-- upvalue.
-- usage: orion-driver err_capture.lua file|coroutine|global|globalfile|
--        upvalue|upvalue_nested|upvalue_serial
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
elseif which == "upvalue" then
  local sum = 0
  orion.parallel_for(A, function(i, v) -- @upvalue
    local x = v + i
    sum = sum + x -- @upassign
  end)
  print(sum)
elseif which == "upvalue_nested" then
  -- Through a closure made inside the body: still the script's local.
  local count = 0
  orion.parallel_for(A, function(i, v) -- @upvalue_nested
    local seen = 0
    local function bump()
      seen = seen + 1 -- the body's own local: allowed
      count = count + 1 -- @nestedassign
    end
    bump()
  end)
  print(count)
elseif which == "upvalue_serial" then
  -- Not analysed, still refused.
  local last = 0
  orion.parallel_for(A, function(i, v) -- @upvalue_serial
    last = i -- @serialassign
  end, {schedule = "serial"})
  print(last)
end
print("not reached")
