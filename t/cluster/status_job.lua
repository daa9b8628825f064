-- The job page's test job: orion-driver --status 0 status_job.lua DIR
-- runs 3 loops of 64 elements on the cluster and records a metric and
-- reports its progress (orion.progress) after each (the last with a line of its own, as orion.train's).  In the second loop, element 1 waits (at most 60 s) until DIR/go
-- exists, so a test can look at a loop while it runs; after the loops,
-- "loops done" is printed and the driver waits (at most 60 s) until
-- DIR/stop exists, so a test can look at the page between loops.
local orion = require "orion"

local dir = arg[1]
local N = 64
local X = orion.array { N, init = "rand", seed = 3 }
local Y = orion.zeros { N }

local function wait_for(path)
  local t0 = os.time()
  while os.time() - t0 < 60 do
    local f = io.open(path)
    if f then
      f:close()
      return
    end
    os.execute("sleep 0.05")
  end
end

orion.progress(0, 3)
for epoch = 1, 3 do
  local go = epoch == 2 and dir .. "/go" or nil
  local st = orion.parallel_for(X, function(i, x)
    if go and i == 1 then
      wait_for(go)
    end
    Y[i] = x * epoch
  end)
  orion.record { epoch = epoch, loss = 1 / epoch, blocks = st.blocks }
  print(("epoch %d: %d blocks, %d bytes moved"):format(epoch, st.blocks,
                                                      st.bytes_moved))
  orion.progress(epoch, 3, "epoch", epoch == 3 and "epoch 3/3  loss 0.3333  done in 1s" or nil)
end
print("loops done")
io.stdout:flush()
wait_for(dir .. "/stop")
