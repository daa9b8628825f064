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
-- longest executor's time running training blocks), driver_cpu_seconds,
-- train_rmse, test_rmse, executors, driver_bytes, peer_bytes, bytes_moved,
-- tier, train_blocks, updates_per_s, managed_bytes, managed_staleness (docs/apps-mf.md).

local orion = require "orion"
local cli = require "orion.cli"
local train_loop = require "orion.train"
local appdir = ((arg and arg[0] or ""):match("^(.*/)") or "./")
local lr_eval = dofile(appdir .. "../lr/lr_eval.lua")
local libmf = dofile(appdir .. "mf_libmf.lua")

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
    { "flush", "F", "block", "with --parallel data: when H's updates are applied (block, loop, managed, clock or every N updates)" },
    { "clock", "N", nil, "with --flush clock: blocks per clock (an executor pushes its updates to H and pulls H once a clock; default 4)", type = "int" },
    { "merge", "M", nil, "with --parallel data and --solver sgd: how the executors' updates to H combine, sum (each added) or mean (model averaging: each divided by the executor count; not with --flush loop); default mean with --flush clock, else sum" },
    { "permute", "SEED", nil, "remap the user and the item ids at random (orion.permutation(n, SEED)) to balance the 2-D blocks; results, --save and the printed RMSE use the original ids", type = "int" },
    { "loss", "L", "squared", "squared (RMSE), absolute (MAE), logistic (binary ratings: logloss, accuracy, AUC), oneclass or oneclass-log (implicit feedback, squared or logistic loss on the positives and on negatives sampled per epoch: AUC, MPR, recall@k)" },
    { "positive", "X", nil, "logistic: a rating >= X is the positive class (default: a rating > 0, LIBMF's -1/+1 files); one-class: a rating >= X is a positive, the others are dropped (default: every rating)", type = "number" },
    { "neg-ratio", "R", 1, "one-class: negatives sampled per positive of the user, each epoch, by a hash of (user, item, seed, epoch)", type = "number" },
    { "neg-weight", "A", 1, "one-class: the weight of a negative's loss (LIBMF's -a)", type = "number" },
    { "neg-value", "C", 0, "oneclass: the target of a negative (LIBMF's -c; a positive's is 1)", type = "number" },
    { "recall-k", "N", 10, "one-class: the k of recall@k", type = "int" },
    { "bias", false, false, "learn a user bias, an item bias and the global mean: ratings ~ mean + bu[u] + bi[i] + W[u] . H[i]" },
    { "reg-b", "X", nil, "with --bias: L2 regularisation of the biases (default: --reg)", type = "number" },
    { "l1-w", "X", 0, "L1 regularisation of W (a proximal soft threshold after each step, as LIBMF's -l1)", type = "number" },
    { "l1-h", "X", 0, "L1 regularisation of H", type = "number" },
    { "nmf", false, false, "non-negative factors: W and H are clipped at 0 after each step (LIBMF's --nmf)" },
    { "cv", "N", 0, "N-fold cross-validation of --train (LIBMF's -v): each fold is held out once, by a hash of (user, item, seed); prints each fold's metric and the mean", type = "int" },
    { "save-libmf", "FILE", nil, "also write the model in LIBMF's text model format (mf-predict reads it; row and column numbers are the file's ids)" },
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
    and dp_flush ~= "loop" and dp_flush ~= "managed" and dp_flush ~= "clock" then
  cli.fail(spec, ("--flush must be block, loop, managed, clock or a positive integer, not '%s'"):format(opts.flush))
end
if opts.clock ~= nil and (dp_flush ~= "clock" or opts.clock < 1) then
  cli.fail(spec, dp_flush ~= "clock" and "--clock goes with --flush clock" or "--clock must be at least 1")
end
if opts.merge ~= nil and (opts.parallel ~= "data" or ada) then
  cli.fail(spec, "--merge goes with --parallel data and --solver sgd")
end
local dp_merge = opts.merge or (dp_flush == "clock" and "mean" or "sum")
if dp_merge ~= "sum" and dp_merge ~= "mean" then
  cli.fail(spec, ("--merge must be sum or mean, not '%s'"):format(dp_merge))
