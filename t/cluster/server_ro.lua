-- A 1-D loop that reads a small array through a subscript that is not the
-- loop key, so the plan keeps that array on the server (read-only).  The
-- result must equal the serial one exactly, and orion.explain must say
-- where the array lives.
local orion = require "orion"

local N = 5000
local X = orion.array { N, init = "rand", seed = 11 }
local Y = orion.zeros { N }
local scale = orion.array { 7, init = "randn", seed = 12 }

local function body(i, x)
  Y[i] = X[i] * scale[(i % 7) + 1]
end

local plan = orion.explain(X, body)
io.write(plan)
if not plan:find("\n") then io.write("\n") end
local st = orion.parallel_for(X, body)

local bad = 0
for i = 1, N do
  local want = X:get(i) * scale:get((i % 7) + 1)
  if Y:get(i) ~= want then
    bad = bad + 1
    if bad <= 3 then
      print(("Y[%d] = %.17g, serial %.17g"):format(i, Y:get(i), want))
    end
  end
end
if bad > 0 then
  error(("%d of %d elements differ from the serial result"):format(bad, N))
end
print(("server_ro ok: %d elements, schedule %s, %d executors"):format(
  N, st.schedule, st.executors))
