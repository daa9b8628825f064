-- Shared by lr.lua and its serial reference lr_serial.lua (plain Lua, no
-- orion): the label conventions and the held-out metrics.
--
-- A libsvm label is 1/0 or +1/-1; both map to 1 (positive) and 0.  Any
-- other label is an error naming the file and the row.

local M = {}

-- The 0/1 class of a libsvm label.
function M.class(label, file, row)
  if label == 1 then return 1 end
  if label == 0 or label == -1 then return 0 end
  error(("%s: row %d: label %s is neither 0/1 nor -1/+1"):format(file, row, tostring(label)), 0)
end

-- Accuracy and AUC of scores (probabilities of class 1) against 0/1
-- classes: accuracy counts score >= 0.5 as class 1; AUC is the
-- Mann-Whitney statistic with tied scores given their mean rank (0.5 when
-- a class is absent).
function M.evaluate(classes, scores)
  local n, right, npos = #classes, 0, 0
  local order = {}
  for i = 1, n do
    order[i] = i
    local c = classes[i]
    if (scores[i] >= 0.5 and 1 or 0) == c then right = right + 1 end
    npos = npos + c
  end
  table.sort(order, function(a, b)
    if scores[a] ~= scores[b] then return scores[a] < scores[b] end
    return a < b
  end)
  local ranksum, i = 0.0, 1
  while i <= n do
    local j = i
    while j < n and scores[order[j + 1]] == scores[order[i]] do j = j + 1 end
    local rank = (i + j) / 2
    for t = i, j do
      if classes[order[t]] == 1 then ranksum = ranksum + rank end
    end
    i = j + 1
  end
  local nneg = n - npos
  local auc = 0.5
  if npos > 0 and nneg > 0 then
    auc = (ranksum - npos * (npos + 1) / 2) / (npos * nneg)
  end
  return right / math.max(n, 1), auc
end

return M
