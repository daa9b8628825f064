-- save() and orion.load() round trips, binary and text (.txt).
-- usage: orion-driver save_load.lua DIR COO-FILE
local orion = require "orion"
local dir = arg[1]

local function same(A, B)
  local a, b = A:to_table(), B:to_table()
  local function eq(x, y)
    if type(x) ~= type(y) then return false end
    if type(x) ~= "table" then return x == y and math.type(x) == math.type(y) end
    if #x ~= #y then return false end
    for i = 1, #x do
      if not eq(x[i], y[i]) then return false end
    end
    return true
  end
  return eq(a, b)
end

local A = orion.randn{3, 4, seed = 2}
local F = orion.randn{5, type = "f32", seed = 3}
local I = orion.array{2, 3, type = "i32"}
I:set(2, 3, -7)
local L = orion.array{2, 2, 2, type = "i64"}
L:set(2, 2, 2, math.maxinteger)
local R = orion.text_file(arg[2])
for _, ext in ipairs{"bin", "txt"} do
  local arrays = {A = A, F = F, I = I, L = L, R = R}
  for _, name in ipairs{"A", "F", "I", "L", "R"} do
    local path = dir .. "/" .. name .. "." .. ext
    arrays[name]:save(path)
    local B = orion.load(path)
    print(ext, name, same(arrays[name], B), B:type(), B:is_sparse(),
      table.concat({B:dims()}, "x"), B:nnz())
  end
end
print("max", orion.load(dir .. "/L.txt"):get(2, 2, 2) == math.maxinteger)
