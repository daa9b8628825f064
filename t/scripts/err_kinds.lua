-- Errors a loop body raises, each of which must read the same on any
-- number of executors (t/test_scripts.c compares --executors 0 and 2).
-- usage: orion-driver err_kinds.lua CASE DATA
-- DATA is a "i j v" text file with keys within 3 x 3.
local orion = require "orion"
local S = orion.text_file(arg[2])
local A = orion.array{3, 3}
local W = orion.zeros{3, 2}
local B = orion.buffer(W, {apply = "add"})
local acc = orion.accumulator("sum")
local which = arg[1]

if which == "sparse" then
  -- A sparse array named by a body that iterates a dense one.
  orion.parallel_for(A, function(i, j, v)
    return S[i][j] -- @sparse
  end)
elseif which == "sparse_iter" then
  -- A second sparse array, of another type, named by a body that iterates
  -- a sparse one: the iterated array's blocks must keep their own type.
  local T = orion.synthetic_ratings{users = 3, items = 3, ratings = 4,
                                    seed = 1}
  orion.parallel_for(S, function(i, j, v)
    W[i][1] = T[i][j] -- @sparse_iter
  end)
elseif which == "slice" then
  orion.parallel_for(A, function(i, j, v)
    W[i] = v -- @slice
  end)
elseif which == "fraction" then
  orion.parallel_for(A, function(i, j, v)
    return W[i][j / 2] -- @fraction
  end)
elseif which == "string" then
  orion.parallel_for(A, function(i, j, v)
    return W[i]["x"] -- @string
  end)
elseif which == "acc" then
  orion.parallel_for(A, function(i, j, v)
    acc:add("x") -- @acc
  end)
elseif which == "buffer" then
  orion.parallel_for(A, function(i, j, v)
    B[i][j] = B[i][j] + v -- @buffer
  end)
elseif which == "nil" then
  orion.parallel_for(A, function(i, j, v)
    error(nil) -- @nil
  end)
elseif which == "table" then
  orion.parallel_for(A, function(i, j, v)
    error({code = 7}) -- @table
  end)
elseif which == "level0" then
  orion.parallel_for(A, function(i, j, v)
    error("no position", 0) -- @level0
  end)
elseif which == "intdiv" then
  orion.parallel_for(A, function(i, j, v)
    W[1][1] = i // (j - j) -- @intdiv
  end)
elseif which == "apply" then
  local C = orion.buffer(W, {apply = function(old, delta)
    return old + delta.x -- @apply
  end})
  orion.parallel_for(A, function(i, j, v)
    C[i][1] = C[i][1] + v
  end)
end
print("not reached")
