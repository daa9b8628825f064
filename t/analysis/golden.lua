-- The golden-plan harness: each t/analysis/*.lua file describes loop bodies
-- with the plan the analysis must produce, and G.check verifies the plan and
-- then the parallel execution against a serial run.
--
--   G.check {
--     name = "mf_sgd",          -- shown in messages
--     iter = R,                 -- the iterated DistArray
--     iname = "R",              -- its name in the plan
--     body = sgd,
--     opts = { ordered = true },-- parallel_for options (optional)
--     expect = {
--       schedule = "2d",
--       space = 1, time = 2,    -- 1-based loop keys, or false for "-"
--       vectors = { "(0, NONNEG)", "(NONNEG, 0)" },  -- in any order
--       place = { W = "local", H = "rotating" },     -- by array name
--       reason = "A[i - 1]",    -- rejected: a substring of the reasons
--     },
--     reset = function() ... end,   -- puts every array back to its start
--     state = function() return {...} end, -- the values a run produced
--     verify = function(got, serial) end,  -- optional: an unordered loop's
--                                          -- property against the serial run
--   }
--
-- Equivalence, for loops the analysis accepts:
--  * ordered loops: every partitioning, with the blocks of each clock run
--    forwards and backwards, gives exactly the serial (lexicographic) state;
--  * unordered loops: for every partitioning, running the blocks of each
--    clock forwards and backwards gives the same state (the blocks a
--    schedule runs concurrently must not depend on each other: a wrong plan
--    makes the two orders disagree on an order-sensitive body), and verify()
--    holds when given.
-- A rejected loop must also be refused by parallel_for.
local orion = require "orion"

local G = {}

local function fail(name, msg, plan)
  error(("golden %s: %s%s"):format(name, msg,
    plan and ("\n--- plan ---\n" .. plan) or ""), 0)
end

function G.parse(text)
  local p = { vectors = {}, place = {}, reasons = {} }
  for line in text:gmatch("[^\n]+") do
    local v = line:match("^schedule: (%S+)$")
    if v then p.schedule = v end
    local sp = line:match("^space: key (%d+)")
    if sp then p.space = tonumber(sp) elseif line == "space: -" then p.space = false end
    local tm = line:match("^time: key (%d+)")
    if tm then p.time = tonumber(tm) elseif line == "time: -" then p.time = false end
    local vs = line:match("^vectors: (.*)$")
    if vs then
      for vec in vs:gmatch("%b()") do p.vectors[#p.vectors + 1] = vec end
    end
    local an, pl = line:match("^array (.-): (.-) %-%- ")
    if an then p.place[an] = pl end
    local r = line:match("^reason: (.*)$")
    if r then p.reasons[#p.reasons + 1] = r end
  end
  return p
end

local function same(a, b)
  if type(a) ~= type(b) then return false end
  if type(a) ~= "table" then
    if a ~= a and b ~= b then return true end -- NaN
    return a == b and math.type(a) == math.type(b)
  end
  for k, v in pairs(a) do if not same(v, b[k]) then return false end end
  for k in pairs(b) do if a[k] == nil then return false end end
  return true
end
G.same = same

local function first_diff(a, b, path)
  path = path or ""
  if type(a) ~= "table" or type(b) ~= "table" then
    return path .. ": " .. tostring(a) .. " vs " .. tostring(b)
  end
  for k, v in pairs(a) do
    if not same(v, b[k]) then return first_diff(v, b[k], path .. "[" .. tostring(k) .. "]") end
  end
  for k, v in pairs(b) do
    if a[k] == nil then return path .. "[" .. tostring(k) .. "]: nil vs " .. tostring(v) end
  end
  return path
end

-- A canonical snapshot of an array: dense -> nested tables; sparse -> a
-- table keyed by "k1,k2,..." (storage order does not matter).
function G.snap(A)
  local t = A:to_table()
  if not A:is_sparse() then return t end
  local s = {}
  for _, e in ipairs(t) do
    local n = #e
    s[table.concat(e, ",", 1, n - 1)] = e[n]
  end
  return s
end

-- Fills a dense array with f(k1, ..., kn) (or zeros).
function G.fill(A, f)
  local dims = { A:dims() }
  local keys = {}
  local function rec(d)
    if d > #dims then
      local args = { table.unpack(keys, 1, #dims) }
      args[#dims + 1] = f and f(table.unpack(keys, 1, #dims)) or 0
      A:set(table.unpack(args, 1, #dims + 1))
      return
    end
    for i = 1, dims[d] do keys[d] = i; rec(d + 1) end
  end
  rec(1)
end

-- Resets a sparse array's values with f(k1, ..., kn).
function G.refill(A, f)
  for _, e in ipairs(A:to_table()) do
    local n = #e
    e[n] = f(table.unpack(e, 1, n - 1))
    A:set(table.unpack(e))
  end
end

local partitionings = { { 1 }, { 2 }, { 3 }, { 2, 3 }, { 4 } }

local function with(opts, extra)
  local o = {}
  for k, v in pairs(opts or {}) do o[k] = v end
  for k, v in pairs(extra) do o[k] = v end
  return o
end

function G.check(spec)
  local name = spec.name or "?"
  -- A fixed seed gives every run the same math.random stream per block.
  local opts = with(spec.opts, { name = spec.iname, seed = spec.seed or 1234 })
  local text = orion.explain(spec.iter, spec.body, opts)
  local p = G.parse(text)
  local e = spec.expect
  if p.schedule ~= e.schedule then
    fail(name, ("schedule is %s, expected %s"):format(tostring(p.schedule), e.schedule), text)
  end
  if e.space ~= nil and p.space ~= e.space then
    fail(name, ("space is %s, expected %s"):format(tostring(p.space), tostring(e.space)), text)
  end
  if e.time ~= nil and p.time ~= e.time then
    fail(name, ("time is %s, expected %s"):format(tostring(p.time), tostring(e.time)), text)
  end
  if e.vectors then
    local want, got = {}, {}
    for _, v in ipairs(e.vectors) do want[v] = (want[v] or 0) + 1 end
    for _, v in ipairs(p.vectors) do got[v] = (got[v] or 0) + 1 end
    if not same(want, got) then
      fail(name, ("vectors are %s, expected %s"):format(table.concat(p.vectors, " "),
        table.concat(e.vectors, " ")), text)
    end
  end
  for arr, where in pairs(e.place or {}) do
    if p.place[arr] ~= where then
      fail(name, ("array %s is placed %s, expected %s"):format(arr, tostring(p.place[arr]), where), text)
    end
  end
  if e.reason then
    local all = table.concat(p.reasons, "\n")
    if not all:find(e.reason, 1, true) then
      fail(name, ("reasons do not mention %q"):format(e.reason), text)
    end
  end

  if e.schedule == "rejected" then
    if spec.reset then spec.reset() end
    local ok, err = pcall(orion.parallel_for, spec.iter, spec.body, opts)
    if ok or not tostring(err):find("cannot run in parallel", 1, true) then
      fail(name, "parallel_for did not refuse a rejected loop: " .. tostring(err), text)
    end
    print("golden ok: " .. name .. " (rejected)")
    return p
  end
  if not (spec.reset and spec.state) then
    print("golden ok: " .. name .. " (plan only)")
    return p
  end

  spec.reset()
  orion.parallel_for(spec.iter, spec.body, with(opts, { schedule = "serial" }))
  local serial = spec.state()
  local ordered = opts.ordered
  for _, parts in ipairs(partitionings) do
    local states = {}
    for _, co in ipairs({ "forward", "reverse" }) do
      spec.reset()
      local st = orion.parallel_for(spec.iter, spec.body,
        with(opts, { partitions = parts, concurrent_order = co }))
      if st.schedule ~= e.schedule then
        fail(name, ("ran as %s, planned %s"):format(st.schedule, e.schedule), text)
      end
      states[co] = spec.state()
      local where = ("partitions {%s}, %s"):format(table.concat(parts, ","), co)
      if ordered and not same(states[co], serial) then
        fail(name, "ordered loop differs from the serial run with " .. where .. " at "
          .. first_diff(states[co], serial), text)
      end
      if spec.verify then
        local ok, err = pcall(spec.verify, states[co], serial)
        if not ok then fail(name, "verify failed with " .. where .. ": " .. tostring(err), text) end
      end
    end
    if not same(states.forward, states.reverse) then
      fail(name, ("blocks of one clock depend on each other with partitions {%s}: %s")
        :format(table.concat(parts, ","), first_diff(states.forward, states.reverse)), text)
    end
  end
  print("golden ok: " .. name .. " (" .. e.schedule .. ")")
  G.tiers(name, spec, opts, text)
  return p
end

-- Bit-level equality: floats by their 8 bytes (so -0.0 differs from 0.0
-- and NaN payloads count), integers by value and subtype.
local function bitsame(a, b)
  if type(a) ~= type(b) then return false end
  if type(a) == "number" then
    if math.type(a) ~= math.type(b) then return false end
    if math.type(a) == "float" then return string.pack("<d", a) == string.pack("<d", b) end
    return a == b
  end
  if type(a) ~= "table" then return a == b end
  for k, v in pairs(a) do if not bitsame(v, b[k]) then return false end end
  for k in pairs(b) do if a[k] == nil then return false end end
  return true
end
G.bitsame = bitsame

-- The compiled tier against the interpreter: the same partitioning and
-- random streams must give bit-identical states. A body outside the
-- compiled subset is reported with the reason (tier "c" refuses it).
function G.tiers(name, spec, opts, text)
  local states = {}
  -- orion-driver --verify runs every loop in the interpreter (it records
  -- the keys there): t/slow_verify.sh sets ORION_GOLDEN_NO_TIERS.
  if os.getenv("ORION_GOLDEN_NO_TIERS") then
    print("golden tiers skipped: " .. name)
    return
  end
  for _, tier in ipairs { "lua", "c" } do
    spec.reset()
    local ok, st = pcall(orion.parallel_for, spec.iter, spec.body,
      with(opts, { tier = tier, partitions = { 2, 2 }, seed = 11 }))
    if not ok then
      local why = tostring(st):match("outside the compiled subset.*$") or
                  tostring(st):match("runs in the Lua interpreter.*$")
      if tier == "c" and why then
        print(("golden tiers: %s stays interpreted: %s"):format(name, tostring(st):gsub("^.-parallel_for: ", "")))
        return
      end
      fail(name, ("tier %s failed: %s"):format(tier, tostring(st)), text)
    end
    if st.tier ~= tier then
      fail(name, ("ran tier %s, asked for %s"):format(tostring(st.tier), tier), text)
    end
    states[tier] = spec.state()
  end
  if not bitsame(states.lua, states.c) then
    fail(name, "the compiled tier differs from the interpreter at " ..
      first_diff(states.c, states.lua), text)
  end
  print("golden tiers ok: " .. name)
end

return G
