-- Sparse logistic regression over libsvm rows (Orion-C built-in app; the
-- program of Orion's logistic-regression example, grown to what a
-- liblinear user expects).  The samples are a ragged array (one row of
-- (feature, value) pairs per sample, the labels alongside).  Solvers:
--   sgd     one data-parallel pass per epoch whose weight updates go
--           through an orion.buffer, since a row's features are keys the
--           dependence analysis cannot know (docs/apps-lr.md); each
--           block runs SGD on its rows, and with --flush loop each weight
--           moves by the mean of its blocks' steps; with --C,
--           L2 or L1 (--penalty) applied to every weight after each pass;
--   adarev  AdaRevision: gradients that the buffer's apply function turns
--           into steps, with each weight's state in helper arrays
--           (lr_adarev.lua);
--   newton  liblinear's trust-region Newton method for L2 (lr_newton.lua),
--           each evaluation a pass over the distributed rows, the same
--           bits on any number of executors.
-- Any number of classes: a binary model (labels 0/1 or -1/+1, or any two
-- labels), one-vs-rest or softmax (--multi) otherwise.
--
--   orion-driver apps/lr/lr.lua --train train.libsvm --test test.libsvm --epochs 10
--
-- Prints one line per epoch (sgd, adarev: epoch, seconds, train log loss
-- (each sample's, before its update), test accuracy and, for two classes,
-- AUC) or per Newton iteration, then the test set's per-class precision,
-- recall and F1 and its confusion matrix.  With --metrics FILE (an
-- orion-driver option) each epoch is also recorded with the keys epoch,
-- seconds, train_seconds, train_loss, test_accuracy, test_auc,
-- samples_per_s, executors, tier.

local orion = require "orion"
local cli = require "orion.cli"
local train_loop = require "orion.train"
local dir = (arg and arg[0] or ""):match("^(.*/)") or "./"
local eval = dofile(dir .. "lr_eval.lua")
local adarev = dofile(dir .. "lr_adarev.lua")
local report = dofile(dir .. "lr_report.lua")
local newton = dofile(dir .. "lr_newton.lua")

local spec = {
  name = "lr.lua",
  summary = "Sparse logistic regression (SGD, AdaRevision or trust-region Newton) over libsvm samples.",
  options = {
    { "train", "FILE", nil, "training samples (libsvm; any labels: two classes, or one-vs-rest or softmax over many)" },
    { "test", "FILE", nil, "held-out samples (libsvm) for accuracy, AUC, per-class precision/recall/F1 and the confusion matrix" },
    { "epochs", "N", 10, "passes over the training samples (newton: at most N Newton iterations per class)" },
    { "solver", "NAME", nil, "sgd, adarev (AdaRevision: per-weight adaptive steps revised for the updates a gradient did not see) or newton (trust-region Newton, L2; the same bits on any executor count) (default: sgd)", type = "string" },
    { "optimizer", "NAME", nil, "the same as --solver (sgd or adarev)", type = "string" },
    { "C", "X", nil, "regularisation strength as liblinear's -c: minimise R(w) + C * sum of losses (newton: default 1; sgd: no R(w) without it)", type = "number" },
    { "penalty", "P", "l2", "R(w) with --C: l2 (w.w / 2) or l1 (|w|_1, sgd only: soft-thresholding after each pass)" },
    { "weight", "LABEL=W,...", nil, "class weights as liblinear's -wi: each LABEL's losses count W times", type = "string" },
    { "multi", "M", "ovr", "more than two classes (or softmax on two): ovr (one-vs-rest) or softmax" },
    { "eps", "X", 0.01, "newton: stop when |gradient| <= X * min(#pos, #neg) / #rows * its value at w = 0 (liblinear's -e)" },
    { "eval-every", "N", 1, "sgd, adarev: score the test rows after every N epochs (0: after the last only)" },
    { "lr", "X", nil, "learning rate: sgd's step on a sample's gradient (default 2, for rows of unit length; lower it for longer rows) or AdaRevision's alpha (default 0.5)", type = "number" },
    { "decay", "X", 0.9, "sgd: the learning rate is multiplied by X after each epoch" },
    { "reg", "X", 0.0, "L2 regularisation of the weights a sample touches" },
    { "bias", false, false, "learn an intercept (every sample updates it, so on many executors stale reads make it oscillate)" },
    { "flush", "F", "auto", "when the weight updates are applied: loop (at the end of each pass, in block order: the same bits on any executor count), or the relaxed, opt-in block or N (after every block, or every N samples an executor runs: updates are applied in the order they arrive, so the weights vary from run to run and with the executor count); auto is loop" },
    { "tier", "T", "auto", "loop tier: auto, c or lua" },
    { "weights", "FILE", nil, "write the final weights to FILE, one line per feature (%.17g; one column per class of a multiclass model), the intercept last" },
    { "predict", "FILE", nil, "write the test rows' predictions to FILE as liblinear's predict -b 1: a 'labels ...' line, then per row the predicted label and each class's probability" },
  },
  epilog = "Files are plain or gzip-compressed; rows with no features are scored by the bias alone.",
}
train_loop.options(spec, { metric = "test_accuracy", goal = "max", sgd = true, sgd_default = "--decay",
                           save_help = "as --weights writes them" })
local opts = cli.parse(arg, spec)
if not opts.train or not opts.test then cli.fail(spec, "--train and --test are required") end
-- Checked on the driver before the samples are loaded: a missing input or
-- an output that cannot be written is named now, not after training.
cli.check_input(spec, opts.train, "--train")
cli.check_input(spec, opts.test, "--test")
cli.check_output(spec, opts.weights, "--weights")
cli.check_output(spec, opts.predict, "--predict")
train_loop.check(spec, opts, { metric_given = true })
if opts.solver and opts.optimizer and opts.solver ~= opts.optimizer then
  cli.fail(spec, ("--solver %s and --optimizer %s contradict each other"):format(opts.solver, opts.optimizer))
end
local solver = opts.solver or opts.optimizer or "sgd"
if solver ~= "sgd" and solver ~= "adarev" and solver ~= "newton" then
  cli.fail(spec, ("--solver must be sgd, adarev or newton, not '%s'"):format(solver))
end
if opts.epochs < 0 then cli.fail(spec, "--epochs must not be negative") end
if opts.lr == nil then opts.lr = solver == "adarev" and 0.5 or 2.0 end
if not (opts.lr > 0) then cli.fail(spec, "--lr must be positive") end
if not (opts.decay > 0 and opts.decay <= 1) then cli.fail(spec, "--decay must be in (0, 1]") end
if not (opts.reg >= 0) then cli.fail(spec, "--reg must not be negative") end
if opts.C ~= nil and not (opts.C > 0 and opts.C < math.huge) then cli.fail(spec, "--C must be positive") end
if not (opts.eps > 0) then cli.fail(spec, "--eps must be positive") end
if opts.eval_every < 0 then cli.fail(spec, "--eval-every must not be negative") end
if opts.penalty ~= "l2" and opts.penalty ~= "l1" then
  cli.fail(spec, ("--penalty must be l2 or l1, not '%s'"):format(opts.penalty))
end
if opts.multi ~= "ovr" and opts.multi ~= "softmax" then
  cli.fail(spec, ("--multi must be ovr or softmax, not '%s'"):format(opts.multi))
end
if solver == "newton" then
  if opts.penalty == "l1" then cli.fail(spec, "--penalty l1 needs --solver sgd (newton minimises the L2 problem)") end
  if opts.multi == "softmax" then cli.fail(spec, "--multi softmax needs --solver sgd (newton trains one-vs-rest)") end
  if opts.C == nil then opts.C = 1.0 end
end
if opts.penalty == "l1" and opts.C == nil then cli.fail(spec, "--penalty l1 needs --C") end
-- --weight LABEL=W,...: parsed now, checked against the labels once loaded.
local class_weight = {}
if opts.weight then
  for item in (opts.weight .. ","):gmatch("([^,]*),") do
    local l, w = item:match("^%s*([-+]?[%d.eE+-]+)=([^=]+)$")
    local lv, wv = tonumber(l), tonumber(w)
    if not lv or not wv or not math.tointeger(lv) then
      cli.fail(spec, ("--weight: '%s' is not LABEL=W (an integer label and a number)"):format(item))
    end
    if not (wv >= 0 and wv < math.huge) then
      cli.fail(spec, ("--weight: '%s': the weight must be a non-negative number"):format(item))
    end
    class_weight[math.tointeger(lv)] = wv
  end
end
local ada = solver == "adarev"
if solver ~= "sgd" and opts.lr_schedule then cli.fail(spec, "--lr-schedule applies to --solver sgd") end
if solver == "newton" and (opts.early_stop > 0 or opts.save_best) then
  cli.fail(spec, "--early-stop and --save-best apply to --solver sgd (newton stops by its own rule, --eps)")
end
-- The default keeps the contract of the same bits on any executor count;
-- block and N are relaxed (asynchronous) and only on request.
if opts.flush == "auto" then opts.flush = "loop" end
local flush = math.tointeger(tonumber(opts.flush)) or opts.flush
if flush ~= "block" and flush ~= "loop" and not (math.type(flush) == "integer" and flush > 0) then
  cli.fail(spec, ("--flush must be a positive integer, block or loop, not '%s'"):format(opts.flush))
end

-- The samples: rows of (feature, value) pairs, and their classes 1..L.
local t_start = orion.clock() -- the records' "wall_seconds": loading included
local Xtr, Ltr = orion.text_file(opts.train, { format = "libsvm", rows = true })
local Xte, Lte = orion.text_file(opts.test, { format = "libsvm", rows = true })
local labels, class_of = report.classes(Ltr:to_table(), Lte:to_table(), opts.train)
local L = #labels
if L < 2 then
  error(("%s: every training row has label %s: one class, nothing to learn")
    :format(opts.train, report.label_text(labels[1])), 0)
end
local Ytr = Ltr:map(function(i, v) return class_of(v, opts.train, i) end)
local Yte = Lte:map(function(i, v) return class_of(v, opts.test, i) end)
local ntr, nf = Xtr:dims()
local nte, nf2 = Xte:dims()
nf = math.max(nf, nf2)
local bias = nf + 1
-- Model columns: one for two classes (class 1's score) unless softmax.
local K = (L == 2 and opts.multi == "ovr") and 1 or L
if ada and K > 1 then
  cli.fail(spec, ("--solver adarev trains two classes; %s has %d"):format(opts.train, L))
end
local CW = orion.array { L, init = 1.0 }
for l, w in pairs(class_weight) do
  local c
  for k, v in ipairs(labels) do if v == l then c = k end end
  if not c then
    local names = {}
    for k, v in ipairs(labels) do names[k] = report.label_text(v) end
    cli.fail(spec, ("--weight: label %d is not a label of %s (%s)"):format(l, opts.train, table.concat(names, " ")))
  end
  CW:set(c, w)
end

local W = orion.zeros { nf + 1, K }         -- the weights, the intercept last
local G, pass
if ada then
  -- Each weight's AdaRevision state, kept with it (helper arrays).
  local Gsum, Gold, Stamp = orion.zeros { nf + 1, K }, orion.zeros { nf + 1, K }, orion.zeros { nf + 1, K }
  local Z = orion.array { nf + 1, K, init = adarev.DELTA }
  local Zmax = orion.array { nf + 1, K, init = adarev.DELTA }
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
-- sgd, --flush loop: each block runs SGD on its rows from the pass's
-- weights (it reads its own steps, pending in G), and each weight moves
-- by the mean of the steps of the blocks that changed it (iterative
-- parameter mixing, as Vowpal Wabbit's allreduce averages its nodes):
-- summing them, as before, took a step as many times too large as blocks
-- share the weight (issue 36: a 250k-row set diverged).  M holds how many
-- blocks touch each weight (counted once, below); a block buffers its
-- steps divided by it, so the blocks' "add" in block order is the mean,
-- the same bits on any executor count.  adarev and the relaxed flushes
-- add the steps as they come (M = 1).
local mix = not ada and flush == "loop"
local M = mix and orion.zeros { nf + 1 } or orion.array { nf + 1, init = 1.0 }
if mix then
  local Mb = orion.buffer(M, { apply = "add", flush = "loop" })
  orion.parallel_for(Xtr, function(i, row)
    for j = 1, #row do Mb[row:key(j)] = 1 end
    Mb[bias] = 1
  end, { tier = opts.tier })
end
-- Test scores, one per column, and a last column set to 1 for each row
-- the loop visited (a row with no features is scored by the bias alone).
local S = orion.zeros { math.max(nte, 1), K + 1 }
local loss = orion.accumulator("sum", 0.0)
-- (numbers, not booleans: the compiled tier takes captured numbers; lr
-- a float from the start, as the decay makes it after epoch 1: an
-- integer --lr such as 2 would otherwise change the captured value's
-- type after the first epoch, and with it the generated body, which would
-- be compiled a second time)
local lr, reg, use_bias = opts.lr + 0.0, opts.reg, opts.bias and 1 or 0
local softmax = opts.multi == "softmax" and 1 or 0
-- sgd buffers lr times the negative gradient, adarev the gradient itself;
-- sgd reads its block's own pending steps (own = 1), adarev does not.
local own = 1
if ada then lr, own = -1, 0 end

-- One step per sample: the weights are read as of the buffer's last
-- flush plus (sgd) the block's own steps since, the step (or gradient)
-- goes through G.  One-vs-rest (and the
-- binary model, K = 1) steps each column on its own sigmoid; softmax
-- takes the log-sum-exp of the scores first (a running maximum, so no
-- exp overflows), then steps each column by its share.
local function sgd(i, row)
  local n = #row
  local y = Ytr[i]
  local cw = CW[y]
  local lse = 0.0
  if softmax == 1 then
    local mx, s = -1e300, 0.0
    for c = 1, K do
      local z = 0.0
      if use_bias == 1 then
        z = W[bias][c]
        if own == 1 then z = z + G[bias][c] * M[bias] end
      end
      for j = 1, n do
        local k = row:key(j)
        local w = W[k][c]
        if own == 1 then w = w + G[k][c] * M[k] end
        z = z + w * row:value(j)
      end
      if z > mx then
        s = s * math.exp(mx - z) + 1
        mx = z
      else
        s = s + math.exp(z - mx)
      end
    end
    lse = mx + math.log(s)
  end
  for c = 1, K do
    local z = 0.0
    if use_bias == 1 then
      z = W[bias][c]
      if own == 1 then z = z + G[bias][c] * M[bias] end
    end
    for j = 1, n do
      local k = row:key(j)
      local w = W[k][c]
      if own == 1 then w = w + G[k][c] * M[k] end
      z = z + w * row:value(j)
    end
    local t = 0
    if y == c then t = 1 end
    local p
    if softmax == 1 then
      p = math.exp(z - lse)
      if t == 1 then loss:add(lse - z) end
    else
      p = 1 / (1 + math.exp(-z))
      if t == 1 then
        loss:add(-math.log(math.max(p, 1e-15)))
      else
        loss:add(-math.log(math.max(1 - p, 1e-15)))
      end
    end
    local g = lr * cw * (t - p)
    for j = 1, n do
      local k = row:key(j)
      local m = M[k]
      G[k][c] = G[k][c] + g * row:value(j) / m - lr * reg * (W[k][c] + own * G[k][c] * m) / m
    end
    if use_bias == 1 then G[bias][c] = G[bias][c] + g / M[bias] end
  end
end

local function score(i, row)
  for c = 1, K do
    local z = 0.0
    if use_bias == 1 then z = W[bias][c] end
    for j = 1, #row do z = z + W[row:key(j)][c] * row:value(j) end
    S[i][c] = z
  end
  S[i][K + 1] = 1
end

-- sgd with --C: the regulariser's step for a pass of the samples (each
-- sample's share is 1/(C n) of it), applied to every weight but the
-- intercept: w * exp(-lr/C) for L2, soft-thresholding by lr/C for L1
-- (which sets weights to exactly 0).
local l1, shrink, thr = opts.penalty == "l1" and 1 or 0, 1.0, 0.0
local function regularise(k, c, w)
  if k == bias then return w end
  if l1 == 1 then
    if w > thr then return w - thr end
    if w < -thr then return w + thr end
    return 0.0
  end
  return w * shrink
end

local loop_opts = { tier = opts.tier }
local Yte_t = Yte:to_table()

-- Scores the test rows: their classes' probabilities, the predictions,
-- accuracy and, for two classes, the AUC of class 1.
local function evaluate()
  orion.parallel_for(Xte, score, loop_opts)
  local St = S:to_table()
  local b = {}
  for c = 1, K do b[c] = use_bias == 1 and W:get(bias, c) or 0.0 end
  local preds, probs, p1 = {}, {}, {}
  for i = 1, nte do
    local z = St[i]
    if z[K + 1] == 0 then z = b end
    local p, best = report.probabilities({ table.unpack(z, 1, K) }, L, opts.multi)
    preds[i], probs[i], p1[i] = best, p, p[1]
  end
  local right, pos = 0, {}
  for i = 1, nte do
    if preds[i] == Yte_t[i] then right = right + 1 end
    pos[i] = Yte_t[i] == 1 and 1 or 0
  end
  local auc
  if L == 2 then
    local _
    _, auc = eval.evaluate(pos, p1)
  end
  return right / math.max(nte, 1), auc, preds, probs
end

-- A loss that rises two epochs in a row is a step too large for the rows
-- (sgd, adarev): warned once, naming the setting; a loss past 1e6 stops.
local losses, warned = {}, false
local function check_loss(epoch, train_loss)
  if not (train_loss < 1e6) then
    error(("epoch %d: training diverged (train loss %s); lower the learning rate (--lr %g now)")
      :format(epoch, tostring(train_loss), opts.lr), 0)
  end
  losses[epoch] = train_loss
  local a, b = losses[epoch - 2], losses[epoch - 1]
  if not warned and a and b and b > a and train_loss > b then
    warned = true
    io.stderr:write(("lr.lua: warning: epoch %d: the training loss rose two epochs in a row "
      .. "(%.6g -> %.6g -> %.6g): the step is too large for these rows; lower --lr (%g now)%s\n")
      :format(epoch, a, b, train_loss, opts.lr,
        opts.reg > 0 and (" or --reg (%g now; --lr times --reg must stay below 2)"):format(opts.reg) or ""))
  end
end

-- The weights, one line per feature (%.17g; a column per class), the
-- intercept last.
local function write_weights(path)
  local f = assert(io.open(path, "w"))
  for _, row in ipairs(W:to_table()) do
    local line = {}
    for c = 1, K do line[c] = ("%.17g"):format(row[c]) end
    f:write(table.concat(line, " "), "\n")
  end
  f:close()
end

local acc, auc, preds, probs
local finish = function() end -- the training loop's summary line
if solver == "newton" then
  -- Newton trains column by column; the weights go to W's columns.
  local t_newton = orion.clock()
  local train = newton.new(Xtr, Ytr, CW, nf, use_bias, opts.C, opts.tier)
  print(("%5s  %6s  %8s  %14s  %10s  %3s"):format("class", "iter", "seconds", "objective", "|gradient|", "cg"))
  local total_passes = 0
  local count = {}
  for _, y in ipairs(Ytr:to_table()) do count[y] = (count[y] or 0) + 1 end
  for c = 1, K do
    local t0 = orion.clock()
    -- liblinear's stopping rule: eps scaled by the smaller side's share.
    local pos = count[c] or 0
    local eps = opts.eps * math.max(math.min(pos, ntr - pos), 1) / math.max(ntr, 1)
    local w, _, passes = train(c, eps, opts.epochs, function(it, f, gn, cg)
      print(("%5s  %6d  %8.3f  %14.6f  %10.4g  %3d"):format(report.label_text(labels[c]), it,
        orion.clock() - t0, f, gn, cg))
      io.stdout:flush()
    end)
    total_passes = total_passes + passes
    for k = 1, nf + 1 do W:set(k, c, w[k]) end
  end
  acc, auc, preds, probs = evaluate()
  local seconds = orion.clock() - t_newton
  orion.record { epoch = 1, seconds = seconds, train_seconds = seconds, passes = total_passes,
                 test_accuracy = acc, test_auc = auc, wall_seconds = orion.clock() - t_start }
  print(("newton: %d passes over the training rows in %.3f s"):format(total_passes, seconds))
else
  local head = ("%5s  %8s  %10s  %8s"):format("epoch", "seconds", "train-loss", "accuracy")
  print(L == 2 and head .. "     auc" or head)
  local run = train_loop.start(spec, opts, { total = opts.epochs, lr = opts.lr,
    show = { "train_loss", "test_accuracy" }, save = write_weights, model = opts.weights,
    save_option = "--weights" })
  for epoch = 1, opts.epochs do
    if not ada then lr = (run:lr(epoch) or lr) + 0.0 end -- --lr-schedule
    local t0 = orion.clock()
    loss:reset()
    pass = epoch
    local st = orion.parallel_for(Xtr, sgd, loop_opts)
    if opts.C and not ada then
      shrink, thr = math.exp(-lr / opts.C), lr / opts.C
      orion.parallel_for(W, regularise, loop_opts)
    end
    local train_seconds = orion.clock() - t0
    local scored = epoch == opts.epochs or (opts.eval_every > 0 and epoch % opts.eval_every == 0) or
      opts.early_stop > 0 or opts.save_best ~= nil
    if scored then acc, auc, preds, probs = evaluate() end
    local seconds = orion.clock() - t0
    local train_loss = loss:get() / math.max(ntr, 1)
    check_loss(epoch, train_loss)
    local shown = scored and ("%8.4f"):format(acc) or "       -"
    if L == 2 then shown = shown .. (scored and ("  %6.4f"):format(auc) or "       -") end
    print(("%5d  %8.3f  %10.6f  %s"):format(epoch, seconds, train_loss, shown))
    io.stdout:flush()
    local m = { epoch = epoch, seconds = seconds, train_seconds = train_seconds,
                train_loss = train_loss, test_accuracy = scored and acc or nil,
                test_auc = scored and auc or nil, wall_seconds = orion.clock() - t_start,
                samples_per_s = ntr / train_seconds, executors = st.executors,
                tier = st.tier }
    orion.record(m)
    if not ada then lr = lr * opts.decay end
    if run:epoch(epoch, m) then -- progress line, --save-best, --early-stop
      if not scored then acc, auc, preds, probs = evaluate() end
      break
    end
  end
  finish = function() run:finish() end
end

if preds then
  local names = {}
  for i = 1, nte do names[i] = Yte_t[i] end
  print(("test accuracy %.4f (%d rows)%s"):format(acc, nte, auc and (" auc %.4f"):format(auc) or ""))
  report.write_report(io.stdout, report.confusion(names, preds, L), labels)
  if opts.predict then report.write_predictions(opts.predict, labels, preds, probs) end
end
if opts.weights then write_weights(opts.weights) end
io.stdout:flush()
finish()