end
if dp_merge == "mean" and dp_flush == "loop" then
  cli.fail(spec, "--merge mean needs a flush while the loop runs (--flush loop keeps the same bits on any executor count)")
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
-- The loss, by LIBMF's -f code (12 and 13: one-class, squared or
-- logistic; 13 is Orion-C's own).
local LOSS = ({ squared = 0, absolute = 1, logistic = 5, oneclass = 12, ["oneclass-log"] = 13 })[opts.loss]
if LOSS == nil then
  cli.fail(spec, ("--loss must be squared, absolute, logistic, oneclass or oneclass-log, not '%s'"):format(opts.loss))
end
local ONECLASS = LOSS >= 12
-- The plain path (squared loss, no bias, L1, NMF nor folds) keeps its
-- own body; everything else runs the general one below.
local general = LOSS ~= 0 or opts.bias or opts.nmf or opts.l1_w ~= 0 or opts.l1_h ~= 0 or opts.cv > 0
if opts.reg_b == nil then opts.reg_b = opts.reg end
if not (opts.l1_w >= 0 and opts.l1_h >= 0 and opts.reg_b >= 0) then
  cli.fail(spec, "--l1-w, --l1-h and --reg-b must not be negative")
end
if not (opts.neg_ratio > 0) then cli.fail(spec, "--neg-ratio must be positive") end
if not (opts.neg_weight > 0) then cli.fail(spec, "--neg-weight must be positive") end
if opts.recall_k < 1 then cli.fail(spec, "--recall-k must be at least 1") end
if opts.cv < 0 or opts.cv == 1 then cli.fail(spec, "--cv must be at least 2 (or 0: no cross-validation)") end
if general then
  local why = adagrad and "--solver adagrad" or opts.solver ~= "sgd" and ("--solver " .. opts.solver)
    or opts.parallel ~= "2d" and "--parallel data" or opts.checkpoint_every > 0 and "--checkpoint-every"
    or opts.tier == "gpu" and "--gpu (--tier gpu)"
  if why then
    cli.fail(spec, ("%s runs the squared loss without --bias, --nmf, --l1-w, --l1-h or --cv only"):format(why))
  end
end
if opts.positive and LOSS < 5 then cli.fail(spec, "--positive applies to the logistic and one-class losses") end
if opts.cv > 0 and (opts.save or opts.save_libmf) then
  cli.fail(spec, "--cv trains one model per fold and keeps none: drop --save and --save-libmf")
end
if opts.bias and ONECLASS then cli.fail(spec, "--bias applies to the squared, absolute and logistic losses") end
if opts.cv > 0 then
  if ONECLASS then cli.fail(spec, "--cv applies to the squared, absolute and logistic losses") end
  if not opts.train then cli.fail(spec, "--cv needs --train") end
  if opts.test or opts.test_split > 0 then cli.fail(spec, "--cv holds out its own folds: drop --test and --test-split") end
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
cli.check_output(spec, opts.save_libmf, "--save-libmf")
if opts.save_libmf and opts.permute then
  cli.fail(spec, "--save-libmf does not take --permute (save with --save, or train without --permute)")
end
if opts.checkpoint_every > 0 and not orion.checkpoint_dir() then
  cli.fail(spec, "--checkpoint-every needs orion-driver --checkpoint-dir DIR")
end
train_loop.check(spec, opts, { metric_given = opts.test ~= nil or opts.test_split > 0 or opts.cv > 0 or not opts.train,
                               metric_needs = "--test or --test-split", save_kind = "prefix" })
if opts.cv > 0 and opts.save_best then cli.fail(spec, "--save-best keeps one model: it does not apply with --cv") end
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

local W, H, GW, GH, BU, BI
local pu, pi
if opts.permute then
  pu, pi = orion.permutation(nu, opts.permute), orion.permutation(ni, opts.permute)
