-- format = "lines" with a Lua parse function.
-- usage: orion-driver lines.lua DATA
local orion = require "orion"

local R = orion.text_file(arg[1], { -- @load
  format = "lines",
  parse = function(line)
    if line:sub(1, 1) == "#" or line == "" then return nil end
    local u, i, r = line:match("^user(%d+)|item(%d+)|(%S+)$")
    if u == nil then error("not user|item|rating") end -- @parse
    return tonumber(u), tonumber(i), tonumber(r)
  end,
})
print("lines nnz=" .. R:nnz() .. " dims=" .. table.concat({R:dims()}, "x") ..
  " type=" .. R:type())
print(("values (1,1)=%.2f (2,5)=%.2f (3,2)=%.2f"):format(
  R:get(1, 1), R:get(2, 5), R:get(3, 2)))
local n = orion.accumulator("sum")
orion.parallel_for(R, function(u, i, r) n:add(1) end)
print("pfor calls=" .. n:get())
