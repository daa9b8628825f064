-- SGD matrix factorisation with L2 regularisation (Orion-C built-in app).
--
--   orion-driver apps/mf/mf.lua                      # embedded synthetic data
--   orion-driver apps/mf/mf.lua --train ratings.train.txt.gz \
--       --test ratings.test.txt.gz --k 32 --epochs 20
--
-- Prints one line per epoch: epoch, seconds, train RMSE (measured on the
-- ratings as the SGD pass visits them, before each update), test RMSE.
-- With --metrics FILE (an orion-driver option) each epoch is also recorded
-- as JSON with the keys epoch, seconds, train_seconds, train_rmse, test_rmse,
-- executors, bytes_moved (both loops of the epoch) and updates_per_s.

local orion = require "orion"
local cli = require "orion.cli"

local spec = {
  name = "mf.lua",
  summary = "SGD matrix factorisation: ratings ~ W[u] . H[i], L2 on both factors.",
  options = {
    { "train", "FILE", nil, "training ratings (default: embedded synthetic data)" },
    { "test", "FILE", nil, "held-out ratings to report test RMSE on" },
    { "test-split", "X", 0.0, "hold out this fraction of --train as the test set" },
    { "format", "F", "coo", "input format: coo, csv, movielens, libsvm, uci-bow" },
    { "k", "N", 32, "number of latent factors" },
    { "epochs", "N", 20, "passes over the training ratings" },
    { "lr", "X", 0.02, "learning rate of the first epoch" },
    { "decay", "X", 0.9, "the learning rate is multiplied by X after each epoch" },
    { "reg", "X", 0.05, "L2 regularisation of W and H" },
    { "init-scale", "X", 0.1, "factors start as randn * X" },
    { "seed", "N", 1, "seed for initialisation, splits and the engine" },
    { "save", "PATH", nil, "write the factors to PATH.W and PATH.H" },
  },
  epilog = "Input files are plain or gzip-compressed, one rating per line.",
}

local opts = cli.parse(arg, spec)
if opts.k < 1 then cli.fail(spec, "--k must be at least 1") end
if opts.epochs < 0 then cli.fail(spec, "--epochs must not be negative") end
if not (opts.lr > 0) then cli.fail(spec, "--lr must be positive") end
if not (opts.decay > 0 and opts.decay <= 1) then cli.fail(spec, "--decay must be in (0, 1]") end
if opts.test_split < 0 or opts.test_split >= 1 then
  cli.fail(spec, "--test-split must be in [0, 1)")
end
orion.seed(opts.seed)

-- Data -----------------------------------------------------------------------
local train, test
if opts.train then
  train = orion.text_file(opts.train, { format = opts.format, value_type = "f32" })
  if opts.test then
    test = orion.text_file(opts.test, { format = opts.format, value_type = "f32" })
  elseif opts.test_split > 0 then
    train, test = train:split(opts.test_split, opts.seed)
  end
else
  if opts.test then cli.fail(spec, "--test needs --train") end
  train, test = orion.synthetic_ratings { seed = opts.seed }
end

local nu, ni = train:dims()
if test then
  local tu, ti = test:dims()
  nu, ni = math.max(nu, tu), math.max(ni, ti)
end
local K, lr, reg = opts.k, opts.lr, opts.reg

local W = orion.randn { nu, K, type = "f32", scale = opts.init_scale, seed = opts.seed }
local H = orion.randn { ni, K, type = "f32", scale = opts.init_scale, seed = opts.seed + 1 }

print(("# mf: %d train ratings, %d test, %d users x %d items, K=%d, lr=%g, reg=%g")
  :format(train:nnz(), test and test:nnz() or 0, nu, ni, K, lr, reg))

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
    wu[k] = w + lr * (e * h - reg * w)
    hi[k] = h + lr * (e * w - reg * h)
  end
end

local function evaluate(u, i, r)
  local wu, hi = W[u], H[i]
  local e = r
  for k = 1, K do e = e - wu[k] * hi[k] end
  test_sse:add(e * e)
end

print(("%5s  %8s  %10s  %9s"):format("epoch", "seconds", "train-rmse", "test-rmse"))
for epoch = 1, opts.epochs do
  local t0 = orion.clock()
  train_sse:reset()
  local st = orion.parallel_for(train, sgd)
  local train_seconds = orion.clock() - t0
  local bytes_moved = st.bytes_moved or 0 -- nil under --explain
  local train_rmse = math.sqrt(train_sse:get() / train:nnz())
  local test_rmse
  if test and test:nnz() > 0 then
    test_sse:reset()
    bytes_moved = bytes_moved + (orion.parallel_for(test, evaluate).bytes_moved or 0)
    test_rmse = math.sqrt(test_sse:get() / test:nnz())
  end
  local seconds = orion.clock() - t0
  lr = lr * opts.decay
  if train_rmse ~= train_rmse or train_rmse == math.huge then
    error(("epoch %d: training diverged (RMSE is %s); lower --lr"):format(epoch, train_rmse), 0)
  end
  print(("%5d  %8.3f  %10.4f  %9s"):format(epoch, seconds, train_rmse,
    test_rmse and ("%.4f"):format(test_rmse) or "-"))
  io.stdout:flush()
  orion.record { epoch = epoch, seconds = seconds, train_seconds = train_seconds,
                 train_rmse = train_rmse, test_rmse = test_rmse,
                 executors = st.executors, bytes_moved = bytes_moved,
                 updates_per_s = train:nnz() / train_seconds }
end

if opts.save then
  W:save(opts.save .. ".W")
  H:save(opts.save .. ".H")
  print(("# saved factors to %s.W and %s.H"):format(opts.save, opts.save))
end
