-- Returned values, writes through slices (views), and 3-D arrays.
local orion = require "orion"

-- A returned value replaces the element; nil leaves it as it was.
local A = orion.array{2, 3, type = "i64"}
orion.parallel_for(A, function(i, j, v) return i * 10 + j end)
orion.parallel_for(A, function(i, j, v)
  if j == 2 then return v * 2 end
end)
local t = A:to_table()
print("returned " .. table.concat(t[1], " ") .. " / " .. table.concat(t[2], " "))

-- A slice is a view: writing through it lands in the array.
local W = orion.zeros{2, 3}
local S = orion.array{2, 3}
orion.parallel_for(S, function(u, k, v)
  local w = W[u]
  w[k] = u + k / 10
end)
local wt = W:to_table()
print("slices " .. table.concat(wt[1], " ") .. " / " .. table.concat(wt[2], " "))

-- 3-D: T[i][j][k] reads and U[i][j][k] = x writes.
local T = orion.zeros{2, 3, 4, type = "i32"}
orion.parallel_for(T, function(i, j, k, v) return i * 100 + j * 10 + k end)
local U = orion.zeros{2, 3, 4}
local mismatches = orion.accumulator("sum")
local shape = orion.accumulator("max")
orion.parallel_for(T, function(i, j, k, v)
  U[i][j][k] = T[i][j][k] + 0.5
  local plane = T[i]
  if plane[j][k] ~= v then mismatches:add(1) end
  shape:add(#T * 100 + #T[i] * 10 + #plane[j])
end)
print(("3d T(2,3,4)=%d T(1,2,3)=%d U(2,3,4)=%.1f U(1,1,1)=%.1f mismatches=%d shape=%d"):format(
  T:get(2, 3, 4), T:get(1, 2, 3), U:get(2, 3, 4), U:get(1, 1, 1),
  mismatches:get(), shape:get()))
