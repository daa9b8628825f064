-- A body that captures a large Lua table (a lookup of 30000 numbers, about
-- half a megabyte serialised): at 256 KiB or more it goes to the
-- executors along their chain in BCAST pieces (scheduler/dist_chain.c) instead
-- of inline in each LOAD_BODY.  Two loops with different captured values
-- (two bodies), then the script reads the results back.  stdout: the
-- exact bits of every result; stderr: "bytes loop N driver D peer P" for
-- t/test_cluster.c.
local orion = require "orion"

local lookup = {}
for i = 1, 30000 do lookup[i] = math.sin(i) * 1000 end
local n = 3000
local A = orion.zeros { n }
local sum = orion.accumulator("sum", 0.0)

for loop = 1, 2 do
  sum:reset()
  local st = orion.parallel_for(A, function(i, x)
    local v = lookup[(i * 7 + loop) % #lookup + 1] + loop
    A[i] = x + v
    sum:add(v)
  end)
  io.stderr:write(("bytes loop %d driver %d peer %d\n"):format(loop,
    st.driver_bytes, st.peer_bytes))
  print("loop " .. loop, ("%a"):format(sum:get()))
end
local s = 0.0
for i, v in ipairs(A:to_table()) do s = s + v * (1 + (i % 5) * 1e-3) end
print("A", ("%a"):format(s))
