-- Tier "gpu" (docs/analysis.md): a 2-D body in the GPU subset, then one
-- outside it (a buffer written other than by adding to it).
local orion = require "orion"
local R = orion.array { 20, 10, type = "f64", init = "randn", seed = 1 }
local W = orion.array { 20, 2, type = "f64", init = "randn", seed = 2 }
local H = orion.array { 10, 2, type = "f64", init = "randn", seed = 3 }
local st = orion.parallel_for(R, function(i, j, v)
  local e = v - W[i][1] * H[j][1] - W[i][2] * H[j][2]
  for k = 1, 2 do
    local w, h = W[i][k], H[j][k]
    W[i][k] = w + 0.01 * e * h
    H[j][k] = h + 0.01 * e * w
  end
end, { tier = "gpu" })
local noise = orion.array { 20, type = "f64" }
local B = orion.buffer(orion.zeros { 20 }, { apply = "replace" })
local st2 = orion.parallel_for(noise, function(i, v)
  B[i] = v * 2
end, { tier = "gpu" })
print("tiers", st.tier, st2.tier)
