-- orion.train on a scripted run (t/test_train.c): the validation metric
-- of each epoch comes from --vals, an epoch takes --secs seconds of a fake
-- clock, the "model" saved is the epoch's number and metric, and each
-- epoch prints its scheduled learning rate on stdout.
local orion = require "orion"
local cli = require "orion.cli"
local train = require "orion.train"

local spec = {
  name = "train_loop.lua",
  options = {
    { "vals", "LIST", "", "the validation metric of epochs 1, 2, ... (comma-separated)" },
    { "epochs", "N", 5, "epochs" },
    { "secs", "X", 10.0, "seconds an epoch takes (a fake clock)" },
    { "lr", "X", 0.5, "learning rate" },
    { "goal", "G", "min", "min or max" },
    { "save", "PATH", nil, "the final model" },
    { "first", "N", 1, "the first epoch (a resumed run's)" },
    { "resume", "BEST,EPOCH,BAD", nil, "the early-stopping state a checkpoint kept (run:state())" },
  },
}
local goal = "min"
for i, a in ipairs(arg) do
  if a == "--goal" then goal = arg[i + 1] end
end
train.options(spec, { metric = "val_loss", goal = goal, sgd = true })
local opts = cli.parse(arg, spec)
local vals = {}
for v in opts.vals:gmatch("[^,]+") do vals[#vals + 1] = tonumber(v) end
train.check(spec, opts, { metric_given = #vals > 0, metric_needs = "--vals" })

local now = 100.0
local function save(epoch)
  return function(path)
    local f = assert(io.open(path, "w"))
    f:write(("epoch %d val_loss %s\n"):format(epoch, tostring(vals[epoch])))
    f:close()
  end
end
local cur, resume = 0, nil
if opts.resume then
  local b, e, k = opts.resume:match("^([^,]+),(%d+),(%d+)$")
  resume = { best = tonumber(b), best_epoch = tonumber(e), bad = tonumber(k) }
end
local run = train.start(spec, opts, {
  done = opts.first - 1, resume = resume,
  total = opts.epochs, lr = opts.lr, show = { "loss", "val_loss" },
  save = function(path) save(cur)(path) end,
  model = opts.save, save_option = "--save",
  clock = function() return now end, wall = function() return 1700000000 + cur end,
})
local stopped
for epoch = opts.first, opts.epochs do
  cur = epoch
  now = now + opts.secs
  print(("lr %d %.17g"):format(epoch, run:lr(epoch) or opts.lr))
  local m = { epoch = epoch, loss = 1 / epoch, val_loss = vals[epoch], tier = "lua", ok = true }
  stopped = run:epoch(epoch, m)
  if stopped then break end
end
if opts.save then save(cur)(opts.save) end
print("summary: " .. run:finish())
