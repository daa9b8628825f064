-- Ragged arrays (docs/lua-api.md "Ragged arrays"): rows from Lua tables
-- and from libsvm, a body per row with #row, row:key(j), row:value(j),
-- reads of other arrays and buffered writes at a row's keys, save and
-- orion.load.  The same output on any number of executors.
-- usage: orion-driver [--executors N] ragged.lua DIR [TIER]
local orion = require "orion"
local dir = arg[1]
local tier = { tier = arg[2] or "auto" }

local function line(A)
  local t = A:to_table()
  for i, v in ipairs(t) do t[i] = ("%g"):format(v) end
  return table.concat(t, " ")
end

-- Row 2 has no pairs; row 3 repeats key 2.
local R = orion.ragged { { { 1, 0.5 }, { 3, 2 } }, {}, { { 2, 1.5 }, { 2, 1 } }, { { 3, 4 } } }
print(tostring(R), R:nnz())

local W = orion.array { 3, init = 1 }
W:set(3, 10)
local dot, len = orion.zeros { 4 }, orion.zeros { 4 }
local visited = orion.accumulator("sum", 0)
orion.parallel_for(R, function(i, row)
  local s = 0
  for j = 1, #row do s = s + row:value(j) * W[row:key(j)] end
  dot[i] = s
  len[i] = #row
  visited:add(1)
end, tier)
print("dot", line(dot))
print("len", line(len))
print("rows visited", visited:get())

-- Writes at a row's keys go through a buffer.
local C = orion.zeros { 3 }
local B = orion.buffer(C, { apply = "add" })
orion.parallel_for(R, function(i, row)
  for j = 1, #row do
    local k = row:key(j)
    B[k] = B[k] + row:value(j) * i
  end
end, tier)
print("column sums", line(C))

-- libsvm, one row per sample with the label alongside.
local f = assert(io.open(dir .. "/s.libsvm", "w"))
f:write("+1 1:0.5 4:2\n-1 2:1\n0\n1 3:0.25 1:1\n")
f:close()
local X, y = orion.text_file(dir .. "/s.libsvm", { format = "libsvm", rows = true })
print(tostring(X), "labels", line(y))
local Z = orion.zeros { 4 }
orion.parallel_for(X, function(i, row)
  local s = 0
  for j = 1, #row do s = s + row:key(j) * row:value(j) end
  Z[i] = s * y[i]
end, tier)
print("key.value times label", line(Z))

-- save and orion.load keep it ragged, binary and text.
for _, name in ipairs { "r.bin", "r.txt" } do
  R:save(dir .. "/" .. name)
  local R2 = orion.load(dir .. "/" .. name)
  local n = orion.accumulator("sum", 0)
  orion.parallel_for(R2, function(i, row) n:add(#row * i) end, tier)
  print(name, tostring(R2), n:get())
end

-- orion.ragged of a sparse DistArray: its rows sorted, each keeping its
-- pairs' order.
local S = orion.text_file(dir .. "/s.libsvm", { format = "libsvm" })
local R3 = orion.ragged(S)
print(tostring(S), tostring(R3))

-- uci-bow: one row per document, the counts as values.
local g = assert(io.open(dir .. "/docword.txt", "w"))
g:write("3\n4\n4\n1 1 2\n1 4 1\n3 2 5\n3 3 1\n")
g:close()
local Dw = orion.text_file(dir .. "/docword.txt", { format = "uci-bow", rows = true })
local words = orion.zeros { 3 }
orion.parallel_for(Dw, function(d, row)
  local n = 0
  for j = 1, #row do n = n + row:value(j) * row:key(j) end
  words[d] = n
end, tier)
print(tostring(Dw), "count times word", line(words))
