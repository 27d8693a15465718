/**
 * The Lua scripts a worker runs in Redis. Each is one round trip and atomic, so that two workers
 * (or a worker and a heartbeat) never see each other's step half done.
 */

/**
 * Renews this worker's leases and says it is alive: every stream entry pending to it has its idle
 * time reset (XCLAIM to itself, JUSTID so that the delivery count does not grow), its alive key
 * gets a fresh expiry, and its counters are stored. Returns the ids renewed — a lease another
 * worker reclaimed is no longer pending to this one, and so is missing.
 *
 * KEYS: splits stream, alive key, workers hash. ARGV: group, consumer, lease ms, worker JSON.
 */
export const RENEW = `
local pending = redis.call('XPENDING', KEYS[1], ARGV[1], '-', '+', 10000, ARGV[2])
local ids = {}
for i, e in ipairs(pending) do ids[#ids + 1] = e[1] end
if #ids > 0 then
  -- Lua expands unpack() only as the last argument: build the whole call instead.
  local args = {'XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0}
  for i, id in ipairs(ids) do args[#args + 1] = id end
  args[#args + 1] = 'JUSTID'
  redis.call(unpack(args))
end
redis.call('SET', KEYS[2], '1', 'PX', ARGV[3])
redis.call('HSET', KEYS[3], ARGV[2], ARGV[4])
return ids
`;

/**
 * Records that batch `seq` of split `index` reached a trainer; when that completes the split, it
 * is acknowledged (XACK) and marked done. A batch delivered again (a trainer that resumed from a
 * checkpoint) counts once; delivering one again still completes a split whose batches were all
 * delivered before its worker died (so a reclaimed split is acknowledged without a trainer). Returns [batches of the split delivered, 1 if this completed it].
 *
 * KEYS: delivered bitmap, delivered-count hash, state hash, counters hash, splits stream, owner hash.
 * ARGV: seq, split index, batches in the split, group, stream id, ms the split took (for the slowest).
 */
export const DELIVER = `
local n
if redis.call('SETBIT', KEYS[1], ARGV[1], 1) == 0 then n = redis.call('HINCRBY', KEYS[2], ARGV[2], 1)
else n = tonumber(redis.call('HGET', KEYS[2], ARGV[2]) or '0') end
if n < tonumber(ARGV[3]) or redis.call('HGET', KEYS[3], ARGV[2]) then return {n, 0} end
redis.call('XACK', KEYS[5], ARGV[4], ARGV[5])
redis.call('HSET', KEYS[3], ARGV[2], 'done')
redis.call('HDEL', KEYS[6], ARGV[2])
redis.call('HINCRBY', KEYS[4], 'done', 1)
local ms = tonumber(ARGV[6])
if ms > tonumber(redis.call('HGET', KEYS[4], 'slowestMs') or '-1') then
  redis.call('HSET', KEYS[4], 'slowestMs', ms, 'slowestId', ARGV[2])
end
return {n, 1}
`;

/**
 * Moves split `index` to the dead-letter stream and fails the job from it: the entry is
 * acknowledged (no worker leases it again), the split marked dead, and the first such split
 * recorded in `failed` for the workers to answer trainers with.
 *
 * KEYS: splits stream, dead stream, state hash, counters hash, failed key, owner hash.
 * ARGV: group, stream id, split index, failure JSON, attempts.
 */
export const DEAD_LETTER = `
if redis.call('HGET', KEYS[3], ARGV[3]) then return 0 end
redis.call('XADD', KEYS[2], '*', 'split', ARGV[3], 'attempts', ARGV[5], 'failure', ARGV[4])
redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
redis.call('HSET', KEYS[3], ARGV[3], 'dead')
redis.call('HDEL', KEYS[6], ARGV[3])
redis.call('HINCRBY', KEYS[4], 'dead', 1)
redis.call('SET', KEYS[5], ARGV[4], 'NX')
return 1
`;
