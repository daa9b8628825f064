-- The serial reference for lr.lua: the same sparse logistic regression,
-- one sample at a time in file order, in plain Lua (it uses no orion
-- module, only io and math):
--
--   orion-driver apps/lr/lr_serial.lua --train FILE --test FILE [--epochs N]
--       [--lr X] [--decay X] [--reg X] [--bias]
--
-- Prints one line per epoch: epoch, train log loss, test accuracy, test
-- AUC; the last line is "final accuracy A auc U".

local dir = (arg and arg[0] or ""):match("^(.*/)") or "./"
local eval = dofile(dir .. "lr_eval.lua")
local cli = require "orion.cli"

local spec = {
  name = "lr_serial.lua",
  summary = "Serial reference for lr.lua: SGD logistic regression over libsvm rows.",
  options = {
    { "train", "FILE", nil, "training samples (libsvm, labels 0/1 or -1/+1)" },
    { "test", "FILE", nil, "held-out samples (libsvm)" },
    { "epochs", "N", 10, "passes over the training samples" },
    { "lr", "X", 0.5, "learning rate" },
    { "decay", "X", 0.9, "the learning rate is multiplied by X after each epoch" },
    { "reg", "X", 0.0, "L2 regularisation of the weights a sample touches" },
    { "bias", false, false, "learn an intercept" },
  },
}
local opts = cli.parse(arg, spec)
if not opts.train or not opts.test then cli.fail(spec, "--train and --test are required") end

-- rows[r] = {class, keys, values}; also the largest feature index.
local function read_libsvm(path)
  local rows, nf = {}, 0
  local f = assert(io.open(path, "r"))
  for line in f:lines() do
    local label, rest = line:match("^%s*(%S+)(.*)$")
    if label then
      local keys, vals = {}, {}
      for k, v in rest:gmatch("(%d+):(%S+)") do
        keys[#keys + 1] = math.tointeger(tonumber(k))
        vals[#vals + 1] = tonumber(v)
        if keys[#keys] > nf then nf = keys[#keys] end
      end
      rows[#rows + 1] = { eval.class(tonumber(label), path, #rows + 1), keys, vals }
    end
  end
  f:close()
  return rows, nf
end

local train, nf1 = read_libsvm(opts.train)
local test, nf2 = read_libsvm(opts.test)
local nf = math.max(nf1, nf2)
local w = {}
for k = 1, nf + 1 do w[k] = 0.0 end -- w[nf + 1] is the bias

local function score(r)
  local z = w[nf + 1]
  local keys, vals = r[2], r[3]
  for j = 1, #keys do z = z + w[keys[j]] * vals[j] end
  return 1 / (1 + math.exp(-z))
end

local lr, acc, auc = opts.lr, 0, 0
for epoch = 1, opts.epochs do
  local loss = 0.0
  for _, r in ipairs(train) do
    local p = score(r)
    local y = r[1]
    loss = loss - (y == 1 and math.log(math.max(p, 1e-15)) or math.log(math.max(1 - p, 1e-15)))
    local g = lr * (y - p)
    local keys, vals = r[2], r[3]
    for j = 1, #keys do
      local k = keys[j]
      w[k] = w[k] + g * vals[j] - lr * opts.reg * w[k]
    end
    if opts.bias then w[nf + 1] = w[nf + 1] + g end
  end
  local classes, scores = {}, {}
  for i, r in ipairs(test) do classes[i], scores[i] = r[1], score(r) end
  acc, auc = eval.evaluate(classes, scores)
  print(("%d\t%.6f\t%.4f\t%.4f"):format(epoch, loss / #train, acc, auc))
  lr = lr * opts.decay
end
print(("final accuracy %.4f auc %.4f"):format(acc, auc))
