-- Runs several test scripts in one driver, so that they share one cluster
-- (t/slow_netcluster.sh starts a namespaced cluster once per executor
-- count, not once per script):
--
--   orion-driver suite.lua 'PATH [ARG...]' ...
--
-- Each argument is a script and its arguments, separated by spaces.  The
-- script runs with `arg` set to its own arguments, between the lines
-- "== begin SPEC" and "== end SPEC: ok" (or ": error: MESSAGE" with the
-- traceback; the next script still runs).  The suite fails at the end
-- when any script did.
local specs = { table.unpack(arg) }
local failed = {}
for _, spec in ipairs(specs) do
  local words = {}
  for w in spec:gmatch("%S+") do
    words[#words + 1] = w
  end
  local path = table.remove(words, 1)
  arg = { [0] = path, table.unpack(words) }
  print("== begin " .. spec)
  io.stdout:flush()
  local ok, err = xpcall(dofile, debug.traceback, path)
  io.stdout:flush()
  if ok then
    print("== end " .. spec .. ": ok")
  else
    print("== end " .. spec .. ": error: " .. tostring(err))
    failed[#failed + 1] = spec
  end
  io.stdout:flush()
end
if #failed > 0 then
  error(("%d of %d scripts failed: %s"):format(#failed, #specs,
    table.concat(failed, ", ")), 0)
end
