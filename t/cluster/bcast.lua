-- A read-only server array broadcast to the executors (ORION_BCAST:
-- chain, star or shard), then changed in two rows by the script, then
-- read again unchanged.  Each element of Y is the weighted sum of one row
-- of A, so any byte of A that arrived wrong shows in the output, which
-- must be the same on any number of executors and by any path as inside
-- the driver.  On stderr, per loop: the bytes the driver sent and those
-- between executors.
local orion = require "orion"

local R, C = 301, 37 -- 89096 bytes of f64: 22 chunks of rows
local A = orion.array { R, C, init = "randn", seed = 5 }
local X = orion.array { R, init = 1 }
local Y = orion.zeros { R }

local function body(i, x)
  local r = (i * 7) % R + 1
  local t = 0
  for c = 1, C do
    t = t + A[r][c] * c
  end
  Y[i] = t
end

local function pass(k)
  local st = orion.parallel_for(X, body)
  io.stderr:write(("bytes loop %d driver %d peer %d array %d\n"):format(
    k, st.bytes_moved or 0, st.peer_bytes or 0, R * C * 8))
  local h = {}
  for i = 1, R do
    h[#h + 1] = ("%a"):format(Y:get(i))
  end
  print(("loop %d: %s"):format(k, table.concat(h, " ")))
end

io.write(orion.explain(X, body))
pass(1)
A:set(5, 3, 2.5)
A:set(200, 37, -1.25)
pass(2)
pass(3)
