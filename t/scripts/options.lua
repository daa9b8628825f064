-- Every option key is checked: a typo is an error naming the key.
-- usage: orion-driver options.lua pfor|array|text|type|tier [DATA]
local orion = require "orion"
local A = orion.array{3}
local which = arg[1]

if which == "pfor" then
  orion.parallel_for(A, function(i, v) end, {orderd = true}) -- @pfor
elseif which == "array" then
  local B = orion.array{3, typ = "f32"} -- @array
elseif which == "text" then
  local R = orion.text_file(arg[2], {fromat = "coo"}) -- @text
elseif which == "type" then
  local B = orion.array{3, type = "f16"} -- @type
elseif which == "tier" then
  orion.parallel_for(A, function(i, v) end, {tier = "fpga"}) -- @tier
end
print("not reached")
