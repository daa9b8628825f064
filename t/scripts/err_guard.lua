-- The runtime guard: direct writes the plan did not expect.
-- usage: orion-driver err_guard.lua hook_lua|hook_slice|hook_c|hook_nn|alias
-- The hook_* cases run with ORION_TEST_PLAN_READONLY=B (B is then guarded
-- as if the plan placed it read-only); alias writes a buffer's target
-- through an alias that the analysis once missed (pcall passing on what
-- error raised), so the plan has it written only through the buffer.
local orion = require "orion"
local A = orion.array{8}
local which = arg[1]

if which == "hook_lua" then
  local B = orion.zeros{8}
  orion.parallel_for(A, function(i, v)
    B[i] = 2 * i -- @hook_lua
  end, { tier = "lua" })
  print("not reached", B:get(1))
elseif which == "hook_slice" then
  local B = orion.zeros{8, 2}
  orion.parallel_for(A, function(i, v)
    B[i][2] = i -- @hook_slice
  end, { tier = "lua" })
  print("not reached", B:get(1, 2))
elseif which == "hook_c" then
  local B = orion.zeros{8}
  orion.parallel_for(A, function(i, v)
    B[i] = 2 * i -- @hook_c
  end)
  print("not reached", B:get(1))
elseif which == "hook_nn" then
  local B = orion.zeros{8, 2}
  local nn = orion.nn
  orion.parallel_for(A, function(i, v)
    nn.write(B[i], nn.matrix(1, 2, i)) -- @hook_nn
  end)
  print("not reached", B:get(1, 2))
elseif which == "alias" then
  local T = orion.zeros{8}
  local Bf = orion.buffer(T, { apply = "add" })
  orion.parallel_for(A, function(i, v)
    Bf[i] = 1
    local _, t = pcall(function() error(T) end)
    t[i] = 5 -- @alias
  end)
  -- Serially each element is 5, then the buffer adds 1.
  print(T:get(1), T:get(8))
end
