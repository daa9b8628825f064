-- A:assign: every element of a dense array from one list (in the order
-- of A:to_table() flattened, the last key fastest) or one number.
local orion = require "orion"
local V, S = orion.zeros { 4 }, orion.zeros { 4 }
local function twice(k, v) S[k] = 2 * v end
V:assign({ 0.5, 1, 1.5, 2 })
orion.parallel_for(V, twice) -- the executors see the new values
print("twice", table.concat(S:to_table(), " "))
V:assign(3)
orion.parallel_for(V, twice)
print("twice", table.concat(S:to_table(), " "))
local M = orion.array { 2, 3, type = "i32" }
M:assign({ 1, 2, 3, 4, 5, 6 })
print("M", M:get(1, 3), M:get(2, 1))
print(pcall(V.assign, V, { 1, 2 }))
print(pcall(V.assign, V, { 1, 2, "x", 4 }))
print(pcall(M.assign, M, { 1, 2, 3, 4, 5, 6.5 }))
print("unchanged", table.concat(V:to_table(), " "), M:get(2, 3))
local P = orion.zeros { 3 }:permute_keys(1, 7)
print(pcall(P.assign, P, 1))
