-- The loop deadline against bodies that catch it (issue 32): each case
-- runs a body that spins inside pcall, coroutine.wrap, coroutine.resume,
-- xpcall (with a handler that returns, and one that spins too) or a loop
-- of pcalls, with opts.timeout = 0.5.  Each loop must end with the
-- deadline's error within 5 s, not succeed: prints "NAME: stopped" and
-- the error's first line.  Then a
-- body that catches its own error and ends in time still runs.
local orion = require "orion"

local A = orion.zeros { 4 }
local function spin()
  local n = 0
  while true do
    n = n + 1
  end
end
local cases = {
  { "pcall", function(i) pcall(spin) end },
  { "coroutine.wrap", function(i) pcall(coroutine.wrap(spin)) end },
  { "coroutine.resume", function(i)
      coroutine.resume(coroutine.create(spin))
    end },
  { "xpcall", function(i) xpcall(spin, function(e) return e end) end },
  { "xpcall with a spinning handler", function(i) xpcall(spin, spin) end },
  { "pcall in a loop", function(i)
      while true do
        pcall(spin)
      end
    end },
}
local want = "ran past the loop's timeout of 0.5 s (opts.timeout or " ..
  "--loop-timeout)"
for _, c in ipairs(cases) do
  local t0 = orion.clock()
  local ok, err = pcall(orion.parallel_for, A, c[2],
    { timeout = 0.5, tier = "lua" })
  local took = orion.clock() - t0
  if not ok and tostring(err):find(want, 1, true) then
    print(("%s: stopped%s"):format(c[1], took < 5 and ""
      or (" LATE, after %.1f s"):format(took)))
    print("  " .. tostring(err):match("[^\n]*"))
  else
    print(("%s: NOT STOPPED after %.1f s: %s"):format(c[1], took,
      ok and "the loop succeeded" or tostring(err)))
  end
end
orion.parallel_for(A, function(i)
  local ok = pcall(error, "caught")
  return ok and -1 or i
end, { timeout = 5, tier = "lua" })
print(("in time: %g %g %g %g"):format(A:get(1), A:get(2), A:get(3),
  A:get(4)))
