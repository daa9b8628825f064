-- A damaged array file is refused with a checksum message.
-- usage: orion-driver corrupt.lua PATH
local orion = require "orion"
local path = arg[1]

orion.randn{8, 8, seed = 1}:save(path)
local f = assert(io.open(path, "r+b"))
local size = f:seek("end")
f:seek("set", size // 2)
local byte = f:read(1)
f:seek("set", size // 2)
f:write(string.char((byte:byte() + 1) % 256))
f:close()
print("corrupted " .. path)
local B = orion.load(path) -- @load
print("not reached")
