-- Captured plain values are copied at launch.
local orion = require "orion"

local A = orion.array{3, type = "i64"}
local K = 5
local cfg = {scale = 2, list = {1, 2, 3}}
GLOBAL_OFFSET = 1000
local floor, m = math.floor, math -- standard values travel by name
local function body(i, v)
  return K * cfg.scale + i + GLOBAL_OFFSET + floor(m.pi) - 3
end
K = 7                   -- before the launch: the loop sees 7
orion.parallel_for(A, body)
K = 1000                -- after the loop: changes nothing already run
GLOBAL_OFFSET = 0
print("first " .. table.concat(A:to_table(), " "))
-- A write to the captured table would change the body's copy only: the
-- loop is refused (issue 33).
local ok, err = pcall(orion.parallel_for, A, function(i, v)
  cfg.list[i] = -1
  cfg.touched = true
end)
print("write " .. tostring(ok) .. " " ..
  tostring(err:match("the body writes a field of 'cfg'") ~= nil) .. " " ..
  tostring(err:match("the body writes field 'touched' of 'cfg'") ~= nil))
print("driver " .. cfg.scale .. " " .. table.concat(cfg.list, " ") .. " " ..
  tostring(cfg.touched))
-- The next launch captures the current values.
orion.parallel_for(A, body)
print("second " .. table.concat(A:to_table(), " "))
