-- Writes to tables a loop body did not create (issue 33): each executor,
-- and the driver with --executors 0, runs the body on a copy of what it
-- captures, so such a write would vanish (or, for the globals and the
-- standard library, change what later loops see).  The analysis refuses
-- each; the sandbox refuses at run time what the analysis cannot see, and
-- later loops still see the real library.  Prints one line per case.
local orion = require "orion"

local A = orion.array { 8, init = 0 }
local S = { n = 0, rows = { 0, 0 } }
T = { n = 0 }

local function try(name, body, opts)
  opts = opts or {}
  opts.tier = opts.tier or "lua"
  local ok, err = pcall(orion.parallel_for, A, body, opts)
  err = tostring(err):gsub("\n", " ")
  print(("%s: %s"):format(name, ok and "ran" or "refused: " .. err))
end

try("S.n and T.n", function(i, v)
  S.n = S.n + 1
  T.n = T.n + 1
  A[i] = S.n
end)
try("S[k] = v", function(i, v) S[i] = v end)
try("table.insert", function(i, v) table.insert(S, i) end)
try("table.sort", function(i, v) table.sort(S.rows) end)
try("rawset", function(i, v) rawset(S, "n", i) end)
try("local alias", function(i, v)
  local r = S.rows
  r[1] = i
end)
try("_G.x", function(i, v) _G.x = i end)
try("_ENV.x", function(i, v) _ENV.x = i end)
try("math.abs = nil", function(i, v) math.abs = nil end)
try("_G.math = nil", function(i, v) _G.math = nil end)
try("local m = math", function(i, v)
  local m = math
  m.abs = nil
end)
print(("after the refusals: S.n %d, T.n %d, A[8] %s"):format(S.n, T.n,
                                                             A:get(8)))

-- What the analysis cannot see through: the sandbox refuses it as it runs.
try("select(1, math).abs = nil", function(i, v)
  select(1, math).abs = nil
end)
local function lib() return string end
try("lib().rep = nil", function(i, v) lib().rep = nil end)
try("serial _G.math = nil", function(i, v) _G.math = nil end,
    { schedule = "serial" })
try("serial string.rep = nil", function(i, v) string.rep = nil end,
    { schedule = "serial" })
try("next loop", function(i, v) A[i] = math.abs(-i) + #string.rep("x", i) end)
print(("next loop: A[8] %s"):format(A:get(8)))

-- A table the body creates is its own; pairs, next, rawget see the views.
local seen = 0
for _ in pairs(math) do seen = seen + 1 end
try("body's own table", function(i, v)
  local t = { n = 0 }
  t.n = t.n + i
  table.insert(t, i)
  local k = 0
  for _ in pairs(math) do k = k + 1 end
  A[i] = t.n + #t + (k > 20 and next(math) and rawget(math, "pi") and 100 or 0)
end)
print(("body's own table: A[8] %s"):format(A:get(8)))

-- The loop variable of pairs over a captured table holds its rows; a
-- global reached through _G is that global.
local R = { { n = 0 }, { n = 0 } }
try("pairs rows", function(i, v)
  for _, row in pairs(R) do
    row.n = i
  end
end)
try("_G.T.n", function(i, v) _G.T.n = i end)
