-- blockbloom's server side: batched, atomic check-and-set of Bloom-filter bits, writing
-- only bits that change.
--
-- Every shard starts with a 64-byte header whose first 8 bytes are the filter's
-- incarnation (see meta.rs); a call names the incarnation it expects, and a shard whose
-- header differs — missing (all zero: the shard was lost, e.g. a restart without
-- persistence or an eviction) or another incarnation — is not touched: the call answers
-- {0, header} and the client handles the loss.
--
-- Set/get: ARGV[1] = incarnation (8 bytes), ARGV[2] = k, then k bit offsets per key
-- (padded by repeating an offset). Answers {1, a1, a2, ...}, one answer per key.

local MAX_ARGS = 7000 -- BITFIELD arguments per redis.call (Lua's unpack limit is ~8000)

local function header_ok(key, inc)
  local h = redis.call('GETRANGE', key, 0, 7)
  return h == inc, h
end

-- Old values of the bits at offs[from..to] (BITFIELD_RO, in chunks).
local function read_bits(key, offs)
  local out = {}
  local i = 1
  while i <= #offs do
    local cmd = {}
    local last = math.min(#offs, i + math.floor(MAX_ARGS / 3) - 1)
    for j = i, last do
      cmd[#cmd + 1] = 'GET'; cmd[#cmd + 1] = 'u1'; cmd[#cmd + 1] = offs[j]
    end
    local r = redis.call('BITFIELD_RO', key, unpack(cmd))
    for j = 1, #r do out[#out + 1] = r[j] end
    i = last + 1
  end
  return out
end

-- The batch's part common to set and get: nil and the header if the shard is not the
-- caller's incarnation; else k, the number of keys, the offsets and their old bits.
local function batch_bits(key, args)
  local ok, h = header_ok(key, args[1])
  if not ok then return nil, h end
  local k = tonumber(args[2])
  local offs = {}
  for i = 3, #args do offs[#offs + 1] = args[i] end
  return k, (#args - 2) / k, offs, read_bits(key, offs)
end

-- insert_if_absent: 1 = new (was absent), 0 = present before. Reads the batch's bits,
-- then sets only the missing ones (so duplicates write nothing: no AOF or replica
-- traffic); a key is new iff one of its SETs found a 0, so a key repeated in the batch is
-- new only once.
local function bb_set(keys, args)
  local key = keys[1]
  local k, n, offs, old = batch_bits(key, args)
  if not k then return {0, n} end
  local out = {1}
  local set, owner = {}, {}
  for j = 0, n - 1 do
    out[j + 2] = 0
    for b = 1, k do
      if old[j * k + b] == 0 then
        set[#set + 1] = offs[j * k + b]
        owner[#owner + 1] = j + 2
      end
    end
  end
  local i = 1
  while i <= #set do
    local cmd = {}
    local last = math.min(#set, i + math.floor(MAX_ARGS / 4) - 1)
    for j = i, last do
      cmd[#cmd + 1] = 'SET'; cmd[#cmd + 1] = 'u1'; cmd[#cmd + 1] = set[j]; cmd[#cmd + 1] = 1
    end
    local r = redis.call('BITFIELD', key, unpack(cmd))
    for j = 1, #r do
      if r[j] == 0 then out[owner[i + j - 1]] = 1 end
    end
    i = last + 1
  end
  return out
end

-- contains: 1 = present, 0 = absent.
local function bb_get(keys, args)
  local k, n, _, old = batch_bits(keys[1], args)
  if not k then return {0, n} end
  local out = {1}
  for j = 0, n - 1 do
    local all = 1
    for b = 1, k do
      if old[j * k + b] == 0 then all = 0; break end
    end
    out[j + 2] = all
  end
  return out
end

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

-- Re-incarnation after a loss: ARGV[1] = the incarnation the caller knew, then the
-- fields of the new parameter hash (with a new incarnation). If the hash is missing it is
-- created from them; if it still holds the caller's incarnation, its incarnation is
-- replaced; otherwise (someone re-incarnated first) it is left alone. Returns
-- {changed, field, value, ...}.
local function bb_reincarnate(keys, args)
  local known = args[1]
  local fields = {}
  local new_inc
  for i = 2, #args, 2 do
    fields[#fields + 1] = args[i]; fields[#fields + 1] = args[i + 1]
    if args[i] == 'incarnation' then new_inc = args[i + 1] end
  end
  local changed = 0
  if redis.call('EXISTS', keys[1]) == 0 then
    redis.call('HSET', keys[1], unpack(fields))
    changed = 1
  elseif redis.call('HGET', keys[1], 'incarnation') == known then
    redis.call('HSET', keys[1], 'incarnation', new_inc)
    changed = 1
  end
  local r = redis.call('HGETALL', keys[1])
  table.insert(r, 1, changed)
  return r
end

-- Arms a shard: ARGV[1] = a header (64 bytes), then any number of incarnations (8 bytes
-- each) that it may replace; a missing header (an absent or all-zero prefix) is always
-- replaced. Returns the shard's header afterwards.
local function bb_arm(keys, args)
  local h = redis.call('GETRANGE', keys[1], 0, 63)
  local replace = (h == '') or (string.sub(h, 1, 8) == string.rep('\0', 8))
  for i = 2, #args do
    if string.sub(h, 1, 8) == args[i] then replace = true end
  end
  if replace then
    redis.call('SETRANGE', keys[1], 0, args[1])
    h = args[1]
  end
  return h
end
