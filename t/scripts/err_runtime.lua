-- A runtime error in the script itself.
local orion = require "orion"
local config = nil
print("before the error")
local lr = config.lr -- @raise
print("not reached")
