-- Loads a coo file (orion-driver load_progress.lua FILE) and prints its
-- element count.
local orion = require "orion"

local A = orion.text_file(arg[1], { format = "coo" })
print(("loaded %d elements"):format(A:nnz()))
