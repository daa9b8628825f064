-- A small MLP trained with the loop of apps/dnn/dnn.lua on nn matrices
-- (t/gpu_nn.c and t/test_nndev.c run it in a CPU state and a GPU state
-- and compare): returns "LOSS ACCURACY".  The minibatch H0 (B x d floats,
-- 80 KB) is big enough to move to page-locked memory.  Called with the nn
-- table.
local nn = ...
local n, d, h, K, B, epochs = 1000, 200, 96, 5, 100, 3
local X, Y = nn.matrix(n, d), nn.matrix(n, 1)
local r = 12345
local function rnd()
  r = (r * 1103515245 + 12345) % 2147483648
  return r / 2147483648 * 2 - 1
end
for i = 1, n do
  local c = i % K + 1
  Y:set(i, 1, c)
  for j = 1, d do X:set(i, j, rnd() + (j % K + 1 == c and 1.5 or 0)) end
end
local W1, b1 = nn.matrix(d, h), nn.matrix(1, h)
local W2, b2 = nn.matrix(h, K), nn.matrix(1, K)
for i = 1, d do for j = 1, h do W1:set(i, j, rnd() * 0.3) end end
for i = 1, h do for j = 1, K do W2:set(i, j, rnd() * 0.3) end end
local V1, V2 = nn.matrix(d, h), nn.matrix(h, K)
local Vb1, Vb2 = nn.matrix(1, h), nn.matrix(1, K)
local Gb1, Gb2 = nn.matrix(1, h), nn.matrix(1, K)
local H0, Yb = nn.matrix(B, d), nn.matrix(B, 1)
local Z1, Z2 = nn.matrix(B, h), nn.matrix(B, K)
local D1, D2 = nn.matrix(B, h), nn.matrix(B, K)
local lr, mu, loss, seen = 0.05, 0.9, 0, 0
for _ = 1, epochs do
  loss, seen = 0, 0
  for t = 0, n // B - 1 do
    for i = 1, B do -- the minibatch, written on the host each step
      for j = 1, d do H0:set(i, j, X:get(t * B + i, j)) end
      Yb:set(i, 1, Y:get(t * B + i, 1))
    end
    nn.gemm(Z1, H0, W1); nn.add_bias(Z1, b1); nn.relu(Z1)
    nn.gemm(Z2, Z1, W2); nn.add_bias(Z2, b2)
    local ls = nn.softmax_xent(Z2, Yb, D2)
    loss, seen = loss + ls, seen + B
    nn.gemm(V2, Z1, D2, -lr / B, mu, true, false); nn.colsum(Gb2, D2, 1 / B)
    nn.gemm(D1, D2, W2, 1, 0, false, true); nn.relu_backward(D1, Z1)
    nn.gemm(V1, H0, D1, -lr / B, mu, true, false); nn.colsum(Gb1, D1, 1 / B)
    nn.axpy(W1, 1, V1); nn.axpy(W2, 1, V2)
    nn.momentum(b1, Vb1, Gb1, lr, mu); nn.momentum(b2, Vb2, Gb2, lr, mu)
  end
end
local Zt1, Zt2 = nn.matrix(n, h), nn.matrix(n, K)
nn.gemm(Zt1, X, W1); nn.add_bias(Zt1, b1); nn.relu(Zt1)
nn.gemm(Zt2, Zt1, W2); nn.add_bias(Zt2, b2)
local _, correct = nn.softmax_xent(Zt2, Y)
return string.format("%.9f %.9f", loss / seen, correct / n)
