-- orion-driver --verify: loops whose plans are right, and one made wrong.
-- usage: orion-driver [--verify] verify.lua rotation|oned|ordered|buffered|wrong
-- rotation: a 2-D rotation updating rows of W and H (matrix
-- factorization's shape); oned: a 1-D loop; ordered: a wavefront over a
-- recurrence; buffered: writes through an orion.buffer.  wrong runs with
-- ORION_TEST_PLAN_NODEP=C: the analysis forgets C's dependences, so its
-- plan lets blocks that update one element of C run concurrently.
local orion = require "orion"
local which = arg[1]

local function digest(A, n, m)
  local s = 0
  for i = 1, n do
    if m then
      for j = 1, m do s = s + A:get(i, j) * (i + 0.5 * j) end
    else
      s = s + A:get(i) * i
    end
  end
  return string.format("%.17g", s)
end

if which == "rotation" then
  local R = orion.zeros{12, 10}
  for i = 1, 12 do for j = 1, 10 do R:set(i, j, (i * 7 + j * 3) % 5) end end
  local W = orion.zeros{12, 3}
  local H = orion.zeros{10, 3}
  for i = 1, 12 do for k = 1, 3 do W:set(i, k, 1) end end
  for j = 1, 10 do for k = 1, 3 do H:set(j, k, 1) end end
  for _ = 1, 2 do
    orion.parallel_for(R, function(i, j, v)
      for k = 1, 3 do
        local e = v - W[i][k] * H[j][k]
        W[i][k] = W[i][k] + 0.01 * e * H[j][k]
        H[j][k] = H[j][k] + 0.01 * e * W[i][k]
      end
    end, { partitions = {4} })
  end
  print(digest(W, 12, 3), digest(H, 10, 3))
elseif which == "oned" then
  local A = orion.array{20}
  local X = orion.zeros{20}
  local Y = orion.zeros{20}
  for i = 1, 20 do Y:set(i, i * i) end
  orion.parallel_for(A, function(i, v)
    X[i] = Y[i] * 0.5 + Y[21 - i]
  end, { partitions = {4} })
  print(digest(X, 20))
elseif which == "ordered" then
  local A = orion.array{9, 8}
  local D = orion.zeros{9, 8}
  orion.parallel_for(A, function(i, j, v)
    local up = i > 1 and D[i - 1][j] or 1
    local left = j > 1 and D[i][j - 1] or 1
    D[i][j] = (up + left) % 1000 + 0.25
  end, { ordered = true, partitions = {3} })
  print(digest(D, 9, 8))
elseif which == "buffered" then
  local A = orion.array{30}
  local C = orion.zeros{4}
  local Cb = orion.buffer(C, { apply = "add" })
  orion.parallel_for(A, function(i, v)
    Cb[i % 4 + 1] = i * 0.5
  end, { partitions = {4} })
  print(digest(C, 4))
elseif which == "wrong" then
  local A = orion.array{16}
  local C = orion.zeros{3}
  orion.parallel_for(A, function(i, v)
    local c = C[i % 3 + 1] -- @wrong_read
    C[i % 3 + 1] = c + i -- @wrong_write
  end, { partitions = {4} })
  print(digest(C, 3))
elseif which == "wrong_order" then
  -- With ORION_TEST_PLAN_NODEP=E: D's recurrence makes the loop a
  -- wavefront; E[i + 1][j - 1], read before (i + 1, j - 1) writes it in
  -- key order, is forgotten, and the wavefront runs the write first when
  -- the two elements fall in one space part but different time parts.
  local A = orion.array{8, 8}
  local D = orion.zeros{8, 8}
  local E = orion.zeros{9, 8}
  orion.parallel_for(A, function(i, j, v)
    local up = i > 1 and D[i - 1][j] or 1
    local left = j > 1 and D[i][j - 1] or 1
    D[i][j] = (up + left) % 1000
    local e = j > 1 and E[i + 1][j - 1] or 0 -- @order_read
    E[i][j] = e + 1 -- @order_write
  end, { ordered = true, partitions = {2} })
  print(digest(E, 9, 8))
end
