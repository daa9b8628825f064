-- A syntax error: reported before anything runs.
local orion = require "orion"
print("not reached")
local x = = 2 -- @syntax
