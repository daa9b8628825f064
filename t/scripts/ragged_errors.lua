-- Ragged arrays' errors: each is caught and its message printed (the
-- lines that matter), on any number of executors.
local orion = require "orion"
local R = orion.ragged { { { 1, 0.5 }, { 3, 2 } }, { { 2, 1 } } }
local W = orion.zeros { 3 }

local function try(what, f)
  local ok, msg = pcall(f)
  msg = tostring(msg)
  print(what, ok and "no error" or (msg:match("note: [^\n]*") or msg:match("row:[^\n]*")
    or msg:match("a body over[^\n]*") or msg:match("a ragged[^\n]*")
    or msg:match("orion%.ragged[^\n]*") or msg:match("[^\n]*")))
end

-- The whole message once: the executor, the row and the body's line.
print((select(2, pcall(orion.parallel_for, R, function(i, row) W[i] = row:value(9) end))):match("[^\n]*"))
try("key past the end", function()
  orion.parallel_for(R, function(i, row) W[i] = row:key(#row + 1) end)
end)
try("value(0)", function()
  orion.parallel_for(R, function(i, row) W[i] = row:value(0) end)
end)
try("store into a row", function()
  orion.parallel_for(R, function(i, row) row[1] = 2 end)
end)
try("return a value", function()
  orion.parallel_for(R, function(i, row) return 1 end)
end)
try("unbuffered write at a row's key", function()
  orion.parallel_for(R, function(i, row)
    for j = 1, #row do
      local k = row:key(j)
      W[k] = W[k] + row:value(j)
    end
  end)
end)
try("dense", function() orion.ragged(W) end)
try("key 0", function() orion.ragged { { { 0, 1 } } } end)
try("not a pair", function() orion.ragged { { 5 } } end)
try("i32 overflow", function() orion.ragged({ { { 1, 2 ^ 40 } } }, { type = "i32" }) end)
