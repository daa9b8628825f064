-- Sparse logistic regression over libsvm rows (Orion-C built-in app; the
-- program of Orion's logistic-regression example).  The samples are a
-- ragged array (one row of (feature, value) pairs per sample, the labels
-- alongside); each epoch is one data-parallel pass whose weight updates
-- go through an orion.buffer, since a row's features are keys the
-- dependence analysis cannot know (docs/apps-lr.md): SGD steps added to
-- the weights, or (--optimizer adarev) gradients that the buffer's apply
-- function turns into AdaRevision steps, reading and writing each weight's
-- state in helper arrays (lr_adarev.lua).
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
local train_loop = require "orion.train"
local dir = (arg and arg[0] or ""):match("^(.*/)") or "./"
local eval = dofile(dir .. "lr_eval.lua")
local adarev = dofile(dir .. "lr_adarev.lua")

local spec = {
  name = "lr.lua",
  summary = "Sparse logistic regression (SGD or AdaRevision) over libsvm samples.",
  options = {
    { "train", "FILE", nil, "training samples (libsvm, labels 0/1 or -1/+1)" },
    { "test", "FILE", nil, "held-out samples (libsvm) for accuracy and AUC" },
    { "epochs", "N", 10, "passes over the training samples" },
    { "optimizer", "NAME", "sgd", "sgd, or adarev (AdaRevision: per-weight adaptive steps revised for the updates a gradient did not see)" },
    { "lr", "X", 0.5, "learning rate (AdaRevision's alpha)" },
    { "decay", "X", 0.9, "sgd: the learning rate is multiplied by X after each epoch" },
    { "reg", "X", 0.0, "L2 regularisation of the weights a sample touches" },
    { "bias", false, false, "learn an intercept (every sample updates it, so on many executors stale reads make it oscillate)" },
    { "flush", "F", "auto", "when the weight updates are applied: every N samples an executor runs, block, loop, or auto (8 for sgd, loop for adarev)" },
    { "tier", "T", "auto", "loop tier: auto, c or lua" },
    { "weights", "FILE", nil, "write the final weights to FILE, one per line (%.17g), the intercept last" },
  },
  epilog = "Files are plain or gzip-compressed; rows with no features are scored by the bias alone.",
}
train_loop.options(spec, { metric = "test_auc", goal = "max", sgd = true, sgd_default = "--decay",
                           save_help = "as --weights writes them" })
local opts = cli.parse(arg, spec)
if not opts.train or not opts.test then cli.fail(spec, "--train and --test are required") end
-- Checked on the driver before the samples are loaded: a missing input or
-- an output that cannot be written is named now, not after training.
cli.check_input(spec, opts.train, "--train")
cli.check_input(spec, opts.test, "--test")
cli.check_output(spec, opts.weights, "--weights")
train_loop.check(spec, opts, { metric_given = true })
if opts.epochs < 0 then cli.fail(spec, "--epochs must not be negative") end
if not (opts.lr > 0) then cli.fail(spec, "--lr must be positive") end
if not (opts.decay > 0 and opts.decay <= 1) then cli.fail(spec, "--decay must be in (0, 1]") end
if not (opts.reg >= 0) then cli.fail(spec, "--reg must not be negative") end
if opts.optimizer ~= "sgd" and opts.optimizer ~= "adarev" then
  cli.fail(spec, ("--optimizer must be sgd or adarev, not '%s'"):format(opts.optimizer))
end
local ada = opts.optimizer == "adarev"
if ada and opts.lr_schedule then cli.fail(spec, "--lr-schedule applies to --optimizer sgd") end
if opts.flush == "auto" then opts.flush = ada and "loop" or "8" end
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
local G, pass
if ada then
  -- Each weight's AdaRevision state, kept with it (helper arrays).
  local Gsum, Gold, Stamp = orion.zeros { nf + 1 }, orion.zeros { nf + 1 }, orion.zeros { nf + 1 }
  local Z = orion.array { nf + 1, init = adarev.DELTA }
  local Zmax = orion.array { nf + 1, init = adarev.DELTA }
  local step, alpha = adarev.step, opts.lr
  pass = 0 -- the training pass, captured when each loop starts
  G = orion.buffer(W, {
    apply = function(w, g, gsum, z, zmax, gold, stamp)
      return step(alpha, pass, w, g, gsum, z, zmax, gold, stamp)
    end,
    with = { Gsum, Z, Zmax, Gold, Stamp }, flush = flush })
else
  G = orion.buffer(W, { apply = "add", flush = flush })
end
local S = orion.array { math.max(nte, 1), init = -1 } -- test scores
local loss = orion.accumulator("sum", 0.0)
-- (a number, not a boolean: the compiled tier takes captured numbers)
local lr, reg, use_bias = opts.lr, opts.reg, opts.bias and 1 or 0
-- sgd buffers lr times the negative gradient, adarev the gradient itself.
if ada then lr = -1 end

-- One step per sample: the weights are read as of the buffer's last
-- flush, the step (or gradient) goes through G.
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

-- The weights, one per line (%.17g), the intercept last.
local function write_weights(path)
  local f = assert(io.open(path, "w"))
  for _, w in ipairs(W:to_table()) do f:write(("%.17g\n"):format(w)) end
  f:close()
end

local loop_opts = { tier = opts.tier }
print(("%5s  %8s  %10s  %8s  %6s"):format("epoch", "seconds", "train-loss", "accuracy", "auc"))
local run = train_loop.start(spec, opts, { total = opts.epochs, lr = opts.lr,
  show = { "train_loss", "test_auc" }, save = write_weights, model = opts.weights,
  save_option = "--weights" })
for epoch = 1, opts.epochs do
  if not ada then lr = run:lr(epoch) or lr end -- --lr-schedule
  local t0 = orion.clock()
  loss:reset()
  pass = epoch
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
  local m = { epoch = epoch, seconds = seconds, train_seconds = train_seconds,
                 train_loss = train_loss, test_accuracy = acc, test_auc = auc,
                 samples_per_s = ntr / train_seconds, executors = st.executors,
                 tier = st.tier }
  orion.record(m)
  if not ada then lr = lr * opts.decay end
  if run:epoch(epoch, m) then break end -- progress line, --save-best, --early-stop
end
if opts.weights then write_weights(opts.weights) end
run:finish()
