-- The statistics parallel_for returns on a cluster, and resident blocks:
-- the same loop over the same unchanged sparse array twice; the second
-- moves fewer bytes, since the executors still hold its blocks.
local orion = require "orion"

local path = os.tmpname()
local f = assert(io.open(path, "w"))
local want = 0
for u = 1, 300 do
  for i = 1, 200 do
    if (u * 7 + i * 13) % 5 == 0 then
      local r = (u + i) % 5 + 1
      f:write(u, " ", i, " ", r, "\n")
      want = want + r
    end
  end
end
f:close()
local R = orion.text_file(path)
os.remove(path)

local function run()
  local acc = orion.accumulator("sum")
  local st = orion.parallel_for(R, function(u, i, r)
    acc:add(r)
  end)
  if acc:get() ~= want then
    error(("sum %s, want %s"):format(tostring(acc:get()), tostring(want)))
  end
  return st
end

local s1 = run()
local s2 = run()
for n, st in ipairs { s1, s2 } do
  print(("loop %d: executors %d, executor_seconds %d, bytes_moved %d, "
         .. "blocks %d"):format(n, st.executors, #st.executor_seconds,
                                st.bytes_moved, st.blocks))
end
