-- lr.lua's classes and held-out report: how libsvm labels become classes,
-- the probabilities of each class from a test row's scores, the
-- confusion matrix with per-class precision, recall and F1, and the
-- --predict file (liblinear's `predict -b 1` layout).

local M = {}

-- A label as liblinear prints it: an integer without a fraction.
function M.label_text(v)
  local i = math.tointeger(v)
  if i then return tostring(i) end
  return ("%.17g"):format(v)
end

-- The classes of the training labels (a list, one per row) and of the
-- test labels.  When every label of both files is 1, 0 or -1, the data is
-- binary in lr.lua's old convention: class 1 is label 1, class 2 is 0 and
-- -1 together (shown as the training file's negative label).  Otherwise
-- the classes are the distinct training labels in the order they first
-- appear (liblinear's order).  Returns the list of class labels, and a
-- function mapping a label of FILE's row ROW to its class, raising an
-- error naming the file and row for a label that is not finite, not an
-- integer, or (test) not among the training labels.
function M.classes(train_labels, test_labels, train_file)
  local binary = true
  for _, t in ipairs { train_labels, test_labels } do
    for _, v in ipairs(t) do
      if v ~= 1 and v ~= 0 and v ~= -1 then binary = false break end
    end
  end
  local list, index = {}, {}
  if binary then
    local neg = 0
    for _, v in ipairs(train_labels) do
      if v ~= 1 then neg = v break end
    end
    list = { 1, neg }
    index = { [1] = 1, [0] = 2, [-1] = 2 }
  end
  local function class_of(v, file, row)
    if v ~= v or v == math.huge or v == -math.huge then
      error(("%s: row %d: label %s is not a number"):format(file, row, tostring(v)), 0)
    end
    local i = math.tointeger(v)
    if not i then
      error(("%s: row %d: label %s is not a class (an integer)"):format(file, row, tostring(v)), 0)
    end
    local c = index[i]
    if c then return c end
    if file ~= train_file then
      local names = {}
      for k, l in ipairs(list) do names[k] = M.label_text(l) end
      error(("%s: row %d: label %d is not one of the training labels (%s)")
        :format(file, row, i, table.concat(names, " ")), 0)
    end
    list[#list + 1] = i
    index[i] = #list
    return #list
  end
  for row, v in ipairs(train_labels) do class_of(v, train_file, row) end
  return list, class_of
end

-- The probability of each class (a list of n) from one row's scores z
-- (K of them; K is 1 for a binary model, whose one score is class 1's):
-- softmax for "softmax"; for one-vs-rest each class's sigmoid, scaled
-- to sum to 1 as liblinear's -b 1 does.  Returns the probabilities and
-- the most likely class (the first on ties).
function M.probabilities(z, n, multi)
  local p = {}
  if #z == 1 then
    local q = 1 / (1 + math.exp(-z[1]))
    p[1], p[2] = q, 1 - q
  elseif multi == "softmax" then
    local m = -math.huge
    for c = 1, n do if z[c] > m then m = z[c] end end
    local s = 0
    for c = 1, n do p[c] = math.exp(z[c] - m); s = s + p[c] end
    for c = 1, n do p[c] = p[c] / s end
  else
    local s = 0
    for c = 1, n do p[c] = 1 / (1 + math.exp(-z[c])); s = s + p[c] end
    for c = 1, n do p[c] = p[c] / s end
  end
  local best = 1
  for c = 2, n do if p[c] > p[best] then best = c end end
  return p, best
end

-- The confusion matrix of true classes against predicted ones (lists of
-- class numbers 1..n): cm[t][p] counts the rows of class t predicted p.
function M.confusion(truth, pred, n)
  local cm = {}
  for t = 1, n do
    cm[t] = {}
    for p = 1, n do cm[t][p] = 0 end
  end
  for i = 1, #truth do cm[truth[i]][pred[i]] = cm[truth[i]][pred[i]] + 1 end
  return cm
end

-- Writes the per-class table (label, precision, recall, F1, support) and
-- the confusion matrix to out (a file handle).  A ratio with a zero
-- denominator is 0, as scikit-learn reports it.
function M.write_report(out, cm, labels)
  local n = #labels
  local function ratio(a, b) return b > 0 and a / b or 0 end
  out:write(("%-8s %9s %9s %9s %8s\n"):format("label", "precision", "recall", "f1", "support"))
  for c = 1, n do
    local tp, predicted, support = cm[c][c], 0, 0
    for k = 1, n do
      predicted = predicted + cm[k][c]
      support = support + cm[c][k]
    end
    local prec, rec = ratio(tp, predicted), ratio(tp, support)
    local f1 = ratio(2 * prec * rec, prec + rec)
    out:write(("%-8s %9.4f %9.4f %9.4f %8d\n"):format(M.label_text(labels[c]), prec, rec, f1, support))
  end
  out:write("confusion matrix (rows: true label, columns: predicted label)\n")
  local w = 6
  for c = 1, n do
    for k = 1, n do w = math.max(w, #tostring(cm[c][k]) + 1) end
    w = math.max(w, #M.label_text(labels[c]) + 1)
  end
  local line = { ("%-8s"):format("") }
  for c = 1, n do line[#line + 1] = ("%" .. w .. "s"):format(M.label_text(labels[c])) end
  out:write(table.concat(line), "\n")
  for t = 1, n do
    line = { ("%-8s"):format(M.label_text(labels[t])) }
    for p = 1, n do line[#line + 1] = ("%" .. w .. "d"):format(cm[t][p]) end
    out:write(table.concat(line), "\n")
  end
end

-- The --predict file: a header "labels L1 L2 ..." and, per test row, the
-- predicted label and each class's probability in the header's order.
function M.write_predictions(path, labels, preds, probs)
  local f, err = io.open(path, "w")
  if not f then error(("--predict %s: %s"):format(path, err), 0) end
  local head = { "labels" }
  for c, l in ipairs(labels) do head[c + 1] = M.label_text(l) end
  f:write(table.concat(head, " "), "\n")
  for i = 1, #preds do
    local line = { M.label_text(labels[preds[i]]) }
    for c, q in ipairs(probs[i]) do line[c + 1] = ("%.6g"):format(q) end
    f:write(table.concat(line, " "), "\n")
  end
  assert(f:close())
end

return M
