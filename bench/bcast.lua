-- bench/bcast.sh's job: orion-driver bench/bcast.lua MB REPS
-- A loop first starts the executors; then, REPS times, the script makes a
-- new MB-megabyte f32 array (orion.array, randn) and one parallel_for
-- reads it on every executor (a subscript that is not the loop key: the
-- plan places it `server (read-only)`), so the whole array goes to every
-- executor.  Prints per rep: the loop's seconds, the bytes the driver sent
-- and those between executors.
local orion = require "orion"

local MB = tonumber(arg[1]) or 256
local REPS = tonumber(arg[2]) or 2
local cols = 1024
local rows = MB * 1000000 // (4 * cols)
local X = orion.array { 64, init = 1 }
local w = orion.array { 8, init = 1 }
local s0 = orion.accumulator("sum", 0)
orion.parallel_for(X, function(i, x) s0:add(w[(i % 8) + 1]) end)
for rep = 1, REPS do
  local A = orion.array { rows, cols, type = "f32", init = "randn",
                          seed = rep }
  local s = orion.accumulator("sum", 0)
  local st = orion.parallel_for(X, function(i, x)
    s:add(A[(i * 7919) % rows + 1][(i % cols) + 1])
  end)
  print(("rep %d bytes %d seconds %.4f driver %d peer %d sum %a"):format(
    rep, rows * cols * 4, st.seconds, st.bytes_moved, st.peer_bytes,
    s:get()))
  io.stdout:flush()
  A = nil
  collectgarbage()
end
