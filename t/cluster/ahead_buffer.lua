-- Dispatch ahead with a buffer in the loop (scheduler/dist_resid.c,
-- orion__resid_ahead): a 2-D loop (a bias W[u] and rows H[i]) whose H
-- rows rotate executor to executor also adds each rating's residual, scaled by H[i][k], into T[k]
-- through an orion.buffer of flush policy arg[1] ("loop" or "block").
-- stdout: the bits of T and of H after each pass (the same on any
-- executor count); stderr: "ahead PASS A blocks_ahead N" per pass, for
-- t/test_cluster.c.
local orion = require "orion"

local policy = arg[1] or "loop"
local R = orion.synthetic_ratings { users = 300, items = 240, ratings = 9000, seed = 5 }
local nu, ni = R:dims()
local H = orion.randn { ni, 4, scale = 0.2, seed = 6 }
local W = orion.zeros { nu }
local T = orion.zeros { 4 }
local BT = orion.buffer(T, { apply = "add", flush = policy })

for pass = 1, 3 do
  local st = orion.parallel_for(R, function(u, i, r)
    local h = H[i]
    local e = r - W[u] - (h[1] + h[2] + h[3] + h[4]) * u / nu
    W[u] = W[u] + 0.02 * e
    for k = 1, 4 do
      BT[k] = BT[k] + e * h[k]
      h[k] = h[k] + 0.01 * e
    end
  end)
  io.stderr:write(("ahead %d %s blocks_ahead %d\n"):format(pass, tostring(st.ahead),
    st.blocks_ahead))
  local s = 0.0
  for j, row in ipairs(H:to_table()) do
    for k, v in ipairs(row) do s = s + v * (j + k * 1e-3) end
  end
  print(pass, ("%a"):format(s), ("%a %a"):format(T:get(1), T:get(4)))
end