end
-- The model's arrays as they start (again for each --cv fold).
local function init_model()
  W = orion.randn { nu, K, type = "f32", scale = opts.init_scale, seed = opts.seed }
  H = orion.randn { ni, K, type = "f32", scale = opts.init_scale, seed = opts.seed + 1 }
  -- AdaGrad: one accumulated squared gradient (averaged over K) per row.
  if adagrad then
    GW = orion.array { nu, type = "f32", init = 1 }
    GH = orion.array { ni, type = "f32", init = 1 }
  end
  -- The biases (zero, and left so, without --bias: the general body
  -- reads them all the same).
  if general then
    BU = orion.zeros { nu, type = "f32" }
    BI = orion.zeros { ni, type = "f32" }
  end
  -- --permute: the users' and the items' ids go through one random
  -- permutation each, the same for every array indexed by them (train and
  -- test by both, W, GW and BU by users, H, GH and BI by items), so that
  -- ids sorted by activity spread over the blocks of the 2-D schedule.
  -- The loops see the permuted ids; W:save and histogram give the
  -- original ones.
  if pu then
    for _, a in ipairs { W, GW or false, BU or false } do
      if a then a:permute_keys(1, pu) end
    end
    for _, a in ipairs { H, GH or false, BI or false } do
      if a then a:permute_keys(1, pi) end
    end
  end
end
init_model()
if pu then
  for _, a in ipairs { train, test or false } do
    if a then a:permute_keys(1, pu):permute_keys(2, pi) end
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
    local adarev = dofile(appdir .. "../lr/lr_adarev.lua")
    local function state(init) return orion.array { ni, K, type = "f32", init = init } end
    local Gsum, Z, Zmax, Gold, Stamp = state(0), state(adarev.DELTA), state(adarev.DELTA), state(0), state(0)
    local step, alpha = adarev.step, opts.lr
    pass = 0 -- the training pass, captured when each loop starts
    Hb = orion.buffer(H, {
      apply = function(h, g, gsum, z, zmax, gold, stamp)
        return step(alpha, pass, h, g, gsum, z, zmax, gold, stamp)
      end,
      with = { Gsum, Z, Zmax, Gold, Stamp }, flush = dp_flush, clock = opts.clock })
  else
    -- mean: the executors' changes to H are averaged, not summed (each
    -- computed from the same stale H, a sum moves H N times as far).
    Hb = orion.buffer(H, { apply = dp_merge == "mean" and "mean" or "add", flush = dp_flush, clock = opts.clock })
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

-- The general path (--loss other than squared, --bias, --nmf, --l1-*,
-- --cv): its bodies are apps/mf/mf_general.lua's.
local gen = general and dofile(appdir .. "mf_general.lua")
local mu, BIAS = 0.0, opts.bias and 1 or 0
local NFOLD, FOLD, CVSALT, SALT = opts.cv, 0, opts.seed * 7919 + 104729, 0
-- logistic: the positive class is r >= POS (default r > 0); one-class:
-- the positives are the ratings r >= POS (default all of them).
local POS = opts.positive or (LOSS == 5 and 1e-300 or -math.huge)
local RK = opts.recall_k
local RATE, Y, S, USERS
if gen then
  gen.setup { K = K, ni = ni, loss = LOSS, pos = POS, neg = opts.neg_value, alpha = opts.neg_weight,
              bias = BIAS, nmf = opts.nmf and 1 or 0, recall_k = RK, reg_w = regw, reg_h = regh,
              reg_b = opts.reg_b, l1_w = opts.l1_w, l1_h = opts.l1_h, nfold = NFOLD, cvsalt = CVSALT,
              train_sse = train_sse, test_sse = test_sse }
end
-- Before each loop of the general path: what its bodies read now.
local function gen_set()
  gen.set { W = W, H = H, BU = BU, BI = BI, RATE = RATE, Y = Y, S = S, lr = lr, mu = mu,
            fold = FOLD, salt = SALT }
end

