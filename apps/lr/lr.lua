-- Sparse logistic regression over libsvm rows (Orion-C built-in app; the
-- program of Orion's logistic-regression example).  The samples are a
-- ragged array (one row of (feature, value) pairs per sample, the labels
-- alongside); each epoch is one data-parallel SGD pass whose weight
-- updates go through an orion.buffer, since a row's features are keys the
-- dependence analysis cannot know (docs/apps-lr.md).
--
--   orion-driver apps/lr/lr.lua --train train.libsvm --test test.libsvm --epochs 10
--
-- Labels are 0/1 or -1/+1.  Prints one line per epoch: epoch, seconds,
-- train log loss (each sample's, before its update), test accuracy and
-- AUC.  With --metrics FILE (an orion-driver option) each epoch is also
-- recorded with the keys epoch, seconds, train_seconds, train_loss,
-- test_accuracy, test_auc, samples_per_s, executors, tier.

local orion = require "orion"
local cli = require "orion.cli"
local dir = (arg and arg[0] or ""):match("^(.*/)") or "./"
local eval = dofile(dir .. "lr_eval.lua")

local spec = {
  name = "lr.lua",
  summary = "Sparse logistic regression (SGD) over libsvm samples.",
  options = {
    { "train", "FILE", nil, "training samples (libsvm, labels 0/1 or -1/+1)" },
    { "test", "FILE", nil, "held-out samples (libsvm) for accuracy and AUC" },
    { "epochs", "N", 10, "passes over the training samples" },
    { "lr", "X", 0.5, "learning rate" },
    { "decay", "X", 0.9, "the learning rate is multiplied by X after each epoch" },
    { "reg", "X", 0.0, "L2 regularisation of the weights a sample touches" },
    { "bias", false, false, "learn an intercept (every sample updates it, so on many executors stale reads make it oscillate)" },
    { "flush", "F", "8", "when the weight updates are applied: every N samples an executor runs, block or loop" },
    { "tier", "T", "auto", "loop tier: auto, c or lua" },
  },
  epilog = "Files are plain or gzip-compressed; rows with no features are scored by the bias alone.",
}
local opts = cli.parse(arg, spec)
if not opts.train or not opts.test then cli.fail(spec, "--train and --test are required") end
if opts.epochs < 0 then cli.fail(spec, "--epochs must not be negative") end
if not (opts.lr > 0) then cli.fail(spec, "--lr must be positive") end
if not (opts.decay > 0 and opts.decay <= 1) then cli.fail(spec, "--decay must be in (0, 1]") end
if not (opts.reg >= 0) then cli.fail(spec, "--reg must not be negative") end
local flush = math.tointeger(tonumber(opts.flush)) or opts.flush
if flush ~= "block" and flush ~= "loop" and not (math.type(flush) == "integer" and flush > 0) then
  cli.fail(spec, ("--flush must be a positive integer, block or loop, not '%s'"):format(opts.flush))
end

-- The samples: rows of (feature, value) pairs, and their 0/1 classes.
local function load(path)
  local X, labels = orion.text_file(path, { format = "libsvm", rows = true })
  local Y = labels:map(function(i, v) return eval.class(v, path, i) end)
  return X, Y
end
local Xtr, Ytr = load(opts.train)
local Xte, Yte = load(opts.test)
local ntr, nf = Xtr:dims()
local nte, nf2 = Xte:dims()
nf = math.max(nf, nf2)
local bias = nf + 1

local W = orion.zeros { nf + 1 }            -- the weights, the intercept last
local G = orion.buffer(W, { apply = "add", flush = flush })
local S = orion.array { math.max(nte, 1), init = -1 } -- test scores
local loss = orion.accumulator("sum", 0.0)
-- (a number, not a boolean: the compiled tier takes captured numbers)
local lr, reg, use_bias = opts.lr, opts.reg, opts.bias and 1 or 0

-- One SGD step per sample: the weights are read as of the buffer's last
-- flush, the gradient step goes through G.
local function sgd(i, row)
  local z = W[bias]
  for j = 1, #row do z = z + W[row:key(j)] * row:value(j) end
  local p = 1 / (1 + math.exp(-z))
  local y = Ytr[i]
  if y == 1 then
    loss:add(-math.log(math.max(p, 1e-15)))
  else
    loss:add(-math.log(math.max(1 - p, 1e-15)))
  end
  local g = lr * (y - p)
  for j = 1, #row do
    local k = row:key(j)
    G[k] = G[k] + g * row:value(j) - lr * reg * W[k]
  end
  if use_bias == 1 then G[bias] = G[bias] + g end
end

local function score(i, row)
  local z = W[bias]
  for j = 1, #row do z = z + W[row:key(j)] * row:value(j) end
  S[i] = 1 / (1 + math.exp(-z))
end

local loop_opts = { tier = opts.tier }
print(("%5s  %8s  %10s  %8s  %6s"):format("epoch", "seconds", "train-loss", "accuracy", "auc"))
for epoch = 1, opts.epochs do
  local t0 = orion.clock()
  loss:reset()
  local st = orion.parallel_for(Xtr, sgd, loop_opts)
  local train_seconds = orion.clock() - t0
  orion.parallel_for(Xte, score, loop_opts)
  -- Rows with no features were not visited: the bias alone scores them.
  local b = W:get(bias)
  local classes, scores = Yte:to_table(), S:to_table()
  for i = 1, nte do
    if scores[i] < 0 then scores[i] = 1 / (1 + math.exp(-b)) end
  end
  scores[nte + 1] = nil
  local acc, auc = eval.evaluate(classes, scores)
  local seconds = orion.clock() - t0
  local train_loss = loss:get() / math.max(ntr, 1)
  if not (train_loss < 1e6) then
    error(("epoch %d: training diverged (train loss %s); lower the learning rate (--lr %g now)")
      :format(epoch, tostring(train_loss), opts.lr), 0)
  end
  print(("%5d  %8.3f  %10.6f  %8.4f  %6.4f"):format(epoch, seconds, train_loss, acc, auc))
  io.stdout:flush()
  orion.record { epoch = epoch, seconds = seconds, train_seconds = train_seconds,
                 train_loss = train_loss, test_accuracy = acc, test_auc = auc,
                 samples_per_s = ntr / train_seconds, executors = st.executors,
                 tier = st.tier }
  lr = lr * opts.decay
end
