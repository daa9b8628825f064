-- Permuted keys (A:permute_keys, orion.permutation): what the script sees
-- is the original keys, loops agree with a serial reference, files hold
-- the original keys.  Its output must not depend on the executor count
-- (t/test_permute.c runs it on 0, 1, 2 and 4).
-- usage: orion-driver permute.lua DIR
local orion = require "orion"
local dir = arg[1]

-- 1. The permutation: a bijection, the same for the same (n, seed).
local p = orion.permutation(10, 1)
local fw, seen = {}, {}
for k = 1, 10 do
  local v = p:forward(k)
  assert(p:inverse(v) == k and not seen[v])
  seen[v] = true
  fw[#fw + 1] = v
end
print(p, table.concat(fw, " "))
print("same object", orion.permutation(10, 1) == p)

-- 2. Ratings with skewed users: user u rates items 1..(13 - u), values
-- small integers so that sums are exact in any order.
local lines = {}
for u = 1, 12 do
  for i = 1, 13 - u do
    lines[#lines + 1] = ("%d %d %d"):format(u, i, (u * 3 + i) % 5 + 1)
  end
end
orion.write_file(dir .. "/r.txt", table.concat(lines, "\n") .. "\n")
local ratings = orion.text_file(dir .. "/r.txt")
-- test names only users 1..10 and items 1..9: smaller dims than the
-- permutations', which a sparse array may have.
local small = {}
for u = 1, 10 do small[#small + 1] = ("%d %d 1"):format(u, (u % 9) + 1) end
orion.write_file(dir .. "/t.txt", table.concat(small, "\n") .. "\n")
local test = orion.text_file(dir .. "/t.txt")
local W = orion.array { 12, 3, init = "rand", seed = 4 }
local H = orion.array { 12, 3, init = "rand", seed = 5 }

local function triples(A)
  local t = {}
  for _, e in ipairs(A:to_table()) do t[#t + 1] = ("%d,%d,%s"):format(e[1], e[2], e[3]) end
  table.sort(t)
  return table.concat(t, " ")
end
local before, wbefore, hist = triples(ratings), W:to_table(), ratings:histogram(1, 4)

local pu, pi = orion.permutation(12, 7), orion.permutation(12, 8)
ratings:permute_keys(1, pu):permute_keys(2, pi)
test:permute_keys(1, pu):permute_keys(2, pi)
W:permute_keys(1, pu)
H:permute_keys(1, 8) -- the same as pi: by (size, seed)
print(ratings, test, W)
print("dims", table.concat({ ratings:dims() }, "x"), table.concat({ test:dims() }, "x"))
print("ratings keys kept", triples(ratings) == before)
print("W rows kept", W:get(5, 2) == wbefore[5][2] and W:to_table()[12][3] == wbefore[12][3])
print("get/set at original keys", ratings:get(12, 1), ratings:get(1, 12), ratings:get(12, 2))
print("histogram of original keys", table.concat(ratings:histogram(1, 4), " "),
  table.concat(hist, " "))
local keys_ok = true
ratings:map(function(u, i, v) keys_ok = keys_ok and v == (u * 3 + i) % 5 + 1 end)
print("map sees original keys", keys_ok)
local rest, held = ratings:split(0.5, 3)
print("split keeps them", rest:permutation(1) == pu, held:permutation(2) == pi,
  held:nnz() + rest:nnz() == ratings:nnz())

-- 3. Loops: the reference on the driver, at original keys.
local ref = 0.0
for _, e in ipairs(ratings:to_table()) do
  ref = ref + e[3] * W:get(e[1], 1) * H:get(e[2], 1)
end
local acc = orion.accumulator("sum", 0.0)
orion.parallel_for(ratings, function(u, i, r) acc:add(r * W[u][1] * H[i][1]) end)
print("read loop", math.abs(acc:get() - ref) < 1e-9 * math.abs(ref))
-- A 2-D update loop: W[u][2] counts the ratings of u, H[i][2] sums them.
local C = orion.zeros { 12, 2 }
C:permute_keys(1, pu)
local D = orion.zeros { 12 }
D:permute_keys(1, pi)
orion.parallel_for(ratings, function(u, i, r)
  C[u][1] = C[u][1] + 1
  C[u][2] = C[u][2] + r
  D[i] = D[i] + r
end)
local cs, ds = {}, {}
for u = 1, 12 do cs[#cs + 1] = ("%d:%g"):format(C:get(u, 1), C:get(u, 2)) end
for i = 1, 12 do ds[#ds + 1] = ("%g"):format(D:get(i)) end
print("counts per user", table.concat(cs, " "))
print("sums per item", table.concat(ds, " "))
local tacc = orion.accumulator("sum", 0)
orion.parallel_for(test, function(u, i, r) tacc:add(C[u][1] * i) end)
local tref = 0
for _, e in ipairs(test:to_table()) do tref = tref + C:get(e[1], 1) * pi:forward(e[2]) end
print("test loop sees permuted keys", tacc:get() == tref)

-- 4. Files hold the original keys and dims; loading gives them back.
for _, ext in ipairs { "bin", "txt" } do
  ratings:save(dir .. "/R." .. ext)
  test:save(dir .. "/T." .. ext)
  C:save(dir .. "/C." .. ext)
  local R2, T2, C2 = orion.load(dir .. "/R." .. ext), orion.load(dir .. "/T." .. ext),
    orion.load(dir .. "/C." .. ext)
  local cok = true
  for u = 1, 12 do cok = cok and C2:get(u, 1) == C:get(u, 1) and C2:get(u, 2) == C:get(u, 2) end
  print(ext, R2, T2, triples(R2) == before, triples(T2) == triples(test), cok,
    R2:permutation(1))
end
local f = assert(io.open(dir .. "/T.txt"))
print((f:read("l")), (f:read("l")))
f:close()