-- The 2-D training loop runs each block's users in rounds (interleave):
-- consecutive ratings then update different rows of W, and the next
-- rating's dot product need not wait for the previous one's stores.
local loop_opts = { tier = opts.tier, fast = not opts.exact, interleave = opts.parallel == "2d" }
local body = adagrad and sgd_adagrad or sgd
if sgd_data then body = ada and sgd_adarev or sgd_data end
if gen then body = gen.train end
-- The test pass runs the training loop's 2-D schedule too: W stays where
-- it is and H's parts move on from where the training pass left them,
-- peer to peer and while the previous block computes, instead of every
-- executor fetching the whole of H before its first block.
local test_opts = { tier = opts.tier, fast = not opts.exact, schedule = "2d" }
-- A result outside this range means the training diverged.
local RMSE_LIMIT = 1e4

-- One-class: the loop runs over every cell of Y (1: a training positive;
-- 2: a test positive, unobserved to training), negatives sampled in it.
-- (Read by the general body on every path, so that it compiles.)
-- With --permute, every array a loop indexes by a key goes through the
-- key's permutation (dimension d of a by users or items, as `by` says).
local function keyed(a, by)
  if pu then
    for d, which in ipairs(by) do a:permute_keys(d, which == "u" and pu or pi) end
  end
  return a
end
if general and not ONECLASS then RATE = keyed(orion.zeros { nu }, { "u" }) end
if ONECLASS then
  Y = keyed(orion.zeros { nu, ni, type = "f32" }, { "u", "i" })
  local count = keyed(orion.zeros { nu }, { "u" })
  local npos, ntest = orion.accumulator("sum", 0.0), orion.accumulator("sum", 0.0)
  orion.parallel_for(train, function(u, i, r)
    if r >= POS then
      Y[u][i] = 1
      count[u] = count[u] + 1
      npos:add(1)
    end
  end, { tier = opts.tier })
  if test then
    orion.parallel_for(test, function(u, i, r)
      if r >= POS and Y[u][i] ~= 1 then
        Y[u][i] = 2
        ntest:add(1)
      end
    end, { tier = opts.tier })
    S = keyed(orion.zeros { nu, ni, type = "f32" }, { "u", "i" })
    USERS = keyed(orion.zeros { nu }, { "u" })
  end
  -- User u's cells are negatives with probability --neg-ratio times its
  -- positives over its other cells.
  RATE = keyed(orion.zeros { nu }, { "u" })
  local ratio = opts.neg_ratio
  orion.parallel_for(count, function(u, c)
    RATE[u] = math.floor(math.min(1.0, ratio * c / math.max(1, ni - c)) * 16777216)
  end, { tier = opts.tier })
  if npos:get() == 0 then
    error(("%s: no positives to train on (no rating >= %g)"):format(opts.train or "the data", POS), 0)
  end
  print(("# one-class: %d training positives, %d test positives, %g sampled negatives per positive each epoch")
    :format(math.tointeger(npos:get()), math.tointeger(ntest:get()), ratio))
end

-- The columns after "seconds": the training metric, then the held-out ones.
local cols
if LOSS == 0 then cols = { "train-rmse", "test-rmse" }
elseif LOSS == 1 then cols = { "train-mae", "test-mae" }
elseif LOSS == 5 then cols = { "train-logloss", "test-logloss", "test-accuracy", "test-auc" }
else cols = { "train-loss", "test-auc", "test-mpr", ("test-recall@%d"):format(RK) } end
-- The held-out ratings: the --cv fold of train, or test.  (The loop names
-- each array by its own variable, in plans and messages.)
local held_rows = test and test:nnz() > 0 and test or nil
if opts.cv > 0 then held_rows = train end
local function held_pass(body)
  if opts.cv > 0 then return orion.parallel_for(train, body, test_opts) end
  return orion.parallel_for(test, body, test_opts)
end

-- The training pass's metric, from the sums the body added.
local function train_metric()
  local n = gen and gen.train_n:get() or train:nnz()
  if n == 0 then return nil end
  local v = train_sse:get() / n
  return LOSS == 0 and math.sqrt(v) or v
end

