-- Compiled bodies over a sparse array, run on executors: a body that
-- returns values stores them into the iterated elements (the executors
-- keep each block's values before it runs and send back what changed); a
-- body that never returns one leaves them as they are (the executors do
-- not keep them: the compiled body says it stores nothing).
local orion = require "orion"

local R = orion.synthetic_ratings { users = 300, items = 200, ratings = 6000, seed = 3 }
local C = { tier = "c" }

local function sum_where(even_only)
  local s, step = orion.accumulator("sum", 0.0), even_only and 2 or 1
  orion.parallel_for(R, function(u, i, r)
    if u % step == 0 then s:add(r) end
  end, C)
  return s:get()
end

local before, even = sum_where(false), sum_where(true)
-- Stores nothing: the values stay.
local seen = orion.accumulator("sum", 0.0)
orion.parallel_for(R, function(u, i, r) seen:add(r * r) end, C)
local kept = sum_where(false)
-- Returns a value where u is even (nil elsewhere keeps the element).
orion.parallel_for(R, function(u, i, r)
  if u % 2 == 0 then return r * 2 end
end, C)
local after, even_after = sum_where(false), sum_where(true)
-- The driver's own copy, read back: the stored values reached it.
local held = 0.0
for _, e in ipairs(R:to_table()) do held = held + e[3] end
print(("sums %.4f %.4f %.4f, even %.4f -> %.4f, driver %.4f"):format(before, kept, after, even,
  even_after, held))
local function near(a, b) return math.abs(a - b) <= 1e-9 * math.max(1, math.abs(a)) end
print(("unchanged by a body that stores nothing: %s"):format(tostring(kept == before)))
print(("stored by a body that returns values: %s"):format(
  tostring(near(even_after, 2 * even) and near(after, before + even) and near(held, after))))
