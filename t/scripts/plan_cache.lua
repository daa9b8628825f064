-- The driver keeps a loop's plan and uses it again while nothing the plan
-- depends on changed (lua/plancache.h): each line says whether the call
-- was analysed afresh or used the kept plan, with what the loop computed.
-- usage: orion-driver plan_cache.lua SCRATCH-DIR
local orion = require "orion"

local W = orion.zeros{8, 4}
local B = orion.zeros{8, 4}
local d, lr = 0, 0.5
local function step(A, opts)
  -- d is a subscript constant: with d = 1, row i reads row i - 1 that
  -- the same loop writes, and the rows must run in order.
  return orion.parallel_for(A, function(i, j, v)
    if i > d then W[i][j] = W[i - d][j] + lr * j end
  end, opts)
end
local function show(what, st, A)
  print(("%-12s plan=%s schedule=%s W[8][4]=%s"):format(what, st.plan,
    st.schedule, (A or W):get(8, 4)))
end

show("first", step(B))
for e = 1, 2 do -- the same captures: the kept plan
  show("again " .. e, step(B))
end
lr = 0.25 -- a fraction: not a subscript, the kept plan with the new value
show("new lr", step(B))
d = 1 -- a subscript constant: analysed afresh, another schedule
show("d=1", step(B))
show("d=1 again", step(B))
d = 0
show("d=0", step(B))
show("ordered", step(B, { ordered = true }))
show("partitions", step(B, { partitions = { 3 } }))
W = orion.zeros{8, 5} -- another array of another shape
show("new W", step(B))
show("new W again", step(B))
show("other B", step(orion.zeros{8, 4}))

-- A body file loaded again after an edit elsewhere in it: the body's code
-- is the same, but it is analysed afresh from the newer text.
local path = arg[1] .. "/plancache_body.lua"
local function load_body(extra)
  local f = assert(io.open(path, "w"))
  f:write("local W = ...\n",
          "return function(i, j, v) W[i][j] = W[i][j] + 1 end\n", extra)
  f:close()
  return assert(loadfile(path))(W)
end
local V = orion.zeros{8, 5}
local function run_file(what, extra)
  show(what, orion.parallel_for(V, load_body(extra)))
end
run_file("file", "")
run_file("file again", "")
run_file("file edited", "-- edited\n")
run_file("edited again", "-- edited\n")
