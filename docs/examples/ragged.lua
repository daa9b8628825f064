-- A ragged array: one row of (key, value) pairs per sample, with the
-- labels alongside; a body per row reads W at the row's keys and writes
-- through a buffer (docs/lua-api.md, "Ragged arrays").
local orion = require "orion"
local X, y = orion.text_file("docs/examples/svm.txt", { format = "libsvm", rows = true })
print(X, #y:to_table() .. " labels")
local W = orion.array { 3, init = 0.5 }
local G = orion.buffer(W, { apply = "add" })
local score = orion.zeros { 2 }
orion.parallel_for(X, function(i, row)
  local z = 0
  for j = 1, #row do z = z + W[row:key(j)] * row:value(j) end
  score[i] = z
  for j = 1, #row do
    local k = row:key(j)
    G[k] = G[k] + y[i] * row:value(j)
  end
end)
print("scores", table.concat(score:to_table(), " "))
print("W", table.concat(W:to_table(), " "))
local R = orion.ragged { { { 2, 1 }, { 2, 3 } }, {}, { { 1, 4 } } }
print(R, R:dims())
