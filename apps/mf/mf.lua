-- SGD matrix factorisation with L2 regularisation (Orion-C built-in app).
-- Plain SGD with a decaying step, or a per-row adaptive step (AdaGrad, the
-- kind LIBMF's default solver uses), or AdaRevision on H (--solver adarev).
--
--   orion-driver apps/mf/mf.lua                      # embedded synthetic data
--   orion-driver apps/mf/mf.lua --train ratings.train.txt.gz \
--       --test ratings.test.txt.gz --k 32 --epochs 20
--
-- Prints one line per epoch: epoch, seconds, train RMSE (measured on the
-- ratings as the SGD pass visits them, before each update), test RMSE.
-- With --metrics FILE (an orion-driver option) each epoch is also recorded
-- as JSON with the keys epoch, seconds, train_seconds, compute_seconds (the
-- longest executor's time running training blocks), train_rmse, test_rmse,
-- executors, driver_bytes, peer_bytes, bytes_moved (both loops), tier,
-- train_blocks, updates_per_s, managed_bytes, managed_staleness (docs/apps-mf.md).

local orion = require "orion"
local cli = require "orion.cli"
local train_loop = require "orion.train"

local spec = {
  name = "mf.lua",
  summary = "SGD matrix factorisation: ratings ~ W[u] . H[i], L2 on both factors.",
  options = {
    { "train", "FILE", nil, "training ratings (default: embedded synthetic data)" },
    { "test", "FILE", nil, "held-out ratings to report test RMSE on" },
    { "synthetic", "U,I,N", nil, "without --train: the embedded generator with U users, I items and N ratings (default 6000,4000,400000)" },
    { "test-split", "X", 0.0, "hold out this fraction of --train as the test set" },
    { "format", "F", "coo", "input format: coo, csv, movielens, libsvm, uci-bow" },
    { "header", false, false, "the --train and --test files start with a header line (column names), skipped" },
    { "index-base", "B", 1, "the smallest user and item id in the files: 1, or 0 (LIBMF's files)" },
    { "k", "N", 32, "number of latent factors" },
    { "epochs", "N", 20, "passes over the training ratings" },
    { "solver", "S", "sgd", "sgd (step decays each epoch), adagrad (per-row adaptive step) or adarev (with --parallel data: AdaRevision steps on H, SGD on W)" },
    { "lr", "X", nil, "learning rate (default: 0.02 for sgd, 0.1 for adagrad, 0.2 for adarev, its alpha on H)", type = "number" },
    { "decay", "X", nil, "the learning rate is multiplied by X after each epoch (default: 0.9 for sgd, 1 for adagrad)", type = "number" },
    { "reg", "X", 0.05, "L2 regularisation of W and H" },
    { "reg-w", "X", nil, "L2 regularisation of W (default: --reg)", type = "number" },
    { "reg-h", "X", nil, "L2 regularisation of H (default: --reg)", type = "number" },
    { "init-scale", "X", 0.1, "factors start as randn * X" },
    { "seed", "N", 1, "seed for initialisation, splits and the engine" },
    { "save", "PATH", nil, "write the model to PATH.W and PATH.H (the factors), PATH.users and PATH.items (each id's training ratings) and PATH.meta (the manifest predict.lua checks); the folder is checked before training" },
    { "tier", "T", "auto", "loop tier: auto (compiled when possible), c, lua or gpu" },
    { "gpu", false, false, "run the loops on the executors' GPUs (--tier gpu; start them with orion-driver --gpus)" },
    { "exact", false, false, "compiled loops reproduce the interpreter bit for bit (default: fast math)" },
    { "parallel", "P", "2d", "2d (the dependence-preserving schedule) or data (data-parallel: every executor reads H as of the last flush and adds its updates through an orion.buffer)" },
    { "flush", "F", "block", "with --parallel data: when H's updates are applied (block, loop, managed or every N updates)" },
    { "permute", "SEED", nil, "remap the user and the item ids at random (orion.permutation(n, SEED)) to balance the 2-D blocks; results, --save and the printed RMSE use the original ids", type = "int" },
    { "checkpoint-every", "N", 0, "write a checkpoint every N epochs (needs orion-driver --checkpoint-dir; 0: never); a restarted or --resume'd run goes on from the newest" },
  },
  epilog = "Input files are plain or gzip-compressed, one rating per line.",
}
train_loop.options(spec, { metric = "test_rmse", goal = "min", sgd = true, sgd_default = "--decay",
                           save_help = "files PATH.W, PATH.H, ... as --save writes them" })

local opts = cli.parse(arg, spec)
if opts.solver ~= "sgd" and opts.solver ~= "adagrad" and opts.solver ~= "adarev" then
  cli.fail(spec, ("--solver must be sgd, adagrad or adarev, not '%s'"):format(opts.solver))
end
local adagrad, ada = opts.solver == "adagrad", opts.solver == "adarev"
if opts.lr == nil then opts.lr = adagrad and 0.1 or ada and 0.2 or 0.02 end
if opts.decay == nil then opts.decay = adagrad and 1.0 or 0.9 end
if opts.reg_w == nil then opts.reg_w = opts.reg end
if opts.reg_h == nil then opts.reg_h = opts.reg end
if opts.k < 1 then cli.fail(spec, "--k must be at least 1") end
if opts.epochs < 0 then cli.fail(spec, "--epochs must not be negative") end
if not (opts.lr > 0) then cli.fail(spec, "--lr must be positive") end
if not (opts.decay > 0 and opts.decay <= 1) then cli.fail(spec, "--decay must be in (0, 1]") end
if not (opts.reg_w >= 0 and opts.reg_h >= 0) then cli.fail(spec, "--reg, --reg-w and --reg-h must not be negative") end
if opts.gpu then
  if opts.tier ~= "auto" and opts.tier ~= "gpu" then
    cli.fail(spec, ("--gpu and --tier %s contradict each other"):format(opts.tier))
  end
  opts.tier = "gpu"
end
if opts.tier ~= "auto" and opts.tier ~= "c" and opts.tier ~= "lua" and opts.tier ~= "gpu" then
  cli.fail(spec, ("--tier must be auto, c, lua or gpu, not '%s'"):format(opts.tier))
end
if opts.parallel ~= "2d" and opts.parallel ~= "data" then
  cli.fail(spec, ("--parallel must be 2d or data, not '%s'"):format(opts.parallel))
end
local dp_flush = tonumber(opts.flush) or opts.flush
if opts.parallel == "data" and math.type(dp_flush) ~= "integer" and dp_flush ~= "block"
    and dp_flush ~= "loop" and dp_flush ~= "managed" then
  cli.fail(spec, ("--flush must be block, loop, managed or a positive integer, not '%s'"):format(opts.flush))
end
if opts.parallel ~= "data" and (opts.flush ~= "block" or ada) then
  cli.fail(spec, ada and "--solver adarev needs --parallel data (its steps go through a buffer)" or "--flush applies to --parallel data only")
end
if opts.test_split < 0 or opts.test_split >= 1 then
  cli.fail(spec, "--test-split must be in [0, 1)")
end
if opts.checkpoint_every < 0 then cli.fail(spec, "--checkpoint-every must not be negative") end
if opts.index_base ~= 0 and opts.index_base ~= 1 then
  cli.fail(spec, ("--index-base must be 0 or 1, not %d"):format(opts.index_base))
end
if opts.train and opts.synthetic then cli.fail(spec, "--synthetic and --train exclude each other") end
if opts.test and not opts.train then cli.fail(spec, "--test needs --train") end
if (opts.header or opts.index_base ~= 1) and not opts.train then
  cli.fail(spec, ("%s applies to the --train and --test files"):format(opts.header and "--header" or "--index-base"))
end
-- What the run reads and writes, checked here on the driver before any
-- work: a missing input is named before executors start to load it, and
-- an output that cannot be written before the training it would lose.
cli.check_input(spec, opts.train, "--train")
cli.check_input(spec, opts.test, "--test")
cli.check_output(spec, opts.save, "--save", "prefix")
if opts.checkpoint_every > 0 and not orion.checkpoint_dir() then
  cli.fail(spec, "--checkpoint-every needs orion-driver --checkpoint-dir DIR")
end
train_loop.check(spec, opts, { metric_given = opts.test ~= nil or opts.test_split > 0 or not opts.train,
                               metric_needs = "--test or --test-split", save_kind = "prefix" })
orion.seed(opts.seed)

-- Data -----------------------------------------------------------------------
local train, test
local load_opts = { format = opts.format, value_type = "f32", header = opts.header,
                    index_base = opts.index_base }
-- A file that does not parse with the defaults is most often a header
-- line or LIBMF's 0-based ids: the error says which option reads it.
local function load(path)
  local ok, a = pcall(orion.text_file, path, load_opts)
  if ok then return a end
  local msg, hint = tostring(a), ""
  if not opts.header and msg:find(":1: field %d+ is not a") then
    hint = "; if the first line is a header, add --header"
  elseif opts.index_base == 1 and msg:find("below the index base 1") then
    hint = "; for 0-based ids (LIBMF's files), add --index-base 0"
  end
  error(msg .. hint, 2) -- the script line that loads the file, as before
end
if opts.train then
  train = load(opts.train)
  if opts.test then
    test = load(opts.test)
    -- An empty test file is named and its pass skipped (the test-rmse
    -- column shows "-"), rather than a pass over nothing.
    if test:nnz() == 0 then
      cli.warn(spec, ("--test %s has no ratings (is the file empty?); the test pass is skipped"):format(opts.test))
      test = nil
    end
  elseif opts.test_split > 0 then
    train, test = train:split(opts.test_split, opts.seed)
  end
else
  local syn = { seed = opts.seed }
  if opts.synthetic then
    local u, i, n = tostring(opts.synthetic):match("^(%d+),(%d+),(%d+)$")
    if not u then
      cli.fail(spec, ("--synthetic needs USERS,ITEMS,RATINGS (three integers), not '%s'"):format(opts.synthetic))
    end
    syn.users, syn.items, syn.ratings = tonumber(u), tonumber(i), tonumber(n)
  end
  train, test = orion.synthetic_ratings(syn)
end

-- An empty file gives an array with no ratings and no dimensions: say so
-- before the factors are sized from it.
if train:nnz() == 0 then
  error(("%s: no ratings to train on (is the file empty?)"):format(opts.train), 0)
end

local nu, ni = train:dims()
if test then
  local tu, ti = test:dims()
  nu, ni = math.max(nu, tu), math.max(ni, ti)
end
local K, lr, regw, regh = opts.k, opts.lr, opts.reg_w, opts.reg_h

local W = orion.randn { nu, K, type = "f32", scale = opts.init_scale, seed = opts.seed }
local H = orion.randn { ni, K, type = "f32", scale = opts.init_scale, seed = opts.seed + 1 }

-- AdaGrad: one accumulated squared gradient (averaged over K) per row.
local GW, GH
if adagrad then
  GW = orion.array { nu, type = "f32", init = 1 }
  GH = orion.array { ni, type = "f32", init = 1 }
end

-- --permute: the users' and the items' ids go through one random
-- permutation each, the same for every array indexed by them (train and
-- test by both, W and GW by users, H and GH by items), so that ids sorted
-- by activity spread over the blocks of the 2-D schedule.  The loops see
-- the permuted ids; W:save and histogram give the original ones.
if opts.permute then
  local pu, pi = orion.permutation(nu, opts.permute), orion.permutation(ni, opts.permute)
  for _, a in ipairs { train, test or false } do
    if a then a:permute_keys(1, pu):permute_keys(2, pi) end
  end
  W:permute_keys(1, pu)
  H:permute_keys(1, pi)
  if adagrad then
    GW:permute_keys(1, pu)
    GH:permute_keys(1, pi)
  end
end

print(("# mf: %d train ratings, %d test, %d users x %d items, K=%d, %s, lr=%g, reg=%g/%g")
  :format(train:nnz(), test and test:nnz() or 0, nu, ni, K, opts.solver, lr, regw, regh))

-- Loops ----------------------------------------------------------------------
local train_sse = orion.accumulator("sum", 0.0)
local test_sse = orion.accumulator("sum", 0.0)

local function sgd(u, i, r)
  local wu, hi = W[u], H[i]
  local e = r
  for k = 1, K do e = e - wu[k] * hi[k] end
  train_sse:add(e * e)
  for k = 1, K do
    local w, h = wu[k], hi[k]
    wu[k] = w + lr * (e * h - regw * w)
    hi[k] = h + lr * (e * w - regh * h)
  end
end

-- The step of row u is lr / sqrt(GW[u]); GW[u] grows by the mean squared
-- gradient of the row's update.
local function sgd_adagrad(u, i, r)
  local wu, hi = W[u], H[i]
  local e = r
  for k = 1, K do e = e - wu[k] * hi[k] end
  train_sse:add(e * e)
  local sw, sh = lr / math.sqrt(GW[u]), lr / math.sqrt(GH[i])
  local gw2, gh2 = 0.0, 0.0
  for k = 1, K do
    local w, h = wu[k], hi[k]
    local gw, gh = e * h - regw * w, e * w - regh * h
    gw2 = gw2 + gw * gw
    gh2 = gh2 + gh * gh
    wu[k] = w + sw * gw
    hi[k] = h + sh * gh
  end
  GW[u] = GW[u] + gw2 / K
  GH[i] = GH[i] + gh2 / K
end

local function evaluate(u, i, r)
  local wu, hi = W[u], H[i]
  local e = r
  for k = 1, K do e = e - wu[k] * hi[k] end
  test_sse:add(e * e)
end

-- Data-parallel SGD (--parallel data), the baseline of Orion's headline
-- claim: the loop runs 1-D over users, every executor reads H as of the
-- last flush and sends its updates to H through a buffer (plus its own
-- pending ones, as a parameter-server worker sees its local copy).
local Hb, sgd_data, sgd_adarev, pass
if opts.parallel == "data" then
  if adagrad then cli.fail(spec, "--parallel data supports --solver sgd or adarev only") end
  if ada then
    -- AdaRevision on H (apps/lr/lr_adarev.lua): Hb collects the gradients,
    -- the apply function steps each element with its state kept beside it.
    local adarev = dofile(((arg and arg[0] or ""):match("^(.*/)") or "./") .. "../lr/lr_adarev.lua")
    local function state(init) return orion.array { ni, K, type = "f32", init = init } end
    local Gsum, Z, Zmax, Gold, Stamp = state(0), state(adarev.DELTA), state(adarev.DELTA), state(0), state(0)
    local step, alpha = adarev.step, opts.lr
    pass = 0 -- the training pass, captured when each loop starts
    Hb = orion.buffer(H, {
      apply = function(h, g, gsum, z, zmax, gold, stamp)
        return step(alpha, pass, h, g, gsum, z, zmax, gold, stamp)
      end,
      with = { Gsum, Z, Zmax, Gold, Stamp }, flush = dp_flush })
  else
    Hb = orion.buffer(H, { apply = "add", flush = dp_flush })
  end
  sgd_data = function(u, i, r)
    local wu, hi, hb = W[u], H[i], Hb[i]
    local e = r
    for k = 1, K do e = e - wu[k] * (hi[k] + hb[k]) end
    train_sse:add(e * e)
    for k = 1, K do
      local w, h = wu[k], hi[k] + hb[k]
      wu[k] = w + lr * (e * h - regw * w)
      hb[k] = hb[k] + lr * (e * w - regh * h)
    end
  end
  -- AdaRevision: H as of the last flush, the gradient of H through Hb.
  sgd_adarev = function(u, i, r)
    local wu, hi, hb = W[u], H[i], Hb[i]
    local e = r
    for k = 1, K do e = e - wu[k] * hi[k] end
    train_sse:add(e * e)
    for k = 1, K do
      local w, h = wu[k], hi[k]
      wu[k] = w + lr * (e * h - regw * w)
      hb[k] = hb[k] - (e * w - regh * h)
    end
  end
end

local loop_opts = { tier = opts.tier, fast = not opts.exact }
local body = adagrad and sgd_adagrad or sgd
if sgd_data then body = ada and sgd_adarev or sgd_data end
-- The test pass runs the training loop's 2-D schedule too: W stays where
-- it is and H's parts move on from where the training pass left them,
-- peer to peer and while the previous block computes, instead of every
-- executor fetching the whole of H before its first block.
local test_opts = { tier = opts.tier, fast = not opts.exact, schedule = "2d" }
-- A result outside this range means the training diverged.
local RMSE_LIMIT = 1e4

-- The model: the factors, plus what predict.lua needs to know which ids
-- were trained (their rating counts) and the training mean for the rest.
local function save_model(prefix)
  local sum = orion.accumulator("sum", 0.0)
  orion.parallel_for(train, function(u, i, r) sum:add(r) end, { tier = opts.tier })
  local mean = train:nnz() > 0 and sum:get() / train:nnz() or 0.0
  local function counts(dim, n)
    local c = orion.array { n, type = "i32" }
    if train:nnz() > 0 then
      for id, v in ipairs(train:histogram(dim, n)) do
        if v > 0 then c:set(id, v) end
      end
    end
    return c
  end
  -- The set becomes visible at once.  Each part is saved whole (a
  -- temporary name, flushed to the disk, renamed) under PATH.PART.new
  -- first: a save that fails there (a full disk) leaves the old set as
  -- it was, loadable.  Then the parts are renamed into place, and the
  -- manifest is written last, the same way (orion.write_file, which also
  -- makes the renames durable): each part's size and the CRC-32 its file
  -- ends with, so that predict.lua refuses a set that is not whole (a save
  -- stopped between the renames, files copied apart).
  local parts = { { "W", W }, { "H", H }, { "users", counts(1, nu) },
                  { "items", counts(2, ni) } }
  local staged, err = pcall(function()
    for _, p in ipairs(parts) do
      p[2]:save(prefix .. "." .. p[1] .. ".new")
    end
  end)
  if not staged then
    for _, p in ipairs(parts) do os.remove(prefix .. "." .. p[1] .. ".new") end
    error(err, 0)
  end
  for _, p in ipairs(parts) do
    local base = prefix .. "." .. p[1]
    assert(os.rename(base .. ".new", base))
  end
  local meta = { ("orion-mf 1\nk %d\nusers %d\nitems %d\nmean %.17g\nsolver %s\n")
    :format(K, nu, ni, mean, opts.solver) }
  for _, p in ipairs(parts) do
    local path = prefix .. "." .. p[1]
    meta[#meta + 1] = ("file.%s %s\n"):format(p[1], assert(cli.file_stamp(path)))
  end
  orion.write_file(prefix .. ".meta", table.concat(meta))
end

-- After a restart (or orion-driver --resume): the arrays above as of the
-- newest checkpoint, and the epoch and step size it was taken at.
local first_epoch = 1
local resumed = orion.restore()
if resumed then first_epoch, lr = resumed.step + 1, resumed.state.lr end
local run = train_loop.start(spec, opts, {
  total = opts.epochs, done = math.min(first_epoch - 1, opts.epochs), lr = opts.lr,
  show = { "train_rmse", "test_rmse" }, save = save_model,
  model = opts.save and opts.save .. ".{W,H,users,items,meta}", save_option = "--save",
  resume = resumed and resumed.state.train })

print(("%5s  %8s  %10s  %9s"):format("epoch", "seconds", "train-rmse", "test-rmse"))
for epoch = first_epoch, opts.epochs do
  orion.step(epoch)
  pass = epoch
  lr = run:lr(epoch) or lr -- --lr-schedule
  local t0 = orion.clock()
  train_sse:reset()
  local st = orion.parallel_for(train, body, loop_opts)
  local train_seconds = orion.clock() - t0
  -- The longest time an executor spent running blocks of the training
  -- loop; the rest of train_seconds is scheduling and communication.
  local compute_seconds = 0.0
  for _, v in ipairs(st.executor_seconds or {}) do
    if v > compute_seconds then compute_seconds = v end
  end
  -- Bytes through the driver and between executors, both loops.
  local driver_bytes, peer_bytes = st.driver_bytes, st.peer_bytes
  local train_rmse = math.sqrt(train_sse:get() / train:nnz())
  local test_rmse
  if test and test:nnz() > 0 then
    test_sse:reset()
    local est = orion.parallel_for(test, evaluate, test_opts)
    driver_bytes, peer_bytes = driver_bytes + est.driver_bytes, peer_bytes + est.peer_bytes
    test_rmse = math.sqrt(test_sse:get() / test:nnz())
  end
  local seconds = orion.clock() - t0
  lr = lr * opts.decay
  for _, m in ipairs { { "train", train_rmse }, { "test", test_rmse } } do
    local v = m[2]
    if v ~= nil and not (v <= RMSE_LIMIT) then -- NaN fails every comparison
      error(("epoch %d: training diverged (%s RMSE is %s, limit %g); lower the learning rate (--lr %g now)")
        :format(epoch, m[1], v ~= v and "NaN" or tostring(v), RMSE_LIMIT, opts.lr), 0)
    end
  end
  print(("%5d  %8.3f  %10.4f  %9s"):format(epoch, seconds, train_rmse,
    test_rmse and ("%.4f"):format(test_rmse) or "-"))
  io.stdout:flush()
  local m = { epoch = epoch, seconds = seconds, train_seconds = train_seconds,
                 train_rmse = train_rmse, test_rmse = test_rmse,
                 compute_seconds = compute_seconds,
                 executors = st.executors, bytes_moved = driver_bytes,
                 driver_bytes = driver_bytes, peer_bytes = peer_bytes, tier = st.tier,
                 train_blocks = table.concat(st.executor_blocks, " "),
                 updates_per_s = train:nnz() / train_seconds,
                 managed_bytes = st.managed_bytes, managed_staleness = st.managed_staleness }
  orion.record(m)
  local stop = run:epoch(epoch, m) -- progress line, --save-best, --early-stop
  if opts.checkpoint_every > 0 and epoch % opts.checkpoint_every == 0 then
    orion.checkpoint { step = epoch, state = { lr = lr, train = run:state() } }
  end
  if stop then break end
end

if opts.save then
  save_model(opts.save)
  print(("# saved the model to %s.{W,H,users,items,meta}"):format(opts.save))
end
run:finish()
