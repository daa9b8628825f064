-- Loads each array file named on the command line and prints what
-- orion.load said: "PATH: loaded DIMS" or its error.
local orion = require "orion"

for _, path in ipairs(arg) do
  local ok, a = pcall(orion.load, path)
  if ok then
    print(("%s: loaded %s"):format(path, table.concat({ a:dims() }, " x ")))
  else
    print(a)
  end
end
