-- orion.train: the training loop a user expects, shared by the apps
-- (docs/training.md): a progress line per epoch with an ETA, early
-- stopping on a validation metric and keeping the best model, learning-
-- rate schedules, TensorBoard event files and a summary line at the end.
--
--   local train = require "orion.train"
--   train.options(spec, { metric = "test_rmse", goal = "min", sgd = true })
--   local opts = cli.parse(arg, spec)
--   train.check(spec, opts, { metric_given = test ~= nil, save_kind = "prefix" })
--   local run = train.start(spec, opts, {
--     total = opts.epochs, done = first_epoch - 1, lr = opts.lr,
--     show = { "train_rmse", "test_rmse" },
--     save = function(path) ... end,          -- writes the model to path
--     model = opts.save and opts.save .. ".*" })
--   for epoch = first_epoch, opts.epochs do
--     lr = run:lr(epoch) or lr               -- nil without --lr-schedule
--     ...                                    -- train, evaluate
--     if run:epoch(epoch, metrics) then break end -- true: stop early
--   end
--   run:finish()
--
-- Lines go to stderr, none under --quiet: the progress line goes through
-- orion.progress (its 4th argument), which draws it in place on a
-- terminal and prints one line per epoch elsewhere, and the job page
-- shows the same line.

local orion = require "orion"
local cli = require "orion.cli"

local train = {}

-- Default factors of the step and exp schedules.
local GAMMA = { step = 0.1, exp = 0.9 }

