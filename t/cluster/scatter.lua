-- The scattered adds of t/cluster/ryw.lua and clock.lua: element i adds j
-- to T[(37 i + 101 j) mod M + 1] for j = 1..64.  check(T, n, M, what)
-- fails with `what` unless T holds exactly the serial totals of elements
-- 1..n (a lost or twice-applied update changes one).
local function check(T, n, M, what)
  local want = {}
  for k = 1, M do want[k] = 0 end
  for i = 1, n do
    for j = 1, 64 do
      local k = (i * 37 + j * 101) % M + 1
      want[k] = want[k] + j
    end
  end
  for k = 1, M do
    if T:get(k) ~= want[k] then
      error(("%sT[%d] is %d, want %d"):format(what, k, T:get(k), want[k]))
    end
  end
end
return check
