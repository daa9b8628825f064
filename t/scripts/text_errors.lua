-- A malformed data line: the error names the script line and FILE:LINE.
-- usage: orion-driver text_errors.lua DATA [skip]
local orion = require "orion"

if arg[2] == "skip" then
  local R = orion.text_file(arg[1], {format = "coo", on_error = "skip"})
  print("skipped, kept " .. R:nnz())
  return
end
local R = orion.text_file(arg[1], {format = "coo"}) -- @load
print("not reached")