-- The options an app adds to its spec.  cfg.metric names the validation
-- metric (a key of the table run:epoch gets) and cfg.goal "min" or "max";
-- cfg.sgd adds the learning-rate schedule; cfg.unit is "epoch" (default)
-- or "iteration"; cfg.patience_units what --early-stop counts (default:
-- the units); cfg.save_help says what --save-best writes.
function train.options(spec, cfg)
  local unit = cfg.unit or "epoch"
  local o = spec.options
  local better = cfg.goal == "max" and "risen" or "fallen"
  cfg.patience_units = cfg.patience_units or unit .. "s"
  o[#o + 1] = { "early-stop", "PATIENCE", 0,
    ("stop when %s has not %s for PATIENCE %s in a row (0: never)"):format(cfg.metric, better, cfg.patience_units) }
  o[#o + 1] = { "save-best", "PATH", nil,
    ("write the model of the best %s by %s to PATH%s, each time it improves"):format(
      unit, cfg.metric, cfg.save_help and (" (" .. cfg.save_help .. ")") or "") }
  if cfg.sgd then
    o[#o + 1] = { "lr-schedule", "S", nil,
      "learning rate by epoch: step (times --lr-gamma every --lr-step epochs), exp (times --lr-gamma each epoch) " ..
      "or cosine (from --lr down to --lr-min over the epochs)" .. (cfg.sgd_default and ("; default: " .. cfg.sgd_default) or ""),
      type = "string" }
    o[#o + 1] = { "lr-step", "N", 10, "step schedule: epochs between two drops" }
    o[#o + 1] = { "lr-gamma", "X", nil, "step and exp schedules: the factor (default: 0.1 step, 0.9 exp)", type = "number" }
    o[#o + 1] = { "lr-min", "X", 0.0, "cosine schedule: the learning rate it ends near" }
  end
  o[#o + 1] = { "tensorboard", "DIR", nil, "also write the metrics as a TensorBoard event file into DIR (made when absent)" }
  spec.train = cfg
end

-- Checks the options train.options added, before any work: bad values
-- and outputs that cannot be written are usage errors (exit 2).
-- cfg.metric_given: whether the run measures the validation metric (a
-- --save-best or --early-stop without it is an error naming what is
-- missing, cfg.metric_needs); cfg.save_kind: --save-best's output kind
-- for cli.check_output ("file", "prefix").
function train.check(spec, opts, cfg)
  local tc = spec.train
  if opts.early_stop < 0 then cli.fail(spec, "--early-stop must not be negative") end
  if not cfg.metric_given and (opts.early_stop > 0 or opts.save_best) then
    cli.fail(spec, ("%s needs a validation metric (%s)%s"):format(
      opts.save_best and "--save-best" or "--early-stop", tc.metric,
      cfg.metric_needs and (", measured with " .. cfg.metric_needs) or ""))
  end
  if tc.sgd then
    local s = opts.lr_schedule
    if s ~= nil and s ~= "step" and s ~= "exp" and s ~= "cosine" then
      cli.fail(spec, ("--lr-schedule must be step, exp or cosine, not '%s'"):format(s))
    end
    if opts.lr_step < 1 then cli.fail(spec, "--lr-step must be at least 1") end
    if opts.lr_gamma ~= nil and not (opts.lr_gamma > 0 and opts.lr_gamma <= 1) then
      cli.fail(spec, "--lr-gamma must be in (0, 1]")
    end
    if not (opts.lr_min >= 0) then cli.fail(spec, "--lr-min must not be negative") end
    if s == nil and (opts.lr_gamma ~= nil or opts.lr_step ~= 10 or opts.lr_min ~= 0) then
      cli.fail(spec, "--lr-step, --lr-gamma and --lr-min need --lr-schedule")
    end
  end
  cli.check_output(spec, opts.save_best, "--save-best", cfg.save_kind or "file")
  cli.check_output(spec, opts.tensorboard, "--tensorboard", "folder")
end

-- A duration as orion.progress writes it: "4.6s", "42s", "3m05s", "2h07m".
function train.duration(s)
  local t = math.floor(s + 0.5)
  if s < 10 then return ("%.1fs"):format(s) end
  if t < 60 then return ("%ds"):format(t) end
  if t < 3600 then return ("%dm%02ds"):format(t // 60, t % 60) end
  return ("%dh%02dm"):format(t // 3600, t % 3600 // 60)
end

-- The learning rate of epoch e (1, 2, ...) of `epochs` under schedule s
-- from lr0 (docs/training.md):
--   step    lr0 * gamma ^ floor((e - 1) / step)
--   exp     lr0 * gamma ^ (e - 1)
--   cosine  lr_min + (lr0 - lr_min) * (1 + cos(pi * (e - 1) / epochs)) / 2
function train.schedule(s, lr0, e, p)
  if s == "step" then return lr0 * (p.gamma or GAMMA.step) ^ ((e - 1) // p.step) end
  if s == "exp" then return lr0 * (p.gamma or GAMMA.exp) ^ (e - 1) end
  if s == "cosine" then
    local lo = p.min or 0.0
    return lo + (lr0 - lo) * (1 + math.cos(math.pi * (e - 1) / math.max(p.epochs, 1))) / 2
  end
  error(("unknown learning-rate schedule '%s'"):format(tostring(s)), 2)
end

-- A metric's value in the progress line.
local function value_text(v)
  if math.type(v) == "integer" then return tostring(v) end
  local a = math.abs(v)
  if v ~= v or a == math.huge then return tostring(v) end
  if a ~= 0 and (a < 1e-3 or a >= 1e6) then return ("%.4g"):format(v) end
  return ("%.4f"):format(v)
end

-- ---- TensorBoard ---------------------------------------------------------
-- An event file is a TFRecord (orion.tfrecord frames each record) of Event
-- protobufs: wall_time (1, double), step (2, int64), file_version (3,
-- string) or summary (5) holding values (1) of tag (1, string) and
-- simple_value (2, float).

local function varint(n)
  local out = {}
  repeat
    local b = n & 0x7f
    n = n >> 7 -- logical shift: a negative step takes ten bytes, as int64
    out[#out + 1] = string.char(n ~= 0 and (b | 0x80) or b)
  until n == 0
  return table.concat(out)
end

local function bytes_field(field, s)
  return varint(field << 3 | 2) .. varint(#s) .. s
end

-- One Event: the first file_version, or a summary of scalars {tag, value}.
function train.event(wall_time, step, scalars, file_version)
  local parts = { varint(1 << 3 | 1), string.pack("<d", wall_time) }
  if step ~= 0 then parts[#parts + 1] = varint(2 << 3 | 0) .. varint(step) end
  if file_version then parts[#parts + 1] = bytes_field(3, file_version) end
  if scalars then
    local values = {}
    for _, s in ipairs(scalars) do
      values[#values + 1] = bytes_field(1, bytes_field(1, s[1]) ..
        varint(2 << 3 | 5) .. string.pack("<f", s[2]))
    end
    parts[#parts + 1] = bytes_field(5, table.concat(values))
  end
  return table.concat(parts)
end

local Board = {}
Board.__index = Board

local function open_board(dir, now)
  local path = orion.tfevents_file(dir)
  local f = assert(io.open(path, "wb"))
  local b = setmetatable({ path = path, f = f }, Board)
  b:write(train.event(now, 0, nil, "brain.Event:2"))
  return b
end

function Board:write(event)
  local ok, err = self.f:write(orion.tfrecord(event))
  if ok then ok, err = self.f:flush() end
  if not ok then error(("--tensorboard %s: %s"):format(self.path, err), 0) end
end

-- The numeric values of metrics (booleans and strings left out), by name.
function Board:scalars(wall_time, step, metrics)
  local list = {}
  for k, v in pairs(metrics) do
    if type(k) == "string" and type(v) == "number" then list[#list + 1] = { k, v } end
  end
  table.sort(list, function(a, b) return a[1] < b[1] end)
  if #list > 0 then self:write(train.event(wall_time, step, list)) end
end

-- ---- the run -------------------------------------------------------------

local Run = {}
Run.__index = Run

-- Starts a run (after train.check).  cfg: total (units in all), done
-- (units done before, a resumed run's; default 0), lr (--lr, for the
-- schedule), show (the metrics in the progress line, in order), save
-- (function(path) writing the model, for --save-best), model (where the
-- final model goes, for the summary, or nil), save_option (the option
-- that saves it, named when it is absent), resume (run:state() of a
-- checkpoint), clock (default orion.clock), wall (default os.time), and
-- metric and goal where the app's validation metric depends on its
-- options (mf.lua's --loss; default: train.options' cfg).
function train.start(spec, opts, cfg)
  local tc = spec.train
  local r = setmetatable({
    name = spec.name, unit = tc.unit or "epoch", metric = cfg.metric or tc.metric,
    patience_units = tc.patience_units,
    goal = cfg.goal or tc.goal or "min", total = cfg.total, done0 = cfg.done or 0,
    show = cfg.show or {}, save = cfg.save, model = cfg.model,
    save_option = cfg.save_option, patience = opts.early_stop,
    save_best = opts.save_best, clock = cfg.clock or orion.clock,
    wall = cfg.wall or os.time, quiet = orion.quiet(), bad = 0, epochs = 0 }, Run)
  if tc.sgd and opts.lr_schedule then
    r.schedule = { name = opts.lr_schedule, lr0 = cfg.lr, gamma = opts.lr_gamma,
                   step = opts.lr_step, min = opts.lr_min, epochs = cfg.total }
  end
  if cfg.resume then
    r.best, r.best_epoch, r.bad = cfg.resume.best, cfg.resume.best_epoch, cfg.resume.bad or 0
  end
  r.t0 = r.clock()
  if opts.tensorboard then
    local ok, b = pcall(open_board, opts.tensorboard, r.wall())
    if not ok then cli.fail(spec, "--tensorboard: " .. tostring(b)) end
    r.board = b
  end
  orion.progress(math.min(r.done0, r.total), r.total, r.unit) -- the ETA's start
  if orion.progress_in_place() then
    -- What the script prints starts on a clean line: the progress line
    -- drawn in place is erased first (and drawn again after the next
    -- unit, or when a loop's own progress line ends).
    local base, clear = print, orion.progress_clear
    r.print = base
    print = function(...) clear(); return base(...) end
  end
  return r
end

-- The learning rate of epoch e under --lr-schedule, or nil without one.
function Run:lr(e)
  local s = self.schedule
  if not s then return nil end
  return train.schedule(s.name, s.lr0, e, s)
end

-- What a checkpoint keeps of the run (its state), for cfg.resume.
function Run:state()
  return { best = self.best, best_epoch = self.best_epoch, bad = self.bad }
end

-- The progress line after unit e: "epoch 7/50  loss 0.2500  ETA 2m10s".
function Run:line(e, metrics, final)
  local parts = { ("%s %d/%d"):format(self.unit, e, self.total) }
  for _, k in ipairs(self.show) do
    local v = metrics[k]
    if type(v) == "number" then parts[#parts + 1] = k .. " " .. value_text(v) end
  end
  local took = self.clock() - self.t0
  if final then
    parts[#parts + 1] = "done in " .. train.duration(took)
  else
    local n = e - self.done0
    parts[#parts + 1] = "ETA " .. (n > 0 and train.duration(took / n * (self.total - e)) or "?")
  end
  return table.concat(parts, "  ")
end

-- Unit e ended with these metrics (the app's record: numbers go to the
-- TensorBoard file).  Keeps the best model, shows the progress line, and
-- returns true when the run should stop early.
function Run:epoch(e, metrics)
  self.epochs, self.last = self.epochs + 1, e
  if self.board then
    local m = metrics
    if self.schedule and metrics.lr == nil then -- the scheduled rate too
      m = { lr = self:lr(e) }
      for k, v in pairs(metrics) do m[k] = v end
    end
    self.board:scalars(self.wall(), e, m)
  end
  local v = metrics[self.metric]
  if type(v) == "number" then
    if self.best == nil or (self.goal == "min" and v < self.best) or (self.goal == "max" and v > self.best) then
      self.best, self.best_epoch, self.bad = v, e, 0
      if self.save_best then
        self.save(self.save_best)
        self.best_saved = e
      end
    else
      self.bad = self.bad + 1
    end
  end
  self.stopped = self.patience > 0 and self.bad >= self.patience and e < self.total
  local line = self:line(e, metrics, self.stopped or e >= self.total)
  -- orion.progress takes 159 bytes: a longer line (many metrics shown)
  -- ends in "..." rather than being cut without a sign.
  if #line > 159 then line = line:sub(1, 156) .. "..." end
  orion.progress(e, self.total, self.unit, line) -- stderr, the page
  return self.stopped
end

-- The summary line: how many units in what time, the best metric and its
-- unit, where the model went.
function Run:summary()
  local took = train.duration(self.clock() - self.t0)
  local parts = {}
  if self.stopped then
    parts[1] = ("stopped early at %s %d of %d (%s not better for %d %s) after %s"):format(
      self.unit, self.last, self.total, self.metric, self.bad, self.patience_units, took)
  else
    parts[1] = ("%d %s%s in %s"):format(self.epochs, self.unit, self.epochs == 1 and "" or "s", took)
  end
  if self.best ~= nil then
    parts[#parts + 1] = ("best %s %s at %s %d"):format(self.metric, value_text(self.best), self.unit, self.best_epoch)
  else
    parts[#parts + 1] = ("no %s measured"):format(self.metric)
  end
  if self.model then
    parts[#parts + 1] = "model saved to " .. self.model
  elseif self.save_option then
    parts[#parts + 1] = ("model not saved (%s PATH keeps it)"):format(self.save_option)
  end
  if self.best_saved then
    parts[#parts + 1] = ("best model (%s %d) in %s"):format(self.unit, self.best_saved, self.save_best)
  end
  if self.board then parts[#parts + 1] = "TensorBoard events in " .. self.board.path end
  return self.name .. ": " .. table.concat(parts, "; ")
end

-- Ends the run: the progress line stays, the summary line follows it (on
-- stderr, not under --quiet), the event file is closed.  Returns the
-- summary line.
function Run:finish()
  if self.print then
    print = self.print
    self.print = nil
  end
  local s = self:summary()
  orion.progress_clear(true) -- the last progress line stays
  if not self.quiet then
    io.stderr:write(s, "\n")
    io.stderr:flush()
  end
  if self.board then
    self.board.f:close()
  end
  return s
end

return train