-- The held-out metrics (cols[2..]) and the bytes their loops moved.
local function held_out()
  local vals, db, pb = {}, 0, 0
  local function ran(st) db, pb = db + st.driver_bytes, pb + st.peer_bytes end
  if ONECLASS then
    if not S then return vals, 0, 0 end
    local oc = gen.oc
    for _, a in pairs(oc) do a:reset() end
    ran(orion.parallel_for(USERS, gen.rank_user, { tier = opts.tier, fast = not opts.exact }))
    local users = oc.users:get()
    if users > 0 then
      vals = { oc.auc:get() / users, oc.mpr:get() / oc.pos:get(), oc.recall:get() / users }
    end
    return vals, db, pb
  end
  if not held_rows then return vals, 0, 0 end
  test_sse:reset()
  if not general then
    ran(held_pass(evaluate))
    return { math.sqrt(test_sse:get() / held_rows:nnz()) }, db, pb
  end
  gen.test_n:reset()
  gen.test_hit:reset()
  ran(held_pass(gen.evaluate))
  local n = gen.test_n:get()
  if n == 0 then return vals, db, pb end
  vals[1] = test_sse:get() / n
  if LOSS == 0 then vals[1] = math.sqrt(vals[1]) end
  if LOSS == 5 then
    vals[2] = gen.test_hit:get() / n
    -- AUC over the test ratings (not over a --cv fold: "-"), scored into
    -- a copy and paired with the labels by key.
    if opts.cv == 0 then
      local scores = test:map(function() end)
      ran(orion.parallel_for(scores, gen.score, { tier = opts.tier, fast = not opts.exact }))
      local label = {}
      for _, e in ipairs(test:to_table()) do label[e[1] * (ni + 1) + e[2]] = e[3] >= POS and 1 or 0 end
      local classes, zs = {}, {}
      for j, e in ipairs(scores:to_table()) do
        classes[j] = label[e[1] * (ni + 1) + e[2]]
        zs[j] = 1 / (1 + math.exp(-e[3]))
      end
      local _, auc = lr_eval.evaluate(classes, zs)
      vals[3] = auc
    end
  end
  return vals, db, pb
end

-- With --bias, the global mean of the training ratings (of the fold's
-- training part with --cv); logistic: the log-odds of the positive class.
local function fit_mean()
  if BIAS == 0 then return 0.0 end
  local sum, n, npos = 0.0, 0, 0
  train:map(function(u, i, r)
    if NFOLD == 0 or gen.fold_of(u, i) ~= FOLD - 1 then
      sum, n = sum + r, n + 1
      if r >= POS then npos = npos + 1 end
    end
  end)
  if LOSS == 5 then
    local p = math.min(math.max(npos / n, 1e-6), 1 - 1e-6)
    return math.log(p / (1 - p))
  end
  return sum / n
end

-- The model: the factors, plus what predict.lua needs to know which ids
-- were trained (their rating counts) and the training mean for the rest.
-- With --bias the saved factors carry the biases as three more columns,
-- W' = [W, bu, 1, mean] and H' = [H, 1, bi, 1], so that W'[u] . H'[i] is
-- the model's prediction in either format, for any reader of factors.
local function saved_factors()
  if BIAS == 0 then return W, H, K end
  local W2 = orion.zeros { nu, K + 3, type = "f32" }
  local H2 = orion.zeros { ni, K + 3, type = "f32" }
  if pu then
    W2:permute_keys(1, pu)
    H2:permute_keys(1, pi)
  end
  orion.parallel_for(W2, function(u, k, v)
    if k <= K then return W[u][k] elseif k == K + 1 then return BU[u] elseif k == K + 2 then return 1 end
    return mu
  end, { tier = opts.tier })
  orion.parallel_for(H2, function(i, k, v)
    if k <= K then return H[i][k] elseif k == K + 2 then return BI[i] end
    return 1
  end, { tier = opts.tier })
  return W2, H2, K + 3
end

-- The model's parts as saved: the training mean, the factors (with the
-- biases) and the ids' rating counts.
local function model_parts()
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
  local SW, SH, SK = saved_factors()
  return mean, SW, SH, SK, counts(1, nu), counts(2, ni)
