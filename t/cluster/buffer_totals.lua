-- Topic totals through a buffer: orion-driver buffer_totals.lua VARIANT
-- with VARIANT "block" (the default flush), "loop", "3" (flush every 3
-- elements) or "fn" (apply = function(old, d) return old + 2 * d end).
-- Every token of a sparse (doc, word) -> topic array adds 1 to its topic's
-- total; the totals must equal the counts taken serially in Lua.
local orion = require "orion"

local variant = arg[1] or "block"
local K = 7

-- A deterministic corpus: about a third of the (doc, word) pairs, each
-- with a topic in 1..K.
local path = os.tmpname()
local f = assert(io.open(path, "w"))
local want = {}
for k = 1, K do
  want[k] = 0
end
local seed = 12345
local function rnd(n)
  seed = (seed * 1103515245 + 12345) % 2147483648
  return (seed >> 16) % n
end
local tokens = 0
for d = 1, 90 do
  for w = 1, 50 do
    if rnd(3) == 0 then
      local t = rnd(K) + 1
      f:write(d, " ", w, " ", t, "\n")
      want[t] = want[t] + 1
      tokens = tokens + 1
    end
  end
end
f:close()
local Z = orion.text_file(path, { value_type = "i64" })
os.remove(path)

local T = orion.zeros { K, type = "i64" }
local opts = { apply = "add" }
local mult = 1
if variant == "loop" then
  opts.flush = "loop"
elseif variant == "fn" then
  opts.apply = function(old, d) return old + 2 * d end
  mult = 2
elseif tonumber(variant) then
  opts.flush = math.tointeger(tonumber(variant))
end
local B = orion.buffer(T, opts)

local st = orion.parallel_for(Z, function(d, w, t)
  B[t] = B[t] + 1
end)

for k = 1, K do
  local got = T:get(k)
  if got ~= mult * want[k] then
    error(("topic %d: total %s, want %d"):format(k, tostring(got),
                                                  mult * want[k]))
  end
end
print(("totals ok: %d tokens, %d topics, variant %s, %d executors, "
       .. "schedule %s"):format(tokens, K, variant, st.executors,
                                st.schedule))
