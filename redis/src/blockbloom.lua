-- blockbloom's server side: batched, atomic check-and-set of Bloom-filter bits.
--
-- ARGV[1] = k, the number of bit offsets per key (padded by repeating an offset), then k
-- offsets per key. BITFIELD runs all SETs of a call atomically and returns each bit's old
-- value, so a key is new iff one of its old bits was 0: two processes can never both see a
-- key as new, and a key repeated within a batch is new only the first time.

local MAX_ARGS = 7000 -- BITFIELD arguments per redis.call (Lua's unpack limit is ~8000)

local function run(key, args, op, bit, new_if_zero)
  local k = tonumber(args[1])
  local n = (#args - 1) / k
  local per = math.max(1, math.floor(MAX_ARGS / (3 * k + (bit and k or 0))))
  local out = {}
  local i = 0
  while i < n do
    local m = math.min(per, n - i)
    local cmd = {}
    local c = 0
    for j = 0, m - 1 do
      local base = 1 + (i + j) * k
      for b = 1, k do
        cmd[c + 1] = op; cmd[c + 2] = 'u1'; cmd[c + 3] = args[base + b]
        c = c + 3
        if bit then cmd[c + 1] = bit; c = c + 1 end
      end
    end
    local old
    if bit then
      old = redis.call('BITFIELD', key, unpack(cmd))
    else
      old = redis.call('BITFIELD_RO', key, unpack(cmd))
    end
    for j = 0, m - 1 do
      local zero = 0
      for b = 1, k do
        if old[j * k + b] == 0 then zero = 1; break end
      end
      if new_if_zero then out[i + j + 1] = zero else out[i + j + 1] = 1 - zero end
    end
    i = i + m
  end
  return out
end

-- insert_if_absent: 1 = new (was absent), 0 = present before.
local function bb_set(keys, args) return run(keys[1], args, 'SET', '1', true) end
-- contains: 1 = present, 0 = absent.
local function bb_get(keys, args) return run(keys[1], args, 'GET', nil, false) end
-- Creates the parameter hash unless it exists; returns {created, field, value, ...}.
local function bb_meta(keys, args)
  if redis.call('EXISTS', keys[1]) == 1 then
    local r = redis.call('HGETALL', keys[1])
    table.insert(r, 1, 0)
    return r
  end
  redis.call('HSET', keys[1], unpack(args))
  local r = redis.call('HGETALL', keys[1])
  table.insert(r, 1, 1)
  return r
end
