-- Where buffered updates are applied.  The buffer's apply function adds a
-- large marker per application, so each total tells how many times its
-- element was flushed: "block" once per block, "loop" once per block too
-- (each block's writes kept apart and applied at the end of the loop),
-- and n = 40 once per 40 elements an executor ran (every block holds a
-- multiple of 40 elements, and any 3 consecutive elements touch every
-- topic, so every flush carries every topic).
local orion = require "orion"

local D, W, K = 40, 40, 3
local MARK = 1000000
local path = os.tmpname()
local f = assert(io.open(path, "w"))
local want = {}
for k = 1, K do
  want[k] = 0
end
for d = 1, D do
  for w = 1, W do
    local t = (d + w) % K + 1
    f:write(d, " ", w, " ", t, "\n")
    want[t] = want[t] + 1
  end
end
f:close()
local Z = orion.text_file(path, { value_type = "i64" })
os.remove(path)

for _, flush in ipairs { "block", "loop", 40 } do
  local T = orion.zeros { K, type = "i64" }
  local B = orion.buffer(T, {
    apply = function(old, d) return old + d + MARK end,
    flush = flush,
  })
  local st = orion.parallel_for(Z, function(d, w, t)
    B[t] = B[t] + 1
  end)
  local flushes = flush == "block" and st.blocks
                  or flush == "loop" and st.blocks
                  or D * W // flush
  for k = 1, K do
    local got = T:get(k)
    local n, rest = got // MARK, got % MARK
    if rest ~= want[k] or n ~= flushes then
      error(("flush %s, topic %d: total %d (%d applications of %d "
             .. "updates), want %d applications of %d"):format(
        tostring(flush), k, got, n, rest, flushes, want[k]))
    end
  end
  print(("flush %s ok: %d applications per topic, %d blocks, %d "
         .. "executors"):format(tostring(flush), flushes, st.blocks,
                                st.executors))
end
