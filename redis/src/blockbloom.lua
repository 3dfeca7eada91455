-- blockbloom's server side: batched, atomic check-and-set of Bloom-filter bits, writing
-- only bits that change.
--
-- Every shard starts with a 64-byte header whose first 8 bytes are the filter's
-- incarnation (see meta.rs); a call names the incarnation it expects, and a shard whose
-- header differs — missing (all zero: the shard was lost, e.g. a restart without
-- persistence or an eviction) or another incarnation — is not touched: the call answers
-- {0, header} and the client handles the loss.
--
-- Setting bits: each key's bits lie in one 64-byte block. A call reads each block it
-- touches once (GETRANGE), ORs the keys' bits in, in order (a key is new iff one of its
-- bits was 0), and writes back only the changed bytes of each block with one SETRANGE.
-- Redis replicates a function by its effects, so the AOF and the replicas get those
-- SETRANGEs: about 60 bytes plus the changed span (at most 64) per new key, nothing for a
-- repeat.
--
-- Set/get: ARGV[1] = incarnation (8 bytes), ARGV[2] = k, then k bit offsets per key
-- (padded by repeating an offset). Answers {1, a1, a2, ...}, one answer per key.
-- Or: ARGV[1] = incarnation, then per key a count c and c bit offsets (the bits a read
-- found missing). Answers {1, a1, a2, ...}.

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

