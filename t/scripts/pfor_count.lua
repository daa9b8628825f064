-- parallel_for runs the body once per stored element, sparse or dense.
-- usage: orion-driver pfor_count.lua COO-FILE
local orion = require "orion"

local R = orion.text_file(arg[1])
local calls = orion.accumulator("sum")
local keysum = orion.accumulator("sum")
local vsum = orion.accumulator("sum", 0.0)
orion.parallel_for(R, function(i, j, v)
  calls:add(1)
  keysum:add(i * 100 + j)
  vsum:add(v)
end)
print(("sparse nnz=%d calls=%d keysum=%d vsum=%.2f"):format(
  R:nnz(), calls:get(), keysum:get(), vsum:get()))

-- A returned value replaces the element of a sparse array too.
orion.parallel_for(R, function(i, j, v) return v * 2 + i end)
print(("sparse updated (2,3)=%.2f (1,1)=%.2f (1,3)=%s nnz=%d"):format(
  R:get(2, 3), R:get(1, 1), tostring(R:get(1, 3)), R:nnz()))

-- Dense: every element once, none twice.
local D = orion.zeros{3, 4}
local seen = orion.zeros{3, 4, type = "i32"}
calls:reset()
orion.parallel_for(D, function(i, j, v)
  calls:add(1)
  local row = seen[i]
  row[j] = row[j] + 1
end)
local once = 0
for _, row in ipairs(seen:to_table()) do
  for _, c in ipairs(row) do
    if c == 1 then once = once + 1 end
  end
end
print(("dense nnz=%d calls=%d once=%d"):format(D:nnz(), calls:get(), once))

-- 1-D dense.
local V = orion.array{7, type = "i64"}
calls:reset()
orion.parallel_for(V, function(i, v) calls:add(i) end)
print(("vector nnz=%d keysum=%d"):format(V:nnz(), calls:get()))
