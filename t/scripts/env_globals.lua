-- Globals a body reaches through its environment, through the global
-- table's __index, or through a builtin that gives an argument back
-- (issue 33, classes 2, 3 and 5): on any number of executors each loop
-- gives the serial result or is refused saying why.
local orion = require "orion"
local N, M = 12, 5
local A = orion.zeros { N, M }
W = orion.zeros { N, 2 } -- a global: the bodies reach it through _ENV

-- _ENV.W is the global W: rows follow key 1, so each row sums its j.
orion.parallel_for(A, function(i, j)
  _ENV.W[i][1] = _ENV["W"][i][1] + j
end)
local rows = {}
for i = 1, N do rows[#rows + 1] = ("%g"):format(W:get(i, 1)) end
print("env rows", table.concat(rows, " "))

local function refusal(body, over)
  local ok, err = pcall(orion.parallel_for, over or A, body)
  return ok and "accepted" or (tostring(err):gsub("\n", " | "))
end

-- A recurrence through _ENV.V is one: refused, and right when run serially.
local B = orion.zeros { N }
V = orion.zeros { N }
local function count(i)
  if i > 1 then _ENV.V[i] = _ENV.V[i - 1] + 1 else _ENV.V[i] = 1 end -- @count
end
print("recurrence", refusal(count, B))
orion.parallel_for(B, count, { schedule = "serial" })
local vals = {}
for i = 1, N do vals[#vals + 1] = ("%g"):format(V:get(i)) end
print("serial", table.concat(vals, " "))

-- The environment as a value could reach any global: refused.
print("rawset", refusal(function(i, j)
  if i == 1 then rawset(_ENV, "OFF", 1) end -- @rawset
  W[i][1] = j
end))

-- A builtin that gives its argument back: pcall returns what error raised.
print("error", refusal(function(i, j)
  local ok, row = pcall(function() error(W[1]) end) -- @error
  row[2] = row[2] * 2 + j
end))

-- A global only the global table's __index supplies: refused by name.
local hidden = { H = orion.zeros { N } }
setmetatable(_G, { __index = hidden })
print("index", refusal(function(i, j)
  H[i] = H[i] + j -- @index
end))
setmetatable(_G, nil)