-- The 64-byte block starting at byte `start`, read once per call: its byte values, and the
-- span of bytes changed so far (lo..hi; hi = 0: none).
local function block_at(key, blocks, order, start)
  local b = blocks[start]
  if not b then
    b = {string.byte(redis.call('GETRANGE', key, start, start + 63), 1, -1)}
    for i = #b + 1, 64 do b[i] = 0 end
    b.lo, b.hi = 65, 0
    blocks[start] = b
    order[#order + 1] = start
  end
  return b
end

-- Sets bit `o` (Redis numbering: bit 0 is the most significant of byte 0) in its block;
-- 1 if it was 0.
local function set_bit(key, blocks, order, o)
  local b = block_at(key, blocks, order, math.floor(o / 512) * 64)
  local p = o % 512
  local i = math.floor(p / 8) + 1
  local m = 2 ^ (7 - p % 8)
  if bit.band(b[i], m) ~= 0 then return 0 end
  b[i] = bit.bor(b[i], m)
  if i < b.lo then b.lo = i end
  if i > b.hi then b.hi = i end
  return 1
end

-- Writes the changed span of every block touched.
local function write_blocks(key, blocks, order)
  for _, start in ipairs(order) do
    local b = blocks[start]
    if b.hi > 0 then
      redis.call('SETRANGE', key, start + b.lo - 1, string.char(unpack(b, b.lo, b.hi)))
    end
  end
end

-- insert_if_absent: 1 = new (was absent), 0 = present before. Sets the keys' bits in
-- order, so that a key repeated in the batch is new only once; duplicates write nothing
-- (no AOF or replica traffic).
local function bb_set(keys, args)
  local key = keys[1]
  local ok, h = header_ok(key, args[1])
  if not ok then return {0, h} end
  local k = tonumber(args[2])
  local blocks, order, out = {}, {}, {1}
  for j = 0, (#args - 2) / k - 1 do
    local new = 0
    for b = 1, k do
      if set_bit(key, blocks, order, tonumber(args[2 + j * k + b])) == 1 then new = 1 end
    end
    out[j + 2] = new
  end
  write_blocks(key, blocks, order)
  return out
end

-- The second step of the client's two-step insert: sets the bits its read found missing
-- (per key: a count, then the offsets); 1 = a bit of the key was still 0 (it is new).
local function bb_or(keys, args)
  local key = keys[1]
  local ok, h = header_ok(key, args[1])
  if not ok then return {0, h} end
  local blocks, order, out = {}, {}, {1}
  local i = 2
  while i <= #args do
    local c, new = tonumber(args[i]), 0
    for j = 1, c do
      if set_bit(key, blocks, order, tonumber(args[i + j])) == 1 then new = 1 end
    end
    out[#out + 1] = new
    i = i + c + 1
  end
  write_blocks(key, blocks, order)
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

-- Arms a shard: ARGV[1] = a header (64 bytes), ARGV[2] = the shard's length in bytes,
-- then any number of incarnations (8 bytes each) that it may replace; a missing header (an
-- absent or all-zero prefix) is always replaced. A missing shard is created at its full
-- length in one allocation (SETRANGE of its last byte), so that its memory is its bits from
-- the first insert on (a string grown piecemeal is over-allocated at each growth). Returns
-- the shard's header afterwards.
local function bb_arm(keys, args)
  local h = redis.call('GETRANGE', keys[1], 0, 63)
  local replace = (h == '') or (string.sub(h, 1, 8) == string.rep('\0', 8))
  for i = 3, #args do
    if string.sub(h, 1, 8) == args[i] then replace = true end
  end
  if replace then
    if redis.call('EXISTS', keys[1]) == 0 then
      redis.call('SETRANGE', keys[1], tonumber(args[2]) - 1, '\0')
    end
    redis.call('SETRANGE', keys[1], 0, args[1])
    h = args[1]
  end
  return h
end

-- An expiring filter (see expiring.rs). KEYS[1] is a shard `{name.i}.bits`: its header,
-- the window, the newest epoch (20 digits at byte 72) and a ring of the created
-- generations (16 × 20 digits from byte 92, epoch x at x % 16). Generation x of the shard
-- is the key `{name.i}.g.x` (the same hash slot): the shard's header, then 16 bytes per
-- line, slot s of a line being bit s of its 16 bytes (Redis numbering); it expires on the
-- server (PEXPIREAT) once no caller can read it. A key's slot is live in epoch w if its bit
-- is set in a created generation w − 4 .. newest; a key is present if all its slots are.
-- ARGV: incarnation, own epoch, tolerated lag, a generation's length, the epoch length in
-- ns, k, then per key its line in the shard and k slots (padded by repeating one).
-- Answers {1, a1, ...}, or {0, header} if the shard or a created generation is not the
-- caller's incarnation (lost).
local function xdigits(s)
  if s == '' or string.byte(s, 1) == 0 then return -1 end
  return tonumber(s)
end

local function bb_xop(keys, args, mode)
  local shard, inc = keys[1], args[1]
  local h = redis.call('GETRANGE', shard, 0, 63)
  if string.sub(h, 1, 8) ~= inc then return {0, h} end
  local own, lag, genlen, epoch_ns, k =
    tonumber(args[2]), tonumber(args[3]), tonumber(args[4]), tonumber(args[5]), tonumber(args[6])
  local newest = xdigits(redis.call('GETRANGE', shard, 72, 91))
  if own > newest then
    -- No caller moves the filter past the server's clock + 1 s (the skew tolerated): a
    -- client whose clock runs ahead works at the server's time, and forgets nothing early.
    local t = redis.call('TIME')
    local latest = math.floor((tonumber(t[1]) * 1e9 + tonumber(t[2]) * 1e3 + 1e9) / epoch_ns)
    if own > latest then own = latest end
  end
  local w
  if own > newest then
    newest, w = own, own
    redis.call('SETRANGE', shard, 72, string.format('%020d', own))
  else
    w = math.max(own, newest - lag)
  end
  local prefix = string.sub(shard, 1, -5) .. 'g.'
  local gens = {} -- created generations w-4..newest: their keys
  for x = math.max(w - 4, 0), newest do
    local at = 92 + (x % 16) * 20
    if xdigits(redis.call('GETRANGE', shard, at, at + 19)) == x then
      local gk = prefix .. x
      if redis.call('GETRANGE', gk, 0, 7) ~= inc then return {0, ''} end
      gens[#gens + 1] = gk
    end
  end
  local cur = prefix .. w
  local lines, order = {}, {} -- (generation key, line) -> its 16 bytes, and writes
  local function line_of(gk, l)
    local id = gk .. '#' .. l
    local b = lines[id]
    if not b then
      b = {string.byte(redis.call('GETRANGE', gk, 64 + l * 16, 64 + l * 16 + 15), 1, -1)}
      for i = #b + 1, 16 do b[i] = 0 end
      b.key, b.at, b.dirty = gk, 64 + l * 16, false
      lines[id] = b
      order[#order + 1] = id
    end
    return b
  end
  local function has(b, s)
    return bit.band(b[math.floor(s / 8) + 1], 2 ^ (7 - s % 8)) ~= 0
  end
  local function create_current()
    local at = 92 + (w % 16) * 20
    if xdigits(redis.call('GETRANGE', shard, at, at + 19)) == w then return end
    redis.call('DEL', cur)
    redis.call('SETRANGE', cur, genlen - 1, '\0')
    redis.call('SETRANGE', cur, 0, h)
    -- Readable while newest <= w + 4 + lag; kept 1 s more for clocks (the server's too).
    -- A generation of a past time (a replay) lives as long on the server's clock.
    local now = redis.call('TIME')
    local soon = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
    redis.call('PEXPIREAT', cur, math.max(math.floor((w + 5 + lag) * epoch_ns / 1e6),
      soon + math.floor((4 + lag) * epoch_ns / 1e6)) + 1000)
    redis.call('SETRANGE', shard, at, string.format('%020d', w))
    gens[#gens + 1] = cur
  end
  local out = {1}
  local i = 7
  while i <= #args do
    local l = tonumber(args[i])
    local present = true
    if mode ~= 'ins' then
      for j = 1, k do
        local s = tonumber(args[i + j])
        local live = false
        for _, gk in ipairs(gens) do
          if has(line_of(gk, l), s) then live = true; break end
        end
        if not live then present = false; break end
      end
    else
      present = false
    end
    if mode == 'get' then
      out[#out + 1] = present and 1 or 0
    else
      out[#out + 1] = present and 0 or 1
      if not present then
        create_current()
        local b = line_of(cur, l)
        for j = 1, k do
          local s = tonumber(args[i + j])
          if not has(b, s) then
            local byte = math.floor(s / 8) + 1
            b[byte] = bit.bor(b[byte], 2 ^ (7 - s % 8))
            b.dirty = true
          end
        end
      end
    end
    i = i + k + 1
  end
  for _, id in ipairs(order) do
    local b = lines[id]
    if b.dirty then redis.call('SETRANGE', b.key, b.at, string.char(unpack(b, 1, 16))) end
  end
  return out
end

local function bb_xset(keys, args) return bb_xop(keys, args, 'set') end
local function bb_xins(keys, args) return bb_xop(keys, args, 'ins') end
local function bb_xget(keys, args) return bb_xop(keys, args, 'get') end
