-- orion.nn on the driver: results of the kernels and the messages of
-- misuse.  Prints "name: value" lines that t/test_dnn.c checks.
local orion = require "orion"
local nn = orion.nn

local function show(name, v) print(name .. ": " .. tostring(v)) end
local function err(name, f, ...)
  local ok, e = pcall(f, ...)
  show(name, ok and "no error" or e)
end

local A = nn.from_table { { 1, 2, 3 }, { 4, 5, 6 } }       -- 2x3
local Bm = nn.from_table({ 1, 0, 0, 1, 1, 1 }, 3, 2)      -- 3x2
local C = nn.matrix(2, 2)
nn.gemm(C, A, Bm)
show("gemm", table.concat({ C:get(1, 1), C:get(1, 2), C:get(2, 1), C:get(2, 2) }, " "))
local Ct = nn.matrix(3, 3)
nn.gemm(Ct, A, A, 1, 0, true, false)                       -- A^T A
show("gemm_tn", Ct:get(1, 1) .. " " .. Ct:get(3, 3))
nn.gemm(C, A, Bm, 2, 1)                                    -- C = 2 AB + C
show("gemm_ab", C:get(2, 2))
err("gemm_inner", nn.gemm, C, A, A)
err("gemm_out", nn.gemm, nn.matrix(3, 2), A, Bm)
err("gemm_type", nn.gemm, C, {}, Bm)

local Z = nn.from_table { { 1, 2, 3 }, { 3, 2, 1 } }
local Y = nn.from_table { { 3 }, { 2 } }
local dZ = nn.matrix(2, 3)
local loss, correct = nn.softmax_xent(Z, Y, dZ)
show("xent", ("%.6f %d"):format(loss, correct))
show("xent_grad_row_sum", ("%.6f"):format(dZ:sum()))
err("xent_label", nn.softmax_xent, Z, nn.from_table { { 4 }, { 1 } })
err("xent_count", nn.softmax_xent, Z, nn.from_table { { 1 } })
show("argmax", nn.argmax(Z):get(2, 1))

local H = nn.from_table { { -1, 2 }, { 3, -4 } }
nn.relu(H)
local dH = nn.matrix(2, 2, 1)
nn.relu_backward(dH, H)
show("relu", table.concat({ H:get(1, 1), H:get(1, 2), dH:get(1, 1), dH:get(2, 1) }, " "))
err("relu_shape", nn.relu_backward, nn.matrix(1, 2), H)
local bias = nn.from_table { { 10, 20 } }
nn.add_bias(H, bias)
show("bias", H:get(2, 2))
err("bias_shape", nn.add_bias, H, nn.matrix(1, 3))
local Hr = nn.from_table { { -1, 2 }, { 3, -4 } }
nn.add_bias(Hr, nn.from_table { { -2, 1 } }, "relu")       -- max(H + b, 0)
show("bias_relu", table.concat({ Hr:get(1, 1), Hr:get(1, 2), Hr:get(2, 1), Hr:get(2, 2) }, " "))
err("bias_act", nn.add_bias, Hr, bias, "tanh")
local Wa, Va = nn.from_table { { 1, 2 } }, nn.from_table { { 0.5, -4 } }
nn.add_scale(Wa, Va, 0.5)                                  -- W + V, then 0.5 V
show("add_scale", table.concat({ Wa:get(1, 1), Wa:get(1, 2), Va:get(1, 1), Va:get(1, 2) }, " "))
err("add_scale_shape", nn.add_scale, Wa, nn.matrix(2, 1), 0.5)
err("add_scale_same", nn.add_scale, Wa, Wa, 0.5)
local db = nn.matrix(1, 2)
nn.colsum(db, H, 0.5)
show("colsum", db:get(1, 1) .. " " .. db:get(1, 2))

local W, Vm, G = nn.matrix(1, 2, 1), nn.matrix(1, 2, 0.5), nn.matrix(1, 2, 2)
nn.momentum(W, Vm, G, 0.1, 0.9)
show("momentum", ("%.4f %.4f"):format(W:get(1, 1), Vm:get(1, 1)))

-- DistArrays, slices of ranges, rows by index.
local D = orion.array { 3, 4, type = "f64" }
for i = 1, 3 do for j = 1, 4 do D:set(i, j, 10 * i + j) end end
local M = nn.read(D)
show("read", M:rows() .. "x" .. M:cols() .. " " .. M:get(3, 4))
local R = nn.rows(D, { 3, 1 }, 1, 2)
show("rows", R:get(1, 1) .. " " .. R:get(2, 4))
show("read_range", nn.read_range(D, 2, 2, 3):get(2, 3))
err("rows_range", nn.rows, D, { 4 }, 1, 1)
err("read_range_out", nn.read_range, D, 11, 1, 3)
local F = orion.zeros { 3, 4, type = "f32" }
nn.write(F, M)
nn.add_to(F, M, -0.5)
show("write_add", F:get(3, 4))
nn.add_to(F, nn.matrix(1, 2, 1), 2, 5, nn.matrix(1, 2, 0.5))
show("add_diff", F:get(2, 1) .. " " .. F:get(2, 2))
err("write_shape", nn.write, F, nn.matrix(4, 3))
err("write_int", nn.write, orion.zeros { 2, type = "i32" }, nn.matrix(1, 2))
err("read_sparse", nn.read, orion.text_file(arg[1]))
err("read_buffer", nn.read, orion.buffer(F))
local T = nn.to_array(nn.from_table { { 1, 2 }, { 3, 4 } })
show("to_array", tostring(T) .. " " .. T:get(2, 1))
local Tk = nn.take(D, { 2, 3 }, 2, 1)
show("take", tostring(Tk) .. " " .. Tk:get(1, 4))

-- Sparse rows: rowptr/cols/vals for [[1 0 2], [0 3 0]].
local rows = orion.zeros { 3, type = "i32" }
rows:set(1, 1); rows:set(2, 3); rows:set(3, 2)
local vals = orion.zeros { 3, type = "f32" }
vals:set(1, 1); vals:set(2, 2); vals:set(3, 3)
local rp1 = orion.zeros { 3, type = "i64" }
rp1:set(2, 2); rp1:set(3, 3)
local S = nn.csr_rows(rp1, rows, vals, 3, { 2, 1 }, 1, 2)
show("csr", tostring(S))
local Bd = nn.from_table { { 1, 1 }, { 1, 2 }, { 1, 3 } }
local SB = nn.matrix(2, 2)
nn.spmm(SB, S, Bd)
show("spmm", SB:get(1, 2) .. " " .. SB:get(2, 2))
local StB = nn.matrix(3, 2)
nn.spmm_t(StB, S, SB)
show("spmm_t", StB:get(2, 1) .. " " .. StB:get(3, 2))
err("spmm_shape", nn.spmm, SB, S, nn.matrix(2, 2))
err("csr_col", nn.csr_rows, rp1, rows, vals, 2, nil, 1, 2)
show("threads", nn.threads())
err("driver_only", orion.parallel_for, orion.zeros { 1 }, function(i, v)
  nn.read_idx("x")
end)
err("matrix_capture", orion.parallel_for, orion.zeros { 1 }, function(i, v)
  return A:get(1, 1)
end)