end

-- LIBMF's text model (--save-libmf).
local function save_libmf(path)
  local mean, SW, SH, SK, cu, ci = model_parts()
  do
    -- b, LIBMF's score of an unknown id: the training mean; one-class, 0
    -- (LIBMF's -f 12 writes 0 too).
    libmf.write(path, { fun = math.min(LOSS, 12), b = ONECLASS and 0 or mean, k = SK, base = opts.index_base,
      P = SW:to_table(), Q = SH:to_table(), seen_p = cu:to_table(), seen_q = ci:to_table() })
    print(("# saved the model in LIBMF's format to %s"):format(path))
  end
end

-- The model set PREFIX.{W,H,users,items,meta} (--save, --save-best).
local function save_model(prefix, quiet)
  local mean, SW, SH, model_K, cu, ci = model_parts()
  -- The set becomes visible at once.  Each part is saved whole (a
  -- temporary name, flushed to the disk, renamed) under PATH.PART.new
  -- first: a save that fails there (a full disk) leaves the old set as
  -- it was, loadable.  Then the parts are renamed into place, and the
  -- manifest is written last, the same way (orion.write_file, which also
  -- makes the renames durable): each part's size and the CRC-32 its file
  -- ends with, so that predict.lua refuses a set that is not whole (a save
  -- stopped between the renames, files copied apart).
  local parts = { { "W", SW }, { "H", SH }, { "users", cu }, { "items", ci } }
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
    :format(model_K, nu, ni, mean, opts.solver) }
  for _, p in ipairs(parts) do
    local path = prefix .. "." .. p[1]
    meta[#meta + 1] = ("file.%s %s\n"):format(p[1], assert(cli.file_stamp(path)))
  end
  orion.write_file(prefix .. ".meta", table.concat(meta))
  if not quiet then print(("# saved the model to %s.{W,H,users,items,meta}"):format(prefix)) end
end

local function fmt(v, width, prec)
  return v and ("%" .. width .. "." .. prec .. "f"):format(v) or ("%" .. width .. "s"):format("-")
end

-- The training loop (lua/orion/train.lua) of a run or of one --cv fold:
-- the validation metric is the first held-out column.
local metric = cols[2]:gsub("[-@]", "_")
local function start_run(cfg)
  cfg.lr, cfg.metric = opts.lr, metric
  cfg.goal = (metric == "test_auc") and "max" or "min"
  cfg.show = { (cols[1]:gsub("[-@]", "_")), metric }
  return train_loop.start(spec, opts, cfg)
end

-- The epochs (of one --cv fold); returns the last epoch's held-out metrics.
local function run_epochs(first_epoch, run)
  local last = {}
  mu = fit_mean()
  local header = { ("%5s  %8s"):format("epoch", "seconds") }
  for _, c in ipairs(cols) do header[#header + 1] = ("%" .. math.max(#c, 9) .. "s"):format(c) end
  print(table.concat(header, "  "))
  for epoch = first_epoch, opts.epochs do
    orion.step(epoch)
    pass = epoch
    SALT = opts.seed * 1000003 + epoch * 7919
    lr = run:lr(epoch) or lr -- --lr-schedule
    local t0, c0 = orion.clock(), os.clock()
    train_sse:reset()
    if gen then
      gen.train_n:reset()
      gen_set()
    end
    -- (Each array by its own name: a checkpoint names the arrays by this
    -- function's locals and upvalues, a restore by the script's.)
    local st
    if ONECLASS then
      st = orion.parallel_for(Y, body, loop_opts)
    else
      st = orion.parallel_for(train, body, loop_opts)
    end
    local train_seconds = orion.clock() - t0
    -- The longest time an executor spent running blocks of the training
    -- loop; the rest of train_seconds is scheduling and communication.
    local compute_seconds = 0.0
    for _, v in ipairs(st.executor_seconds or {}) do
      if v > compute_seconds then compute_seconds = v end
    end
    local updates = gen and gen.train_n:get() or train:nnz()
    local vals, db, pb = held_out()
    table.insert(vals, 1, train_metric())
    -- Bytes through the driver and between executors, both loops.
    local driver_bytes, peer_bytes = st.driver_bytes + db, st.peer_bytes + pb
    local seconds = orion.clock() - t0
    local driver_cpu = os.clock() - c0
    lr = lr * opts.decay
    local what = ({ [0] = "RMSE", [1] = "MAE", [5] = "logloss" })[LOSS] or "loss"
    for c = 1, 2 do
      local v = vals[c]
      if v ~= nil and not (v <= RMSE_LIMIT) then -- NaN fails every comparison
        error(("epoch %d: training diverged (%s %s is %s, limit %g); lower the learning rate (--lr %g now)")
          :format(epoch, c == 1 and "train" or "test", what, v ~= v and "NaN" or tostring(v), RMSE_LIMIT, opts.lr), 0)
      end
    end
    local line = { ("%5d  %8.3f"):format(epoch, seconds) }
    for c, name in ipairs(cols) do line[#line + 1] = fmt(vals[c], math.max(#name, 9), 4) end
    print(table.concat(line, "  "))
    io.stdout:flush()
    local rec = { epoch = epoch, seconds = seconds, train_seconds = train_seconds,
                  compute_seconds = compute_seconds, driver_cpu_seconds = driver_cpu, fold = FOLD > 0 and FOLD or nil,
                  executors = st.executors, bytes_moved = driver_bytes,
                  driver_bytes = driver_bytes, peer_bytes = peer_bytes, tier = st.tier,
                  train_blocks = table.concat(st.executor_blocks, " "),
                  updates_per_s = updates / train_seconds,
                  managed_bytes = st.managed_bytes, managed_staleness = st.managed_staleness }
    for c, name in ipairs(cols) do rec[name:gsub("[-@]", "_")] = vals[c] end
    orion.record(rec)
    last = vals
    local stop = run:epoch(epoch, rec) -- progress line, --save-best, --early-stop
    if opts.checkpoint_every > 0 and epoch % opts.checkpoint_every == 0 then
      orion.checkpoint { step = epoch, state = { lr = lr, train = run:state() } }
    end
    if stop then break end
  end
  return last
end

if opts.cv > 0 then
  -- LIBMF's -v: each fold held out once, the model trained afresh on the
  -- others; each fold's last-epoch metrics, then their mean.
  local sums, lr0 = {}, lr
  for f = 1, opts.cv do
    FOLD, lr = f, lr0
    if f > 1 then init_model() end
    print(("# fold %d/%d"):format(f, opts.cv))
    local run = start_run { total = opts.epochs }
    local vals = run_epochs(1, run)
    run:finish()
    local parts = {}
    for c = 2, #cols do
      if vals[c] then
        parts[#parts + 1] = ("%s %.4f"):format(cols[c], vals[c])
        sums[c] = (sums[c] or 0) + vals[c]
      end
    end
    print(("fold %d/%d  %s"):format(f, opts.cv, table.concat(parts, "  ")))
  end
  local parts = {}
  for c = 2, #cols do
    if sums[c] then parts[#parts + 1] = ("%s %.4f"):format(cols[c], sums[c] / opts.cv) end
  end
  print(("cv mean over %d folds  %s"):format(opts.cv, table.concat(parts, "  ")))
else
  -- After a restart (or orion-driver --resume): the arrays above as of the
  -- newest checkpoint, and the epoch and step size it was taken at.
  local first_epoch = 1
  local resumed = orion.restore()
  if resumed then first_epoch, lr = resumed.step + 1, resumed.state.lr end
  local run = start_run {
    total = opts.epochs, done = math.min(first_epoch - 1, opts.epochs),
    save = function(prefix) save_model(prefix, true) end,
    model = opts.save and opts.save .. ".{W,H,users,items,meta}", save_option = "--save",
    resume = resumed and resumed.state.train }
  run_epochs(first_epoch, run)
  if opts.save_libmf then save_libmf(opts.save_libmf) end
  if opts.save then save_model(opts.save) end
  io.stdout:flush()
  run:finish()
end

