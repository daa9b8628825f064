-- orion.nn's device copies never serve a stale value (t/gpu_nn.c on a
-- GPU, t/test_nndev.c on a fake one): a matrix changed on the host between
-- two device kernels, a device result changed on the host.  Called with
-- the nn table; returns nn.device().
local nn = ...
assert(nn.device(), 'nn.device() is nil in a state with a GPU')
local A = nn.from_table{{1, 2}, {3, 4}}
local I = nn.from_table{{1, 0}, {0, 1}}
local C = nn.matrix(2, 2)
nn.gemm(C, A, I)
assert(C:get(1, 1) == 1, 'first product: C[1][1] = ' .. C:get(1, 1))
A:set(1, 1, 10)                  -- a host write between two kernels
nn.gemm(C, A, I)
assert(C:get(1, 1) == 10, 'after A:set(1, 1, 10) the product saw ' ..
       C:get(1, 1) .. ': a stale device copy of A')
nn.scale(C, 2)                   -- on the device (C is there)
C:set(2, 2, -1)                  -- host write of a device result
assert(C:get(1, 2) == 4, 'C[1][2] after scale: ' .. C:get(1, 2))
nn.relu(C)
assert(C:get(2, 2) == 0, 'relu after C:set(2, 2, -1) saw ' ..
       C:get(2, 2))
C:set(1, 1, 100)                 -- then C is the input of beta C
nn.gemm(C, A, I, 1, 1)
assert(C:get(1, 1) == 110, 'A I + C after C:set(1, 1, 100): ' ..
       C:get(1, 1))
nn.fill(I, 3)                    -- I has a device copy
local D = I:copy()
assert(D:get(2, 1) == 3, 'copy of a device-filled matrix: ' ..
       D:get(2, 1))
return nn.device()
