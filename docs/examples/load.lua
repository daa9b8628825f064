local orion = require "orion"
local d = "docs/examples/"
local R = orion.text_file(d .. "tiny.txt")                  -- coo, 1-based, f64
print(R, R:nnz(), R:is_sparse())
for _, e in ipairs(R:to_table()) do print(table.concat(e, " ")) end
local C = orion.text_file(d .. "tiny.csv", { format = "csv", header = true, value_type = "f32" })
print(C)
local M = orion.text_file(d .. "ml.dat", { format = "movielens" })
print(M)
local X, y = orion.text_file(d .. "svm.txt", { format = "libsvm" })
print(X, y, table.concat(y:to_table(), " "))
local D = orion.text_file(d .. "docword.txt", { format = "uci-bow", value_type = "i32" })
print(D, D:get(1, 4), D:get(2, 1))
local B = orion.text_file(d .. "tiny.txt", { dims = { 5, 4 } })
print(B)
