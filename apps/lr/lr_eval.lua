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
-- a class is absent), counted as the pairs (positive, negative) that the
-- scores order rightly, a tie counting half: each class's scores sorted
-- (plain numbers: no comparison function to call), then merged.  The
-- count is a whole number or a half, exact in a double, so the result is
-- the same as from the rank sum.
function M.evaluate(classes, scores)
  local n, right = #classes, 0
  local pos, neg = {}, {}
  for i = 1, n do
    local c, s = classes[i], scores[i]
    if (s >= 0.5 and 1 or 0) == c then right = right + 1 end
    if c == 1 then pos[#pos + 1] = s else neg[#neg + 1] = s end
  end
  local npos, nneg = #pos, #neg
  local auc = 0.5
  if npos > 0 and nneg > 0 then
    table.sort(pos)
    table.sort(neg)
    -- For each positive score: the negatives below it, and half of those
    -- equal to it.
    local u, below, j = 0.0, 0, 1
    local i = 1
    while i <= npos do
      local s = pos[i]
      while j <= nneg and neg[j] < s do j = j + 1 end
      below = j - 1
      local k = j
      while k <= nneg and neg[k] == s do k = k + 1 end
      local tied = k - j
      local i2 = i
      while i2 <= npos and pos[i2] == s do i2 = i2 + 1 end
      u = u + (i2 - i) * (below + tied / 2)
      i = i2
    end
    auc = u / (npos * nneg)
  end
  return right / math.max(n, 1), auc
end

return M
