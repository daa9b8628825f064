-- LDA collapsed Gibbs sampling over a 3-D sparse (doc, word, occurrence)
-- -> topic array: docs on space (the doc-topic table is local), words on
-- time (the word-topic table rotates), topic totals through a buffer.
local orion = require "orion"
local G = dofile((os.getenv("ORION_SRCDIR") or ".") .. "/t/analysis/golden.lua")

local D, V, O, K = 12, 9, 3, 4
local alpha, beta = 0.5, 0.1

-- The tokens: a generated COO text "doc word occurrence topic".
local lines = {}
for d = 1, D do
  for w = 1, V do
    for o = 1, O do
      if (d * 7 + w * 5 + o * 3) % 4 < 2 and (o == 1 or (d + w) % 3 == 0) then
        lines[#lines + 1] = ("%d %d %d %d"):format(d, w, o, (d + w + o) % K + 1)
      end
    end
  end
end
local path = os.tmpname()
local f = assert(io.open(path, "w")); f:write(table.concat(lines, "\n"), "\n"); f:close()
local TOK = orion.text_file(path, { format = "coo", dims = { D, V, O }, value_type = "i32" })
os.remove(path)
local ntokens = TOK:nnz()
assert(ntokens > 40, "too few tokens: " .. ntokens)

local DT = orion.zeros { D, K, type = "i64" } -- doc-topic counts (12 x 4: 384 bytes)
local WT = orion.zeros { V, K, type = "i64" } -- word-topic counts (9 x 4: 288 bytes)
local NT = orion.zeros { K, type = "i64" }    -- topic totals
local TB = orion.buffer(NT, { apply = "add", flush = "loop" })

local function initial_topic(d, w, o) return (d * 5 + w * 3 + o) % K + 1 end

local function reset()
  G.refill(TOK, initial_topic)
  G.fill(DT); G.fill(WT); G.fill(NT)
  for _, e in ipairs(TOK:to_table()) do
    local d, w, z = e[1], e[2], e[4]
    DT:set(d, z, DT:get(d, z) + 1)
    WT:set(w, z, WT:get(w, z) + 1)
    NT:set(z, NT:get(z) + 1)
  end
end

local function state()
  return { tok = G.snap(TOK), dt = G.snap(DT), wt = G.snap(WT), nt = G.snap(NT) }
end

-- The invariants of a Gibbs sweep, whatever order the tokens ran in: the
-- count tables are exactly the counts of the new assignments, and the
-- totals (applied through the buffer) are the word-topic column sums.
local function verify(got)
  local dt, wt, nt = {}, {}, { 0, 0, 0, 0 }
  for d = 1, D do dt[d] = { 0, 0, 0, 0 } end
  for w = 1, V do wt[w] = { 0, 0, 0, 0 } end
  local n = 0
  for key, z in pairs(got.tok) do
    local d, w = key:match("^(%d+),(%d+),")
    d, w = tonumber(d), tonumber(w)
    assert(math.type(z) == "integer" and z >= 1 and z <= K, "bad topic " .. tostring(z))
    dt[d][z] = dt[d][z] + 1
    wt[w][z] = wt[w][z] + 1
    n = n + 1
  end
  assert(n == ntokens, "token count changed")
  local total = 0
  for d = 1, D do
    for k = 1, K do
      assert(got.dt[d][k] == dt[d][k], ("DT[%d][%d] = %d, tokens say %d"):format(d, k, got.dt[d][k], dt[d][k]))
      total = total + got.dt[d][k]
    end
  end
  assert(total == ntokens, "doc-topic total is not the number of tokens")
  for w = 1, V do
    for k = 1, K do
      assert(got.wt[w][k] == wt[w][k], ("WT[%d][%d] = %d, tokens say %d"):format(w, k, got.wt[w][k], wt[w][k]))
      nt[k] = nt[k] + got.wt[w][k]
    end
  end
  for k = 1, K do
    assert(got.nt[k] == nt[k], ("NT[%d] = %d, column sum %d"):format(k, got.nt[k], nt[k]))
  end
end

-- One Gibbs step per token.  The totals are read from NT as of the start
-- of the loop (flush = "loop") and changed only through TB.
--
-- With reseed, math.random is reseeded per token from its keys, so the
-- draws do not even depend on the block; without, the body uses the plain
-- per-block stream as a real script would (golden.lua passes parallel_for a
-- fixed seed, so forward and reverse runs draw the same numbers).
local function make_gibbs(reseed)
  return function(d, w, o, z)
  if reseed then math.randomseed(d * 100003 + w * 1009 + o) end
  local dd, ww = DT[d], WT[w]
  dd[z] = dd[z] - 1
  ww[z] = ww[z] - 1
  TB[z] = TB[z] - 1
  local total = 0
  for k = 1, K do
    total = total + (dd[k] + alpha) * (ww[k] + beta) / (NT[k] + V * beta)
  end
  local r = math.random() * total
  local nz = K
  for k = 1, K do
    r = r - (dd[k] + alpha) * (ww[k] + beta) / (NT[k] + V * beta)
    if r <= 0 then
      nz = k
      break
    end
  end
  dd[nz] = dd[nz] + 1
  ww[nz] = ww[nz] + 1
  TB[nz] = TB[nz] + 1
  return nz
  end
end

for _, reseed in ipairs({ true, false }) do
G.check {
  name = reseed and "lda_gibbs" or "lda_gibbs_math_random", iter = TOK, iname = "TOK",
  body = make_gibbs(reseed),
  expect = { schedule = "2d", space = 1, time = 2,
             vectors = { "(0, NONNEG, ANY)", "(NONNEG, 0, ANY)" },
             place = { TOK = "iterated", DT = "local", WT = "rotating",
                       ["target of TB"] = "server (buffered)" } },
  reset = reset, state = state, verify = verify,
}
end

-- The log-likelihood of the assignments: reads only.
local ll = orion.accumulator("sum", 0)
local function loglik(d, w, o, z)
  ll:add(math.log((DT[d][z] + alpha) * (WT[w][z] + beta) / (NT[z] + V * beta)))
end

G.check {
  name = "lda_loglik", iter = TOK, iname = "TOK", body = loglik,
  expect = { schedule = "none", space = 1, vectors = {},
             place = { DT = "local", WT = "server (read-only)", NT = "server (read-only)" } },
  reset = function() reset(); ll:reset() end,
  state = state,
  verify = function() assert(ll:get() < 0, "log-likelihood must be negative") end,
}

-- The same sweep with the totals written directly: every token writes some
-- NT[z], so no two blocks may run together.
local function gibbs_direct(d, w, o, z)
  local dd, ww = DT[d], WT[w]
  dd[z] = dd[z] - 1
  ww[z] = ww[z] - 1
  NT[z] = NT[z] - 1
  local nz = z % K + 1
  if math.random() < (ww[nz] + beta) / (ww[z] + ww[nz] + 2 * beta) then nz = z end
  dd[nz] = dd[nz] + 1
  ww[nz] = ww[nz] + 1
  NT[nz] = NT[nz] + 1
  return nz
end

G.check {
  name = "lda_direct_totals", iter = TOK, iname = "TOK", body = gibbs_direct,
  expect = { schedule = "rejected",
             vectors = { "(0, NONNEG, ANY)", "(NONNEG, 0, ANY)", "(NONNEG, ANY, ANY)" },
             reason = "write NT through orion.buffer(NT" },
}
