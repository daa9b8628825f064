-- The job t/tamper.sh runs through t/relay: a parallel load (LOAD_FILE,
-- LOADED), two SGD epochs (LOAD_BODY, RUN_BLOCK, BLOCK_DONE, LOOP_END,
-- LOOP_DONE) and a sum, printing numbers that any change in transit
-- would change.
local orion = require "orion"
local R = orion.text_file(arg[1])
local nu, ni = R:dims()
local W = orion.randn { nu, 4, scale = 0.1, seed = 1 }
local H = orion.randn { ni, 4, scale = 0.1, seed = 2 }
local sse = orion.accumulator("sum")
for epoch = 1, 2 do
  sse:reset()
  orion.parallel_for(R, function(u, i, r)
    local p = 0
    for k = 1, 4 do p = p + W[u][k] * H[i][k] end
    local e = r - p
    sse:add(e * e)
    for k = 1, 4 do
      local w, h = W[u][k], H[i][k]
      W[u][k] = w + 0.05 * e * h
      H[i][k] = h + 0.05 * e * w
    end
  end)
  print(("epoch %d sse %.12g"):format(epoch, sse:get()))
end
local s = orion.accumulator("sum")
orion.parallel_for(W, function(u, k, w) s:add(w * u * k) end)
print(("checksum %.12g"):format(s:get()))
