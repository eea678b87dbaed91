/**
 * The Lua scripts of the Redis trajectory buffer. Each runs atomically on the server, so an
 * append is idempotent and a dead-lettering happens once however many consumers race, and each
 * takes a whole batch, so a batch costs one round trip. Keys come from common/redis-keys.ts.
 *
 * No script takes a record's bytes as an argument: Redis hashes every byte of every string that
 * enters Lua (~1.6 ns/byte, measured: a 3 KB record costs more there than its XADD), so records
 * are written by a plain HSET into the payloads hash, in the same MULTI as the append script,
 * which only sees trajectory ids and payload keys.
 */
import { LEGACY_JSON_FIELD, PAYLOAD_FIELD, RECORD_FIELD, TRAJECTORY_FIELD } from './record-codec.js';

/**
 * `dead_letter(group, id, deliveries, deadAtMs)`: XACKs entry `id` of KEYS[1] and, only if it was
 * still pending (so two claimers never both dead-letter it), copies it with its record inline
 * (field `m`, or `record` for a legacy entry) to the dead-letter stream KEYS[2]. KEYS[4] is the
 * payloads hash. Returns 1 if moved. Rare, so the record may pass through Lua here.
 */
const DEAD_LETTER = `
local function dead_letter(group, id, deliveries, dead_at)
  if redis.call('XACK', KEYS[1], group, id) ~= 1 then return 0 end
  local fields = {'entryId', id, 'group', group, 'deliveries', deliveries, 'deadAtMs', dead_at}
  local name, value = '${LEGACY_JSON_FIELD}', ''
  local e = redis.call('XRANGE', KEYS[1], id, id)
  if e[1] then
    local f = e[1][2]
    for j = 1, #f, 2 do
      if f[j] == '${PAYLOAD_FIELD}' then
        name, value = '${RECORD_FIELD}', redis.call('HGET', KEYS[4], f[j + 1]) or ''
      elseif f[j] == '${RECORD_FIELD}' or f[j] == '${LEGACY_JSON_FIELD}' then
        name, value = f[j], f[j + 1]
      end
    end
  end
  fields[#fields + 1] = name
  fields[#fields + 1] = value
  redis.call('XADD', KEYS[2], '*', unpack(fields))
  return 1
end
`;

/** Most entries one append trims (approximate trimming, like `MAXLEN ~`, beyond that). */
const TRIM_CHUNK = 1000;

/**
 * KEYS: stream, ids hash, stats hash, payloads hash. ARGV: maxLen (0 = none), a payload key
 * prefix, then the trajectoryIds; the i-th record (from 0) is already in the payloads hash under
 * `<prefix><i>` (same MULTI; the key is built here rather than sent twice). One HMGET looks
 * every id up, one XADD per new record, one HSET stores the new ids. A duplicate (already
 * stored, or twice in the batch) gets the existing entry id and its payload is dropped.
 * Trimming past maxLen deletes the trimmed entries' payloads too.
 */
export const APPEND_SCRIPT = `
local maxlen = tonumber(ARGV[1])
local prefix = ARGV[2]
local n = #ARGV - 2
local tids = {}
for i = 1, n do tids[i] = ARGV[i + 2] end
local existing = redis.call('HMGET', KEYS[2], unpack(tids))
local seen, fresh, orphans, out = {}, {}, {}, {}
for i = 1, n do
  local tid, key = tids[i], prefix .. (i - 1)
  local id = existing[i] or seen[tid]
  if id then
    orphans[#orphans + 1] = key
  else
    id = redis.call('XADD', KEYS[1], '*', '${TRAJECTORY_FIELD}', tid, '${PAYLOAD_FIELD}', key)
    seen[tid] = id
    fresh[#fresh + 1] = tid
    fresh[#fresh + 1] = id
  end
  out[i] = id
end
local added = #fresh / 2
if added > 0 then
  redis.call('HSET', KEYS[2], unpack(fresh))
  redis.call('HINCRBY', KEYS[3], 'appended', added)
end
if #orphans > 0 then
  redis.call('HDEL', KEYS[4], unpack(orphans))
  redis.call('HINCRBY', KEYS[3], 'duplicates', #orphans)
end
if maxlen > 0 then
  local excess = math.min(redis.call('XLEN', KEYS[1]) - maxlen, ${TRIM_CHUNK})
  if excess > 0 then
    local old = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', excess)
    local ids, keys = {}, {}
    for _, e in ipairs(old) do
      ids[#ids + 1] = e[1]
      local f = e[2]
      for j = 1, #f, 2 do
        if f[j] == '${PAYLOAD_FIELD}' then keys[#keys + 1] = f[j + 1] end
      end
    end
    if #keys > 0 then redis.call('HDEL', KEYS[4], unpack(keys)) end
    redis.call('XDEL', KEYS[1], unpack(ids))
  end
end
return out
`;

