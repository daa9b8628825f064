-- A directly written server array (`server (read-write)`: B[i + 2], an
-- offset subscript) is sharded across the executors: each block sends the
-- elements it changed to their owners, and reads them back at its next
-- block (executor/exec_swrite.c).  stdout: the exact bits after each loop
-- (t/test_cluster.c compares them with a run inside the driver); stderr:
-- "bytes LOOP driver D peer P array S".
local orion = require "orion"

local n = 40000
local A = orion.randn { n, scale = 1.0, seed = 3 }
local B = orion.zeros { n + 2 }
local function bits(x) return ("%a"):format(x) end
local function checksum(X)
  local s = 0.0
  for i, v in ipairs(X:to_table()) do s = s + v * (1 + (i % 7) * 1e-3) end
  return bits(s)
end

for pass = 1, 3 do
  local st = orion.parallel_for(A, function(i, v)
    B[i + 2] = B[i + 2] * 0.5 + v * pass
  end)
  io.stderr:write(("bytes pass %d driver %d peer %d array %d\n"):format(pass,
    st.driver_bytes, st.peer_bytes, (n + 2) * 8))
  if pass == 2 then
    print("read B", checksum(B), bits(B:get(3)))
    B:set(5, 1.25) -- the next loop starts from the script's write
  end
end
print("final B", checksum(B), bits(B:get(5)))
