-- Prints the scalars of a TensorBoard event file (docs/training.md,
-- "TensorBoard"), for a look without TensorBoard:
--
--   orion-driver --quiet docs/examples/tfevents.lua FILE [TAG...]
--
-- prints each event's step and values (only those of the TAGs given).
-- It checks each record's framing and both masked CRC-32Cs, and decodes
-- the Event protobufs: step (2), file_version (3), summary (5) values of
-- tag (1) and simple_value (2).
local path = assert(arg[1], "usage: tfevents.lua FILE [TAG...]")
local wanted = {}
for i = 2, #arg do wanted[arg[i]] = true end
local f = assert(io.open(path, "rb"))
local data = f:read("a")
f:close()

local function crc32c(s) -- bit by bit: small files only
  local c = 0xffffffff
  for i = 1, #s do
    c = c ~ s:byte(i)
    for _ = 1, 8 do c = (c & 1 == 1) and ((c >> 1) ~ 0x82f63b78) or (c >> 1) end
  end
  return c ~ 0xffffffff
end
local function masked(s)
  local c = crc32c(s)
  return (((c >> 15) | (c << 17)) + 0xa282ead8) & 0xffffffff
end

-- The fields of a protobuf message: calls fn(number, value) for each.
local function fields(msg, fn)
  local pos = 1
  local function varint()
    local v, shift = 0, 0
    repeat
      local b = msg:byte(pos)
      pos, v, shift = pos + 1, v | ((b & 0x7f) << shift), shift + 7
    until b < 0x80
    return v
  end
  while pos <= #msg do
    local key = varint()
    local wt, v = key & 7, nil
    if wt == 0 then v = varint()
    elseif wt == 1 then v, pos = string.unpack("<d", msg, pos)
    elseif wt == 5 then v, pos = string.unpack("<f", msg, pos)
    elseif wt == 2 then
      local n = varint()
      v, pos = msg:sub(pos, pos + n - 1), pos + n
    else error(("%s: wire type %d"):format(path, wt)) end
    fn(key >> 3, v)
  end
end

local pos, n = 1, 0
while pos <= #data do
  local len, crc = string.unpack("<I8I4", data, pos)
  assert(crc == masked(data:sub(pos, pos + 7)), "length CRC")
  local event = data:sub(pos + 12, pos + 11 + len)
  assert(string.unpack("<I4", data, pos + 12 + len) == masked(event), "data CRC")
  pos, n = pos + 16 + len, n + 1
  local step, out = 0, {}
  fields(event, function(k, v)
    if k == 2 then step = v
    elseif k == 3 then out[#out + 1] = "file_version " .. v
    elseif k == 5 then
      fields(v, function(_, value)
        local tag, x
        fields(value, function(k2, v2) if k2 == 1 then tag = v2 else x = v2 end end)
        if #arg < 2 or wanted[tag] then out[#out + 1] = ("%s %.4f"):format(tag, x) end
      end)
    end
  end)
  print(("step %d: %s"):format(step, table.concat(out, ", ")))
end
print(("%d records, CRCs correct"):format(n))