/** KEYS: stream, stats. ARGV: group, then entry ids. XACK, counted per group. */
export const ACK_SCRIPT = `
local n = redis.call('XACK', KEYS[1], ARGV[1], unpack(ARGV, 2))
if n > 0 then redis.call('HINCRBY', KEYS[2], 'acked:' .. ARGV[1], n) end
return n
`;

/**
 * KEYS: stream, dead, stats, payloads. ARGV: group, deadAtMs, then entryId, deliveries pairs.
 * Dead-letters each entry that is still pending. Returns how many were moved.
 */
export const DEAD_LETTER_SCRIPT = `${DEAD_LETTER}
local moved = 0
for i = 3, #ARGV, 2 do moved = moved + dead_letter(ARGV[1], ARGV[i], ARGV[i + 1], ARGV[2]) end
if moved > 0 then redis.call('HINCRBY', KEYS[3], 'dead:' .. ARGV[1], moved) end
return moved
`;

/**
 * KEYS: stream, dead, stats, payloads. ARGV: group, consumer, count, maxDeliveries, nowMs. The
 * consumer's own pending entries, oldest first (XREADGROUP … 0), re-delivered with XCLAIM so
 * the delivery count goes up; one already delivered maxDeliveries times goes to the dead letters
 * instead, and one trimmed from the stream leaves the pending list.
 * Returns {id, deliveries, fields}s.
 */
export const READ_PENDING_SCRIPT = `${DEAD_LETTER}
local group, consumer, max = ARGV[1], ARGV[2], tonumber(ARGV[4])
local rows = redis.call('XPENDING', KEYS[1], group, '-', '+', tonumber(ARGV[3]), consumer)
local out = {}
local moved = 0
for _, row in ipairs(rows) do
  local id, deliveries = row[1], tonumber(row[4])
  if deliveries >= max then
    moved = moved + dead_letter(group, id, deliveries, ARGV[5])
  else
    local claimed = redis.call('XCLAIM', KEYS[1], group, consumer, 0, id)
    local e = claimed[1]
    if e and type(e[2]) == 'table' then
      out[#out + 1] = {id, deliveries + 1, e[2]}
    else
      redis.call('XACK', KEYS[1], group, id)
    end
  end
end
if moved > 0 then redis.call('HINCRBY', KEYS[3], 'dead:' .. group, moved) end
return out
`;

/**
 * KEYS: stream, dead, stats, trained. Every counter in one round trip:
 * {stats hash as a flat list, XINFO GROUPS (empty without a stream), XLEN, dead XLEN, SCARD}.
 */
export const STATS_SCRIPT = `
local groups = {}
if redis.call('EXISTS', KEYS[1]) == 1 then groups = redis.call('XINFO', 'GROUPS', KEYS[1]) end
return {redis.call('HGETALL', KEYS[3]), groups, redis.call('XLEN', KEYS[1]), redis.call('XLEN', KEYS[2]),
  redis.call('SCARD', KEYS[4])}
`;
