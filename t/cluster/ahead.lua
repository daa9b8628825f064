-- Dispatch ahead along time parts (scheduler/loop.h): a 2-D SGD loop
-- whose H rows rotate executor to executor.  stdout is the exact bits of
-- each epoch's RMSE and of the final W and H (the same on any executor
-- count, ahead or not); stderr says per epoch how the blocks went out and
-- how the parts' rows moved ("dispatch EPOCH ahead A blocks_ahead N
-- pushed P pulled Q"), and how many blocks an executor started before one
-- that came earlier ("order EPOCH reorder R ran_out_of_order M"), for
-- t/test_cluster.c.
-- With arg[1] == "fail", the body raises in epoch 2 in block (6, 4) (of 8 x
-- 8), whose time part's next block, (5, 4), goes ahead to another executor
-- (on 4) and waits there for rows that never come: the loop must end with
-- the body's error, not after that executor's wait for rows times out.
local orion = require "orion"

local fail = arg[1] == "fail" and 2 or 0
local train = orion.synthetic_ratings { users = 400, items = 320, ratings = 12000, seed = 11 }
local nu, ni = train:dims()
local K = 8
local W = orion.randn { nu, K, scale = 0.1, seed = 3 }
local H = orion.randn { ni, K, scale = 0.1, seed = 4 }
local sse = orion.accumulator("sum", 0.0)
local lr, reg = 0.02, 0.05

local function bits(x) return ("%a"):format(x) end
local function checksum(A)
  local s, n = 0.0, 0
  for _, row in ipairs(A:to_table()) do
    for _, v in ipairs(row) do
      n = n + 1
      s = s + v * (1 + (n % 7) * 1e-3)
    end
  end
  return bits(s)
end

for epoch = 1, 3 do
  sse:reset()
  local st = orion.parallel_for(train, function(u, i, r)
    if epoch == fail and u > 300 and u <= 350 and i > 160 and i <= 200 then
      error("boom in epoch 2")
    end
    local wu, hi = W[u], H[i]
    local e = r
    for k = 1, K do e = e - wu[k] * hi[k] end
    sse:add(e * e)
    for k = 1, K do
      local w, h = wu[k], hi[k]
      wu[k] = w + lr * (e * h - reg * w)
      hi[k] = h + lr * (e * w - reg * h)
    end
  end)
  print("epoch", epoch, "rmse", bits(math.sqrt(sse:get() / train:nnz())),
    st.schedule)
  io.stderr:write(("dispatch %d ahead %s blocks_ahead %d pushed %d pulled %d\n")
    :format(epoch, tostring(st.ahead), st.blocks_ahead, st.parts_pushed,
      st.parts_pulled))
  io.stderr:write(("order %d reorder %s ran_out_of_order %d\n")
    :format(epoch, tostring(st.reorder), st.ran_out_of_order))
end
print("final W", checksum(W), "H", checksum(H))
