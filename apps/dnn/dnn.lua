-- A multilayer perceptron classifier trained data-parallel (Orion-C built-in
-- app): ReLU hidden layers, softmax cross-entropy, minibatch SGD with
-- momentum.
--
--   orion-driver apps/dnn/dnn.lua                         # embedded synthetic data
--   orion-driver apps/dnn/dnn.lua --data fashion-mnist    # Debian's dataset-fashion-mnist
--   orion-driver apps/dnn/dnn.lua --data mnist:../shared/data/mnist
--   orion-driver apps/dnn/dnn.lua --data 20ng:../shared/data/20newsgroups-bydate
--
-- How it runs (docs/apps-dnn.md has the details).  All parameters (every
-- layer's weights and biases) live in one flat f32 DistArray P, and their
-- momentum in another, V; both are held by the servers.  An epoch is one
-- or more rounds; a round is one parallel_for over `shards` (one element
-- per shard: --shards, 2 by default, whatever the number of executors).
-- The body for shard s reads P and V once, runs SGD with
-- momentum on its share of the epoch's shuffled minibatches with orion.nn
-- (OpenBLAS), and adds (P_local - P) / shards and (V_local - V) / shards
-- through orion.buffer(P / V, {apply = "add", flush = "loop"}): at the end
-- of the round the servers hold the average of the shards' models.  With
-- one shard this is exactly serial SGD with momentum; --sync N averages
-- every N minibatches instead of once per epoch.  Held-out accuracy is one
-- more parallel_for.
--
-- One line per epoch: epoch, seconds (training rounds only), samples/s,
-- training loss (mean cross-entropy of the minibatches, before each step),
-- held-out accuracy.  With --metrics FILE (an orion-driver option) each
-- epoch is recorded with the keys epoch, seconds, samples_per_s, loss,
-- accuracy, test_loss, eval_seconds, rounds, driver_bytes and peer_bytes
-- (bytes through the driver and between executors, the epoch's loops),
-- bytes_moved (the old name of driver_bytes), cpu_seconds (the CPU time
-- of the epoch's training bodies, summed over the shards), executors and
-- gpu (the training bodies of the epoch whose orion.nn ran on an
-- executor's GPU: on GPU executors, nn.device() names the device and the
-- nn kernels run on it; 0 on the CPU).

local orion = require "orion"
local cli = require "orion.cli"
local train_loop = require "orion.train"
local nn = orion.nn

local spec = {
  name = "dnn.lua",
  summary = "Data-parallel MLP classifier (ReLU, softmax cross-entropy, SGD with momentum).",
  options = {
    { "data", "SPEC", nil, "fashion-mnist[:DIR], mnist:DIR or 20ng:DIR (default: embedded synthetic data)" },
    { "data-dir", "DIR", nil, "the folder of the --data files (default for fashion-mnist: " ..
                              "/usr/share/datasets/fashion-mnist)", type = "string" },
    { "layers", "LIST", nil, "layer sizes, input to classes (default: 784,256,10 for fashion-mnist " ..
                             "and mnist; WORDS,256,20 for 20ng; 32,64,4 for the synthetic data)", type = "string" },
    { "epochs", "N", nil, "passes over the training set (default: 10 fashion-mnist, 20 mnist, " ..
                          "10 20ng, 10 synthetic)", type = "int" },
    { "batch", "N", 100, "minibatch size of one SGD step on one executor" },
    { "lr", "X", nil, "learning rate (default: 0.05; 0.2 for 20ng)", type = "number" },
    { "momentum", "X", 0.9, "momentum coefficient" },
    { "seed", "N", 1, "seed of the initial weights and of the minibatch order" },
    { "sync", "N", 0, "minibatches each shard runs between model averages; 0: once per epoch" },
    { "shards", "N", 2, "models trained side by side and averaged (the result depends on N, not on the executors)" },
    { "train-size", "N", 8000, "mnist: the images trained on; the rest of the 10k are held out" },
    { "limit", "N", 0, "train on the first N training samples only; 0: all of them" },
    { "checkpoint-every", "N", 0, "write a checkpoint every N epochs (needs orion-driver --checkpoint-dir; 0: never); a restarted or --resume'd run goes on from the newest" },
    { "save", "PATH", nil, "write the trained parameters to PATH (an f32 array file: every layer's weights, in x out, then its biases)" },
  },
  epilog = "Fashion-MNIST: DIR holds train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz],\n" ..
           "t10k-images-idx3-ubyte[.gz] and t10k-labels-idx1-ubyte[.gz] (Debian's\n" ..
           "dataset-fashion-mnist installs them in /usr/share/datasets/fashion-mnist);\n" ..
           "train on the 60k training images, test on the 10k.  MNIST: DIR holds\n" ..
           "t10k-images-idx3-ubyte[.gz] and t10k-labels-idx1-ubyte[.gz]; a fixed\n" ..
           "random permutation splits the 10k images into --train-size for\n" ..
           "training and the rest for held-out accuracy.  20NG: DIR holds\n" ..
           "docword.20news.txt.gz and docs.20news.txt (docID split group); features\n" ..
           "are log(1 + count), L2-normalised per document; train on \"train\",\n" ..
           "test on \"test\".",
}

train_loop.options(spec, { metric = "accuracy", goal = "max", sgd = true,
                           save_help = "as --save writes them" })
local opts = cli.parse(arg, spec)
train_loop.check(spec, opts, { metric_given = true })
cli.check_output(spec, opts.save, "--save")
local kind, dir = "synthetic", nil
local default_dirs = { ["fashion-mnist"] = "/usr/share/datasets/fashion-mnist" }
if opts.data then
  kind, dir = opts.data:match("^([%w-]+):(.+)$")
  if not kind then kind = opts.data end
  dir = opts.data_dir or dir or default_dirs[kind]
  if kind ~= "fashion-mnist" and kind ~= "mnist" and kind ~= "20ng" or not dir then
    cli.fail(spec, ("--data must be one of fashion-mnist, fashion-mnist:DIR, mnist:DIR, 20ng:DIR " ..
                    "(or a name and --data-dir DIR), not '%s'"):format(opts.data))
  end
elseif opts.data_dir then
  cli.fail(spec, "--data-dir needs --data (fashion-mnist, mnist or 20ng)")
end
local defaults = {
  synthetic = { epochs = 10, lr = 0.05 },
  ["fashion-mnist"] = { epochs = 10, lr = 0.05 },
  mnist = { epochs = 20, lr = 0.05 },
  ["20ng"] = { epochs = 10, lr = 0.2 },
}
local epochs = opts.epochs or defaults[kind].epochs
local lr = opts.lr or defaults[kind].lr
local mu = opts.momentum
local B = opts.batch
if epochs < 0 then cli.fail(spec, "--epochs must not be negative") end
if B < 1 then cli.fail(spec, "--batch must be at least 1") end
if not (lr > 0) then cli.fail(spec, "--lr must be positive") end
if not (mu >= 0 and mu < 1) then cli.fail(spec, "--momentum must be in [0, 1)") end
if opts.sync < 0 then cli.fail(spec, "--sync must not be negative") end
if opts.shards < 1 then cli.fail(spec, "--shards must be at least 1") end
if opts.train_size < 1 then cli.fail(spec, "--train-size must be at least 1") end
if opts.limit < 0 then cli.fail(spec, "--limit must not be negative") end
-- The number of training samples used out of n (--limit).
local function limited(n)
  return opts.limit > 0 and math.min(n, opts.limit) or n
end

local sizes
if opts.layers then
  sizes = {}
  for f in (opts.layers .. ","):gmatch("([^,]*),") do
    local n = math.tointeger(tonumber(f))
    if not n or n < 1 then
      cli.fail(spec, ("--layers must list positive integers, as 784,256,10, not '%s'"):format(opts.layers))
    end
    sizes[#sizes + 1] = n
  end
  if #sizes < 2 then cli.fail(spec, "--layers needs at least an input and an output size") end
end
if opts.checkpoint_every < 0 then cli.fail(spec, "--checkpoint-every must not be negative") end
if opts.checkpoint_every > 0 and not orion.checkpoint_dir() then
  cli.fail(spec, "--checkpoint-every needs orion-driver --checkpoint-dir DIR")
end
orion.seed(opts.seed)
math.randomseed(opts.seed)

-- Data -----------------------------------------------------------------------
-- Dense inputs: X (samples x features, f32) and Y (1-based classes); sparse
-- inputs (20ng): the compressed rows R, C, Vx.  *te: the held-out set.
local X, Y, Xte, Yte, R, C, Vx, Rte, Cte, Vxte
local ntrain, ntest, nfeat, nclass
local sparse = false

local function exists(path)
  local f = io.open(path, "rb")
  if f then f:close() end
  return f ~= nil
end

-- The first of the names that exists in dir (plain or .gz), or an error.
local function find(names)
  for _, n in ipairs(names) do
    for _, p in ipairs { dir .. "/" .. n, dir .. "/" .. n .. ".gz" } do
      if exists(p) then return p end
    end
  end
  error(("%s: no %s[.gz] in this folder"):format(dir, names[1]), 0)
end

-- An IDX images file (pixels scaled to [0, 1], one row per image) and its
-- labels file (1-based classes): images, labels, count, pixels.
local function read_images(ipath, lpath)
  local images = nn.read_idx(ipath, { flatten = true, scale = 1 / 255 })
  local labels = nn.read_idx(lpath, { type = "i32", shift = 1 })
  local n, d = images:dims()
  if select("#", labels:dims()) ~= 1 then
    error(("%s: expected a 1-D labels file, found dims %s"):format(
      lpath, table.concat({ labels:dims() }, "x")), 0)
  end
  if labels:dims() ~= n then
    error(("dims mismatch: %s has %d images but %s has %d labels"):format(
      ipath, n, lpath, labels:dims()), 0)
  end
  return images, labels, n, d
end

-- A random permutation of 1..n (Fisher-Yates on math.random).
local function permutation(n)
  local p = {}
  for i = 1, n do p[i] = i end
  for i = n, 2, -1 do
    local j = math.random(i)
    p[i], p[j] = p[j], p[i]
  end
  return p
end

if kind == "fashion-mnist" then
  local images, labels, n, d = read_images(
    find { "train-images-idx3-ubyte", "train-images.idx3-ubyte" },
    find { "train-labels-idx1-ubyte", "train-labels.idx1-ubyte" })
  local tipath = find { "t10k-images-idx3-ubyte", "t10k-images.idx3-ubyte" }
  local timages, tlabels, nte, dte = read_images(
    tipath, find { "t10k-labels-idx1-ubyte", "t10k-labels.idx1-ubyte" })
  if dte ~= d then
    error(("dims mismatch: %s has images of %d pixels, the training images have %d"):format(
      tipath, dte, d), 0)
  end
  -- The standard split: the training file to train on (its first --limit
  -- images), the t10k file for the test accuracy.
  ntrain, ntest = limited(n), nte
  if ntrain < n then
    local first = {}
    for i = 1, ntrain do first[i] = i end
    X, Y = nn.take(images, first), nn.take(labels, first)
  else
    X, Y = images, labels
  end
  Xte, Yte = timages, tlabels
  nfeat, nclass = d, 10
  print(("# fashion-mnist: %s, %d train and %d test images of %d pixels"):format(
    dir, ntrain, ntest, d))
elseif kind == "mnist" then
  local ipath = find { "t10k-images-idx3-ubyte", "t10k-images.idx3-ubyte" }
  local lpath = find { "t10k-labels-idx1-ubyte", "t10k-labels.idx1-ubyte" }
  local images, labels, n, d = read_images(ipath, lpath)
  if opts.train_size >= n then
    cli.fail(spec, ("--train-size must be below the %d images"):format(n))
  end
  -- A fixed split, whatever --seed: every run holds out the same images.
  local saved = math.random(1 << 30)
  math.randomseed(20240601)
  local perm = permutation(n)
  math.randomseed(saved)
  ntrain, ntest = limited(opts.train_size), n - opts.train_size
  X = nn.take(images, perm, 1, ntrain)
  Y = nn.take(labels, perm, 1, ntrain)
  Xte = nn.take(images, perm, opts.train_size + 1, ntest)
  Yte = nn.take(labels, perm, opts.train_size + 1, ntest)
  nfeat, nclass = d, 10
  print(("# mnist: %s, %d train and %d held-out images of %d pixels"):format(
    dir, ntrain, ntest, d))
elseif kind == "20ng" then
  local dpath = find { "docword.20news.txt" }
  local mpath = find { "docs.20news.txt" }
  local counts = orion.text_file(dpath, { format = "uci-bow", value_type = "f32" })
  local labels, istest, groups = nn.read_docs(mpath)
  local ndocs, nwords = counts:dims()
  if labels:dims() ~= ndocs then
    error(("dims mismatch: %s has %d documents but %s lists %d"):format(
      dpath, ndocs, mpath, labels:dims()), 0)
  end
  local tr, te = {}, {}
  for i, t in ipairs(istest:to_table()) do
    if t ~= 0 then te[#te + 1] = i elseif #tr < limited(ndocs) then tr[#tr + 1] = i end
  end
  if #tr == 0 or #te == 0 then
    error(("%s: needs both train and test documents (found %d and %d)"):format(
      mpath, #tr, #te), 0)
  end
  R, C, Vx = nn.bow_features(counts, tr)
  Rte, Cte, Vxte = nn.bow_features(counts, te)
  Y = nn.take(labels, tr)
  Yte = nn.take(labels, te)
  ntrain, ntest, nfeat, nclass = #tr, #te, nwords, #groups
  sparse = true
  print(("# 20ng: %s, %d train and %d test documents, %d words, %d groups"):format(
    dir, ntrain, ntest, nwords, nclass))
else
  -- Embedded: 4 classes, each a mixture of 2 Gaussian blobs in 32
  -- dimensions (fixed seed), 5000 training and 1000 held-out samples.
  local n, d, K = 6000, 32, 4
  local Xs = nn.read(orion.randn { n, d, type = "f32", seed = 7 })
  local centres = nn.read(orion.randn { 2 * K, d, type = "f32", scale = 0.6, seed = 8 })
  local assign = nn.matrix(n, 2 * K)
  local Ys = nn.matrix(n, 1)
  local saved = math.random(1 << 30)
  math.randomseed(99)
  for i = 1, n do
    local blob = math.random(2 * K)
    assign:set(i, blob, 1)
    Ys:set(i, 1, (blob - 1) % K + 1)
  end
  math.randomseed(saved)
  nn.gemm(Xs, assign, centres, 1, 1)
  local all = {}
  for i = 1, n do all[i] = i end
  local XA, YA = nn.to_array(Xs), nn.to_array(Ys)
  ntrain, ntest = limited(5000), 1000
  X, Y = nn.take(XA, all, 1, ntrain), nn.take(YA, all, 1, ntrain)
  Xte, Yte = nn.take(XA, all, 5000 + 1, ntest), nn.take(YA, all, 5000 + 1, ntest)
  nfeat, nclass = d, K
  print(("# synthetic: %d train and %d held-out samples, %d features, %d classes"):format(
    ntrain, ntest, d, K))
end

if not sizes then
  sizes = { nfeat, kind == "synthetic" and 64 or 256, nclass }
end
if sizes[1] ~= nfeat then
  cli.fail(spec, ("--layers: the input size must be %d for this data, not %d"):format(nfeat, sizes[1]))
end
if sizes[#sizes] ~= nclass then
  cli.fail(spec, ("--layers: the output size must be %d (classes), not %d"):format(nclass, sizes[#sizes]))
end
local nl = #sizes - 1

-- Parameters: one flat array, layer by layer W (in x out) then b (out).
local offW, offb, nparams = {}, {}, 0
for l = 1, nl do
  offW[l] = nparams + 1
  nparams = nparams + sizes[l] * sizes[l + 1]
  offb[l] = nparams + 1
  nparams = nparams + sizes[l + 1]
end
local P = orion.zeros { nparams, type = "f32" }
local V = orion.zeros { nparams, type = "f32" }
for l = 1, nl do -- He initialisation; biases and momentum start at 0
  local Wl = orion.randn { sizes[l], sizes[l + 1], type = "f32",
                           scale = math.sqrt(2 / sizes[l]), seed = opts.seed * 1000 + l }
  nn.write(P, nn.read(Wl), offW[l])
end
local BP = orion.buffer(P, { apply = "add", flush = "loop" })
local BV = orion.buffer(V, { apply = "add", flush = "loop" })

-- One element per shard.  The number of shards is an option, not the
-- number of executors: the model is the average of S models, so the same
-- S gives the same bits on any number of executors (shard s runs on
-- executor s x N / S; several on one executor run one after the other).
-- The probe finds the number of executors, for the header line.
local probe = orion.zeros { 1, type = "i32" }
local nexec = orion.parallel_for(probe, function(i, v) end).executors or 1
local S = opts.shards
local shards = orion.zeros { S, type = "i32" }
local pfor_opts = { partitions = { S }, tier = "lua" } -- nn calls are not in the compiled subset

print(("# layers %s (%d parameters), batch %d, lr %g, momentum %g, %d shard%s on %d executor%s, %s"):format(
  table.concat(sizes, "-"), nparams, B, lr, mu, S, S == 1 and "" or "s",
  nexec, nexec == 1 and "" or "s",
  opts.sync > 0 and ("average every " .. opts.sync .. " minibatches") or "average once per epoch"))

-- Loops -----------------------------------------------------------------------
local acc_loss = orion.accumulator("sum", 0.0)
local acc_seen = orion.accumulator("sum", 0)
local acc_correct = orion.accumulator("sum", 0)
local acc_gpu = orion.accumulator("sum", 0)
local acc_cpu = orion.accumulator("sum", 0.0) -- CPU seconds of the training bodies
local sync = opts.sync
local order, round = {}, 1 -- captured by value at each round

-- Matrices for a minibatch of bsz samples (forward outputs Z, which become
-- the hidden activations in place, and their gradients D).
local function batch_mats(bsz)
  local m = { Z = {}, D = {}, Y = nn.matrix(bsz, 1) }
  if not sparse then m.H0 = nn.matrix(bsz, sizes[1]) end
  for l = 1, nl do
    m.Z[l] = nn.matrix(bsz, sizes[l + 1])
    m.D[l] = nn.matrix(bsz, sizes[l + 1])
  end
  return m
end

-- Forward pass of minibatch m (input in m.H0 or m.S) through W, b.
local function forward(m, W, b)
  for l = 1, nl do
    local Z = m.Z[l]
    if l == 1 and sparse then
      nn.spmm(Z, m.S, W[1])
    else
      nn.gemm(Z, l == 1 and m.H0 or m.Z[l - 1], W[l])
    end
    nn.add_bias(Z, b[l], l < nl and "relu" or nil) -- one pass over Z
  end
  return m.Z[nl]
end

local function train_shard(s, _)
  local cpu0 = os.clock()
  -- This round's model, as of the last average, and a copy to diff against.
  local W, b, VW, Vb, W0, b0, VW0, Vb0, Gb = {}, {}, {}, {}, {}, {}, {}, {}, {}
  for l = 1, nl do
    W[l] = nn.read_range(P, offW[l], sizes[l], sizes[l + 1])
    b[l] = nn.read_range(P, offb[l], 1, sizes[l + 1])
    VW[l] = nn.read_range(V, offW[l], sizes[l], sizes[l + 1])
    Vb[l] = nn.read_range(V, offb[l], 1, sizes[l + 1])
    W0[l], b0[l], VW0[l], Vb0[l] = W[l]:copy(), b[l]:copy(), VW[l]:copy(), Vb[l]:copy()
    Gb[l] = nn.matrix(1, sizes[l + 1])
  end
  -- Shard s owns positions lo..hi of the epoch's order.
  local lo, hi = (s - 1) * ntrain // S + 1, s * ntrain // S
  local nbatch = (hi - lo + B) // B
  local t0, t1 = 1, nbatch
  if sync > 0 then
    t0, t1 = (round - 1) * sync + 1, math.min(round * sync, nbatch)
  end
  if t0 > t1 then return end
  -- The weights' momentum is kept scaled by mu between steps: each step's
  -- gradient product adds -(lr / bsz) G to it (beta = 1), and one pass
  -- then does W = W + V and V = mu V for the next step (the last step
  -- only W = W + V).  The same values as V = mu V - lr G, W = W + V.
  for l = 1, nl do nn.scale(VW[l], mu) end
  local mats, loss, seen = {}, 0.0, 0
  for t = t0, t1 do
    local p0 = lo + (t - 1) * B
    local bsz = math.min(B, hi - p0 + 1)
    local m = mats[bsz]
    if not m then m = batch_mats(bsz); mats[bsz] = m end
    if sparse then
      m.S = nn.csr_rows(R, C, Vx, sizes[1], order, p0, bsz, m.S)
    else
      nn.rows(X, order, p0, bsz, m.H0)
    end
    nn.rows(Y, order, p0, bsz, m.Y)
    local out = forward(m, W, b)
    local ls = nn.softmax_xent(out, m.Y, m.D[nl])
    loss, seen = loss + ls, seen + bsz
    for l = nl, 1, -1 do
      local dZ = m.D[l]
      -- The weights' momentum step is fused into the gradient product:
      -- VW = (mu VW) - (lr / bsz) op(H)^T dZ (W itself changes after the
      -- backward pass, which still needs the old W).
      if l == 1 and sparse then
        nn.spmm_t(VW[1], m.S, dZ, -lr / bsz, 1)
      else
        nn.gemm(VW[l], l == 1 and m.H0 or m.Z[l - 1], dZ, -lr / bsz, 1, true, false)
      end
      nn.colsum(Gb[l], dZ, 1 / bsz)
      if l > 1 then
        nn.gemm(m.D[l - 1], dZ, W[l], 1, 0, false, true)
        nn.relu_backward(m.D[l - 1], m.Z[l - 1])
      end
    end
    for l = 1, nl do
      if t < t1 then nn.add_scale(W[l], VW[l], mu) else nn.axpy(W[l], 1, VW[l]) end
      nn.momentum(b[l], Vb[l], Gb[l], lr, mu)
    end
  end
  -- The servers add (local - start) / S of every shard: the average model.
  for l = 1, nl do
    nn.add_to(BP, W[l], 1 / S, offW[l], W0[l])
    nn.add_to(BP, b[l], 1 / S, offb[l], b0[l])
    nn.add_to(BV, VW[l], 1 / S, offW[l], VW0[l])
    nn.add_to(BV, Vb[l], 1 / S, offb[l], Vb0[l])
  end
  acc_loss:add(loss)
  acc_seen:add(seen)
  if nn.device() then acc_gpu:add(1) end
  acc_cpu:add(os.clock() - cpu0)
end

local EB = 500 -- rows per evaluation step
local function evaluate_shard(s, _)
  local W, b = {}, {}
  for l = 1, nl do
    W[l] = nn.read_range(P, offW[l], sizes[l], sizes[l + 1])
    b[l] = nn.read_range(P, offb[l], 1, sizes[l + 1])
  end
  local lo, hi = (s - 1) * ntest // S + 1, s * ntest // S
  local mats, loss, correct = {}, 0.0, 0
  local p0 = lo
  while p0 <= hi do
    local bsz = math.min(EB, hi - p0 + 1)
    local m = mats[bsz]
    if not m then m = batch_mats(bsz); mats[bsz] = m end
    if sparse then
      m.S = nn.csr_rows(Rte, Cte, Vxte, sizes[1], nil, p0, bsz, m.S)
    else
      nn.rows(Xte, nil, p0, bsz, m.H0)
    end
    nn.rows(Yte, nil, p0, bsz, m.Y)
    local ls, c = nn.softmax_xent(forward(m, W, b), m.Y)
    loss, correct = loss + ls, correct + c
    p0 = p0 + bsz
  end
  acc_loss:add(loss)
  acc_correct:add(correct)
end

local max_batches = (ntrain // S + B) // B
local rounds = sync > 0 and (max_batches + sync - 1) // sync or 1

-- After a restart (or orion-driver --resume): P, V and the minibatch
-- order's random state as of the newest checkpoint.
local resumed = orion.restore()
local first_epoch = resumed and resumed.step + 1 or 1

local function save_model(path) P:save(path) end
local run = train_loop.start(spec, opts, {
  total = epochs, done = math.min(first_epoch - 1, epochs), lr = lr,
  show = { "loss", "accuracy" }, save = save_model, model = opts.save, save_option = "--save",
  resume = resumed and resumed.state.train })

print(("%5s  %8s  %10s  %8s  %8s"):format("epoch", "seconds", "samples/s", "loss", "accuracy"))
for epoch = first_epoch, epochs do
  orion.step(epoch)
  lr = run:lr(epoch) or lr -- --lr-schedule (captured when each round starts)
  order = permutation(ntrain)
  acc_loss:reset()
  acc_seen:reset()
  acc_gpu:reset()
  acc_cpu:reset()
  local t0 = orion.clock()
  local bytes, peer, st = 0, 0, nil
  for r = 1, rounds do
    round = r
    st = orion.parallel_for(shards, train_shard, pfor_opts)
    bytes, peer = bytes + st.driver_bytes, peer + st.peer_bytes
  end
  local seconds = orion.clock() - t0
  local loss = acc_loss:get() / math.max(acc_seen:get(), 1)
  if loss ~= loss or loss == math.huge then
    error(("epoch %d: training diverged (loss is %s); lower --lr"):format(epoch, loss), 0)
  end
  local t1 = orion.clock()
  acc_loss:reset()
  acc_correct:reset()
  local est = orion.parallel_for(shards, evaluate_shard, pfor_opts)
  bytes, peer = bytes + est.driver_bytes, peer + est.peer_bytes
  local eval_seconds = orion.clock() - t1
  local accuracy = acc_correct:get() / ntest
  local test_loss = acc_loss:get() / ntest
  print(("%5d  %8.3f  %10.0f  %8.4f  %8.4f"):format(epoch, seconds, ntrain / seconds, loss, accuracy))
  io.stdout:flush()
  local m = { epoch = epoch, seconds = seconds, samples_per_s = ntrain / seconds,
              loss = loss, accuracy = accuracy, test_loss = test_loss,
              eval_seconds = eval_seconds, rounds = rounds, bytes_moved = bytes,
              driver_bytes = bytes, peer_bytes = peer, executors = st.executors,
              gpu = acc_gpu:get(), cpu_seconds = acc_cpu:get() }
  orion.record(m)
  local stop = run:epoch(epoch, m) -- progress line, --save-best, --early-stop
  if opts.checkpoint_every > 0 and epoch % opts.checkpoint_every == 0 then
    orion.checkpoint { step = epoch, state = { train = run:state() } }
  end
  if stop then break end
end
if opts.save then
  save_model(opts.save)
  print(("# saved the parameters (%d) to %s"):format(nparams, opts.save))
end
run:finish()
