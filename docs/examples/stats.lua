local orion = require "orion"
local R = orion.text_file("docs/examples/tiny.txt")
local W, H = orion.zeros { 3, 2 }, orion.zeros { 3, 2 }
local stats = orion.parallel_for(R, function(u, i, r)
  local wu, hi = W[u], H[i]
  wu[1] = wu[1] + r
  hi[1] = hi[1] + r
end)
for _, k in ipairs { "schedule", "tier", "clocks", "blocks", "elements", "driver_bytes", "peer_bytes" } do
  print(k, stats[k])
end
for _, k in ipairs { "executor_seconds", "compute_seconds", "wait_seconds", "idle_seconds" } do
  print(k, #stats[k])
end
