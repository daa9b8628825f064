-- A:permute_keys and orion.permutation refuse what they cannot do, naming
-- the array by the script's name for it (t/test_permute.c).
local orion = require "orion"
local ratings = orion.synthetic_ratings { users = 30, items = 20, ratings = 200, seed = 1 }
local W = orion.array { 30, 4 }
local H = orion.array { 25, 4 }
local H20 = orion.array { 20, 4 }
local S = orion.ragged { { { 1, 0.5 }, { 3, 2 } }, { { 2, 1 } } }
local function try(what, f)
  local ok, err = pcall(f)
  print(what, ok and "accepted" or (tostring(err):gsub("^[^:]*:%d+: ", "")))
end
try("dimension out of range", function() W:permute_keys(3, 1) end)
try("dimension not an integer", function() W:permute_keys("1", 1) end)
try("seed not an integer", function() W:permute_keys(1, 2.5) end)
try("seed a string", function() ratings:permute_keys(1, "x") end)
try("sizes differ", function() H:permute_keys(1, orion.permutation(30, 1)) end)
try("sparse dim larger", function() ratings:permute_keys(2, orion.permutation(10, 1)) end)
try("n not positive", function() orion.permutation(0, 1) end)
try("n not an integer", function() orion.permutation(1.5, 1) end)
try("twice", function() W:permute_keys(1, 9); W:permute_keys(1, 9) end)
try("loop with W not ratings", function()
  orion.parallel_for(ratings, function(u, i, r) W[u][1] = W[u][1] + r end)
end)
ratings:permute_keys(1, 9):permute_keys(2, 3)
try("loop with H20 unpermuted", function()
  orion.parallel_for(ratings, function(u, i, r) H20[i][1] = H20[i][1] + r * W[u][1] end)
end)
H20:permute_keys(1, 3)
try("constant subscript", function()
  orion.parallel_for(ratings, function(u, i, r) H20[i][1] = H20[i][1] + W[3][1] end)
end)
try("offset subscript", function()
  orion.parallel_for(ratings, function(u, i, r) H20[i][1] = H20[i][1] + W[u - 1][1] end)
end)
local acc = orion.accumulator("sum", 0.0)
try("a consistent loop", function()
  orion.parallel_for(ratings, function(u, i, r) acc:add(r * W[u][1]) end)
end)
try("after a loop", function() ratings:permute_keys(2, 1) end)
try("W after a loop", function() W:permute_keys(2, 1) end)
S:permute_keys(1, 4)
orion.parallel_for(S, function(i, row) end)
print("ragged", S, S:get(1, 3), S:get(2, 2), S:get(1, 2))
