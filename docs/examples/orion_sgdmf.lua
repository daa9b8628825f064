-- Orion's SGD matrix factorisation example (apps/sgd_mf/orion_sgdmf.jl in
-- Orion's repository), written for Orion-C line by line: docs/julia-api.md.
local orion = require "orion"

local data_path = arg[1] or "docs/examples/tiny.csv"
local K, num_iterations, step_size = 4, 3, 0.01

local line_cnt = 0                         -- Orion.@accumulator line_cnt = 0
local function parse_line(line)            -- Orion.@share function parse_line
  local u, i, r = line:match("^(%d+),(%d+),([%d.]+)$")
  if not u then return nil end             -- the header: skipped
  line_cnt = line_cnt + 1
  return tonumber(u), tonumber(i), tonumber(r)
end

-- Orion.@dist_array ratings = Orion.text_file(data_path, parse_line)
local ratings = orion.text_file(data_path, { format = "lines", parse = parse_line })
local dim_x, dim_y = ratings:dims()        -- dim_x, dim_y = size(ratings)
print(("(%d, %d)  line_cnt = %d"):format(dim_x, dim_y, line_cnt))

-- Orion.randn(K, dim_x), then Orion.map(W, map_init_param, map_values = true)
local W = orion.randn { dim_x, K, type = "f32", seed = 1 }:map(function(_, _, v) return v / 10 end)
local H = orion.randn { dim_y, K, type = "f32", seed = 2 }:map(function(_, _, v) return v / 10 end)

local err = orion.accumulator("sum")      -- Orion.@accumulator err = 0
for iteration = 1, num_iterations do
  -- Orion.@parallel_for for rating in ratings
  orion.parallel_for(ratings, function(x_idx, y_idx, rv)
    local W_row, H_row = W[x_idx], H[y_idx]  -- @view W[:, x_idx]
    local pred = 0
    for k = 1, K do pred = pred + W_row[k] * H_row[k] end
    local diff = rv - pred
    for k = 1, K do
      local w, h = W_row[k], H_row[k]
      W_row[k] = w + step_size * 2 * diff * h
      H_row[k] = h + step_size * 2 * diff * w
    end
  end)
  orion.parallel_for(ratings, function(x_idx, y_idx, rv)
    local W_row, H_row = W[x_idx], H[y_idx]
    local pred = 0
    for k = 1, K do pred = pred + W_row[k] * H_row[k] end
    err:add((rv - pred) ^ 2)                -- err += (rv - pred) ^ 2
  end)
  -- Orion.get_aggregated_value(:err, :+), then Orion.reset_accumulator(:err)
  print(("iteration = %d err = %.6f"):format(iteration, err:get()))
  err:reset()
end
-- Orion.save_as_text_file(W, to_string, path): one "key key value" line each
W:save("W.txt")
