-- Permuted keys: the users of a ratings matrix and the rows of the user
-- factors W go through one permutation; the script keeps seeing the
-- original ids, the loop sees the permuted ones.
local orion = require "orion"
local R = orion.text_file("docs/examples/tiny.txt")   -- "user item rating"
local W = orion.array { 3, 1, init = 1 }
local p = orion.permutation(3, 7)
print(p, p:forward(1), p:forward(2), p:forward(3))
R:permute_keys(1, p)
W:permute_keys(1, p)
orion.parallel_for(R, function(u, i, r) W[u][1] = W[u][1] + r end)
print("W", W:get(1, 1), W:get(2, 1), W:get(3, 1))     -- original user ids
local u1 = orion.accumulator("max")   -- the key user 1's rating has in a loop
orion.parallel_for(R, function(u, i, r) if r == 5 then u1:add(u) end end)
print("user 1 in the loop", u1:get())
R:save("/tmp/permute-example.txt")
io.write((io.open("/tmp/permute-example.txt"):read("a")))
os.remove("/tmp/permute-example.txt")
