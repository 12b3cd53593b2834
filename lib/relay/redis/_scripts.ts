// The Lua scripts of the Redis queue (lib/relay/redis/redis_queue.ts), one
// named constant each, as bullmq keeps its scripts in `commands/`: the queue
// holds the TypeScript side (arguments in, replies out) and these hold what
// runs in Redis, each script atomically.
//
// No script takes KEYS: every key is built in the script from the prefix P
// given as ARGV[1] (a cluster hash tag by default, so all of them share one
// slot). Each script starts with PRELUDE, the helpers they share.
//
// Keys, under the prefix P:
//   P:job:<id>        hash: job (JSON without its body), body, due, tenant, endpoint, message, state, token, finished, reason
//   P:msg:<message>   list of the message's job ids
//   P:log:<tenant>    zset of a tenant's message ids by creation time (the message log)
//   P:stats:<tenant>:<bucket>  hash: attempts (n:<endpoint>) and successes (ok:<endpoint>) in a bucket
//   P:statkeys:<tenant>  zset of a tenant's stats hashes by bucket (sweep drops old ones)
//   P:stattenants     set of tenants with stats
//   P:ready:<ep>      list of an endpoint's ready job ids, in due order
//   P:turns           list of endpoint keys with ready jobs, in turn order
//   P:delayed         zset of job ids by due time
//   P:leases          zset of leased job ids by lease expiry
//   P:delivered       zset of delivered job ids by finish time
//   P:dead:<tenant>   zset of a tenant's dead job ids by finish time
//   P:deadtenants     set of tenants with dead jobs
//   P:idem            hash: idempotency answers (JSON) by <tenant>\n<key>
//   P:idemexp         zset of idempotency keys by expiry (sweep drops them)
//   P:count           hash: waiting, leased, dead
//   P:seq             lease token counter

/**
 * What every script starts with: P, the prefix (ARGV[1]), and the helpers
 * they share: makeReady, forget, countAttempt, promote (due retries and
 * expired leases made ready) and held (whether a lease is still its job's).
 */
const PRELUDE = `
local P = ARGV[1]
local function makeReady(id)
  local ep = redis.call('HGET', P .. ':job:' .. id, 'ep')
  redis.call('HSET', P .. ':job:' .. id, 'state', 'ready', 'token', '')
  if redis.call('RPUSH', P .. ':ready:' .. ep, id) == 1 then redis.call('RPUSH', P .. ':turns', ep) end
end
local function forget(id)
  local key = P .. ':job:' .. id
  local fields = redis.call('HMGET', key, 'message', 'tenant')
  local message = fields[1]
  redis.call('DEL', key)
  if message then
    redis.call('LREM', P .. ':msg:' .. message, 0, id)
    if fields[2] and redis.call('EXISTS', P .. ':msg:' .. message) == 0 then redis.call('ZREM', P .. ':log:' .. fields[2], message) end
  end
end
local function countAttempt(tenant, ep, bucket, ok)
  if bucket == '' then return end
  local key = P .. ':stats:' .. tenant .. ':' .. bucket
  redis.call('HINCRBY', key, 'n:' .. ep, 1)
  if ok == '1' then redis.call('HINCRBY', key, 'ok:' .. ep, 1) end
  if redis.call('ZADD', P .. ':statkeys:' .. tenant, bucket, key) == 1 then redis.call('SADD', P .. ':stattenants', tenant) end
end
local function promote(now)
  local expired = redis.call('ZRANGEBYSCORE', P .. ':leases', '-inf', now, 'LIMIT', 0, 1000)
  for _, id in ipairs(expired) do
    redis.call('ZREM', P .. ':leases', id)
    if redis.call('HGET', P .. ':job:' .. id, 'state') == 'leased' then
      makeReady(id)
      redis.call('HINCRBY', P .. ':count', 'leased', -1)
      redis.call('HINCRBY', P .. ':count', 'waiting', 1)
    end
  end
  local due = redis.call('ZRANGEBYSCORE', P .. ':delayed', '-inf', now, 'LIMIT', 0, 1000)
  for _, id in ipairs(due) do
    redis.call('ZREM', P .. ':delayed', id)
    if redis.call('HGET', P .. ':job:' .. id, 'state') == 'delayed' then makeReady(id) end
  end
end
local function held(id, token)
  local key = P .. ':job:' .. id
  local fields = redis.call('HMGET', key, 'state', 'token')
  return fields[1] == 'leased' and fields[2] == token
end
`;

/**
 * Queues batches of jobs, as if one by one: each accepted whole, refused
 * (the queue is full, or its message is queued already) or answered with
 * the first answer of its idempotency key.
 * KEYS: none. ARGV: P, capacity, the batches as one JSON array, then the
 * jobs' bodies in order (kept out of the JSON, so they are sent as given, not
 * escaped twice). Each batch is [message, idempotency key or '', its answer,
 * its expiry, jobs, tenant, creation time], each job [id, endpoint key,
 * tenant, due, job JSON without body].
 * Replies two items per batch: its outcome ('accepted', 'previous', 'full' or
 * 'exists') and, for 'previous', the first answer ('' otherwise).
 */
export const ENQUEUE = `${PRELUDE}
local capacity = tonumber(ARGV[2])
local batches = cjson.decode(ARGV[3])
local counts = redis.call('HMGET', P .. ':count', 'waiting', 'leased')
local held = (tonumber(counts[1]) or 0) + (tonumber(counts[2]) or 0)
local added = 0
local out = {}
local bodies = 4
for _, batch in ipairs(batches) do
  local message, idemKey, answer, expires, jobs, tenant, created = batch[1], batch[2], batch[3], batch[4], batch[5], batch[6], batch[7]
  local n = #jobs
  local body = bodies
  bodies = bodies + n
  local previous = idemKey ~= '' and redis.call('HGET', P .. ':idem', idemKey)
  if previous then
    table.insert(out, 'previous')
    table.insert(out, previous)
  elseif held + added + n > capacity then
    table.insert(out, 'full')
    table.insert(out, '')
  elseif redis.call('EXISTS', P .. ':msg:' .. message) == 1 then
    table.insert(out, 'exists')
    table.insert(out, '')
  else
    for _, job in ipairs(jobs) do
      local id = job[1]
      redis.call('HSET', P .. ':job:' .. id, 'job', job[5], 'body', ARGV[body], 'due', job[4], 'tenant', job[3], 'ep', job[2], 'message', message, 'finished', 0, 'reason', '')
      body = body + 1
      makeReady(id)
      redis.call('RPUSH', P .. ':msg:' .. message, id)
    end
    if n > 0 then redis.call('ZADD', P .. ':log:' .. tenant, created, message) end
    added = added + n
    if idemKey ~= '' then
      redis.call('HSET', P .. ':idem', idemKey, answer)
      redis.call('ZADD', P .. ':idemexp', expires, idemKey)
    end
    table.insert(out, 'accepted')
    table.insert(out, '')
  end
end
if added > 0 then redis.call('HINCRBY', P .. ':count', 'waiting', added) end
return out
`;

/**
 * Makes due retries and jobs of expired leases ready, then leases ready jobs,
 * the endpoints taking turns, one job each.
 * KEYS: none. ARGV: P, now, limit, leaseMs, perEndpoint, then pairs: endpoint
 * key, its limit.
 * Replies json (without body), body, due and lease token per job leased.
 */
export const CLAIM = `${PRELUDE}
local now, limit, leaseMs, perEndpoint = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
promote(now)
local limits = {}
for i = 6, #ARGV, 2 do limits[ARGV[i]] = tonumber(ARGV[i + 1]) end
local taken, skipped, out = {}, {}, {}
local count = 0
while count < limit do
  local ep = redis.call('LPOP', P .. ':turns')
  if not ep then break end
  local cap = math.min(perEndpoint, limits[ep] or perEndpoint)
  local got = taken[ep] or 0
  if got >= cap then
    table.insert(skipped, ep)
  else
    local id = redis.call('LPOP', P .. ':ready:' .. ep)
    if redis.call('LLEN', P .. ':ready:' .. ep) > 0 then redis.call('RPUSH', P .. ':turns', ep) end
    if id then
      taken[ep] = got + 1
      local token = tostring(redis.call('INCR', P .. ':seq'))
      redis.call('HSET', P .. ':job:' .. id, 'state', 'leased', 'token', token)
      redis.call('ZADD', P .. ':leases', now + leaseMs, id)
      local fields = redis.call('HMGET', P .. ':job:' .. id, 'job', 'body', 'due')
      for i = 1, 3 do table.insert(out, fields[i]) end
      table.insert(out, token)
      count = count + 1
    end
  end
end
for _, ep in ipairs(skipped) do redis.call('RPUSH', P .. ':turns', ep) end
if count > 0 then
  redis.call('HINCRBY', P .. ':count', 'waiting', -count)
  redis.call('HINCRBY', P .. ':count', 'leased', count)
end
return out
`;

/**
 * Ends a leased job, delivered or dead, if the lease is still the job's;
 * counts its attempt; a tenant's dead letters past the most kept drop the oldest.
 * KEYS: none. ARGV: P, id, token, json (without body), state ('delivered' or
 * 'dead'), finished, reason, tenant, maxDeadPerTenant, then the attempt to
 * count: endpoint, bucket ('' for none), '1' for a success.
 * Replies 1, or 0 when the lease is no longer the job's.
 */
export const FINISH = `${PRELUDE}
local id, token, state = ARGV[2], ARGV[3], ARGV[5]
if not held(id, token) then return 0 end
countAttempt(ARGV[8], ARGV[10], ARGV[11], ARGV[12])
redis.call('HSET', P .. ':job:' .. id, 'job', ARGV[4], 'state', state, 'token', '', 'finished', ARGV[6], 'reason', ARGV[7])
redis.call('ZREM', P .. ':leases', id)
redis.call('HINCRBY', P .. ':count', 'leased', -1)
if state == 'delivered' then
  redis.call('ZADD', P .. ':delivered', ARGV[6], id)
else
  local dead = P .. ':dead:' .. ARGV[8]
  redis.call('ZADD', dead, ARGV[6], id)
  redis.call('SADD', P .. ':deadtenants', ARGV[8])
  redis.call('HINCRBY', P .. ':count', 'dead', 1)
  if redis.call('ZCARD', dead) > tonumber(ARGV[9]) then
    local oldest = redis.call('ZPOPMIN', dead)
    forget(oldest[1])
    redis.call('HINCRBY', P .. ':count', 'dead', -1)
  end
end
return 1
`;

/**
 * Moves the expiry of the leases still held.
 * KEYS: none. ARGV: P, expiresAt, then id and token of each lease.
 * Replies the (1-based) positions of the leases still held.
 */
export const RENEW = `${PRELUDE}
local renewed = {}
for i = 3, #ARGV, 2 do
  if held(ARGV[i], ARGV[i + 1]) then
    redis.call('ZADD', P .. ':leases', 'XX', ARGV[2], ARGV[i])
    renewed[#renewed + 1] = (i - 1) / 2
  end
end
return renewed
`;

/**
 * Puts a leased job back to wait until its due time (a retry, or a release),
 * if the lease is still the job's; counts its attempt, when there was one.
 * KEYS: none. ARGV: P, id, token, json (without body), due, then the attempt
 * to count: tenant, endpoint, bucket ('' for none), '1' for a success.
 * Replies 1, or 0 when the lease is no longer the job's.
 */
export const WAIT = `${PRELUDE}
local id, token = ARGV[2], ARGV[3]
if not held(id, token) then return 0 end
countAttempt(ARGV[6], ARGV[7], ARGV[8], ARGV[9])
redis.call('HSET', P .. ':job:' .. id, 'job', ARGV[4], 'due', ARGV[5], 'state', 'delayed', 'token', '')
redis.call('ZREM', P .. ':leases', id)
redis.call('ZADD', P .. ':delayed', ARGV[5], id)
redis.call('HINCRBY', P .. ':count', 'leased', -1)
redis.call('HINCRBY', P .. ':count', 'waiting', 1)
return 1
`;

/**
 * A tenant's dead letters.
 * KEYS: none. ARGV: P, tenant.
 * Replies the tenant's dead jobs, newest first: json, body, due, reason, ep per job.
 */
export const DEAD = `${PRELUDE}
local out = {}
for _, id in ipairs(redis.call('ZREVRANGE', P .. ':dead:' .. ARGV[2], 0, -1)) do
  local fields = redis.call('HMGET', P .. ':job:' .. id, 'job', 'body', 'due', 'reason', 'ep')
  if fields[1] then
    for i = 1, 5 do table.insert(out, fields[i]) end
  end
end
return out
`;

/**
 * Queues dead jobs of a tenant again, due now: one by id, or all of them
 * (of one endpoint when given); none when they do not fit.
 * KEYS: none. ARGV: P, tenant, jobId ('' for all), endpoint key ('' for any),
 * now, capacity.
 * Replies how many were queued, or -1 when they do not fit.
 */
export const REPLAY = `${PRELUDE}
local dead = P .. ':dead:' .. ARGV[2]
local chosen = {}
if ARGV[3] ~= '' then
  if redis.call('ZSCORE', dead, ARGV[3]) then chosen = {ARGV[3]} end
else
  for _, id in ipairs(redis.call('ZRANGE', dead, 0, -1)) do
    if ARGV[4] == '' or redis.call('HGET', P .. ':job:' .. id, 'ep') == ARGV[4] then table.insert(chosen, id) end
  end
end
local counts = redis.call('HMGET', P .. ':count', 'waiting', 'leased')
if (tonumber(counts[1]) or 0) + (tonumber(counts[2]) or 0) + #chosen > tonumber(ARGV[6]) then return -1 end
for _, id in ipairs(chosen) do
  redis.call('ZREM', dead, id)
  redis.call('HSET', P .. ':job:' .. id, 'due', ARGV[5], 'reason', '')
  makeReady(id)
end
if #chosen > 0 then
  redis.call('HINCRBY', P .. ':count', 'waiting', #chosen)
  redis.call('HINCRBY', P .. ':count', 'dead', 0 - #chosen)
end
return #chosen
`;

/**
 * A message's jobs.
 * KEYS: none. ARGV: P, message.
 * Replies json, body, due, state, reason, tenant per job.
 */
export const MESSAGE = `${PRELUDE}
local out = {}
for _, id in ipairs(redis.call('LRANGE', P .. ':msg:' .. ARGV[2], 0, -1)) do
  local fields = redis.call('HMGET', P .. ':job:' .. id, 'job', 'body', 'due', 'state', 'reason', 'tenant')
  if fields[1] then
    for i = 1, 6 do table.insert(out, fields[i]) end
  end
end
return out
`;

/**
 * A page of a tenant's message log, newest first, looking at a bounded
 * number of messages.
 * KEYS: none. ARGV: P, tenant, upper bound (ZREVRANGEBYSCORE's max), the
 * cursor's score and id ('' for none), lower bound, event, status ('pending',
 * 'delivered', 'dead' or '' for any), endpoint key ('' for any), limit, most
 * messages to look at.
 * Replies 1 when more may follow (else 0), the score and id to go on from,
 * then per message: its id, its number of jobs, and json, body, due, state,
 * reason per job.
 */
export const MESSAGES = `${PRELUDE}
local log = P .. ':log:' .. ARGV[2]
local max, afterScore, afterId, min = ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local event, status, ep = ARGV[7], ARGV[8], ARGV[9]
local limit, budget = tonumber(ARGV[10]), tonumber(ARGV[11])
local found, scanned, offset, more = 0, 0, 0, 0
local lastScore, lastId = '', ''
local out = {}
local done = false
while not done do
  local batch = redis.call('ZREVRANGEBYSCORE', log, max, min, 'WITHSCORES', 'LIMIT', offset, 100)
  if #batch == 0 then break end
  offset = offset + #batch / 2
  for i = 1, #batch, 2 do
    local id, score = batch[i], batch[i + 1]
    if afterScore == '' or tonumber(score) ~= tonumber(afterScore) or id < afterId then
      local jobs = {}
      for _, job in ipairs(redis.call('LRANGE', P .. ':msg:' .. id, 0, -1)) do
        local fields = redis.call('HMGET', P .. ':job:' .. job, 'job', 'body', 'due', 'state', 'reason', 'ep')
        if fields[1] and (ep == '' or fields[6] == ep) then table.insert(jobs, fields) end
      end
      local match = #jobs > 0
      if match and event ~= '' then match = cjson.decode(jobs[1][1]).event == event end
      if match and status ~= '' then
        match = false
        for _, fields in ipairs(jobs) do
          local state = fields[4]
          if state == status or (status == 'pending' and state ~= 'delivered' and state ~= 'dead') then match = true end
        end
      end
      if match then
        if found == limit then
          more = 1
          done = true
          break
        end
        found = found + 1
        lastScore, lastId = score, id
        table.insert(out, id)
        table.insert(out, #jobs)
        for _, fields in ipairs(jobs) do
          for k = 1, 5 do table.insert(out, fields[k]) end
        end
      end
      scanned = scanned + 1
      if scanned >= budget then
        lastScore, lastId, more, done = score, id, 1, true
        break
      end
    end
  end
end
local reply = {more, lastScore, lastId}
for _, item in ipairs(out) do table.insert(reply, item) end
return reply
`;

/**
 * A tenant's attempts and successes per endpoint since a bucket.
 * KEYS: none. ARGV: P, tenant, the first bucket.
 * Replies endpoint, attempts, successes per endpoint with attempts.
 */
export const STATS = `${PRELUDE}
local attempts, successes = {}, {}
for _, key in ipairs(redis.call('ZRANGEBYSCORE', P .. ':statkeys:' .. ARGV[2], ARGV[3], '+inf')) do
  local counts = redis.call('HGETALL', key)
  for j = 1, #counts, 2 do
    local field, value = counts[j], tonumber(counts[j + 1])
    if string.sub(field, 1, 2) == 'n:' then
      local ep = string.sub(field, 3)
      attempts[ep] = (attempts[ep] or 0) + value
    else
      local ep = string.sub(field, 4)
      successes[ep] = (successes[ep] or 0) + value
    end
  end
end
local out = {}
for ep, made in pairs(attempts) do
  table.insert(out, ep)
  table.insert(out, made)
  table.insert(out, successes[ep] or 0)
end
return out
`;

/**
 * Makes what is due ready, then counts jobs by state.
 * KEYS: none. ARGV: P, now.
 * Replies waiting, leased, dead, delayed.
 */
export const DEPTH = `${PRELUDE}
promote(tonumber(ARGV[2]))
local counts = redis.call('HMGET', P .. ':count', 'waiting', 'leased', 'dead')
return {tonumber(counts[1]) or 0, tonumber(counts[2]) or 0, tonumber(counts[3]) or 0, redis.call('ZCARD', P .. ':delayed')}
`;

/**
 * When the earliest retry or lease falls due.
 * KEYS: none. ARGV: P.
 * Replies the earliest delayed due time and lease expiry ('' when none).
 */
export const NEXT_DUE = `${PRELUDE}
local delayed = redis.call('ZRANGE', P .. ':delayed', 0, 0, 'WITHSCORES')
local leases = redis.call('ZRANGE', P .. ':leases', 0, 0, 'WITHSCORES')
return {delayed[2] or '', leases[2] or ''}
`;

/**
 * Forgets delivered jobs, dead letters, attempt counts and idempotency keys
 * past their retention.
 * KEYS: none. ARGV: P, now, deliveredRetentionMs, maxDelivered,
 * deadRetentionMs, the oldest stats bucket to keep.
 * Replies 1.
 */
export const SWEEP = `${PRELUDE}
local now = tonumber(ARGV[2])
local delivered = P .. ':delivered'
for _, id in ipairs(redis.call('ZRANGEBYSCORE', delivered, '-inf', '(' .. (now - tonumber(ARGV[3]) + 1), 'LIMIT', 0, 10000)) do
  redis.call('ZREM', delivered, id)
  forget(id)
end
local extra = redis.call('ZCARD', delivered) - tonumber(ARGV[4])
if extra > 0 then
  for _, id in ipairs(redis.call('ZRANGE', delivered, 0, extra - 1)) do
    redis.call('ZREM', delivered, id)
    forget(id)
  end
end
for _, tenant in ipairs(redis.call('SMEMBERS', P .. ':deadtenants')) do
  local dead = P .. ':dead:' .. tenant
  local old = redis.call('ZRANGEBYSCORE', dead, '-inf', '(' .. (now - tonumber(ARGV[5]) + 1), 'LIMIT', 0, 10000)
  for _, id in ipairs(old) do
    redis.call('ZREM', dead, id)
    forget(id)
  end
  if #old > 0 then redis.call('HINCRBY', P .. ':count', 'dead', 0 - #old) end
  if redis.call('ZCARD', dead) == 0 then redis.call('SREM', P .. ':deadtenants', tenant) end
end
for _, tenant in ipairs(redis.call('SMEMBERS', P .. ':stattenants')) do
  local keys = P .. ':statkeys:' .. tenant
  for _, key in ipairs(redis.call('ZRANGEBYSCORE', keys, '-inf', '(' .. ARGV[6], 'LIMIT', 0, 10000)) do
    redis.call('DEL', key)
    redis.call('ZREM', keys, key)
  end
  if redis.call('ZCARD', keys) == 0 then redis.call('SREM', P .. ':stattenants', tenant) end
end
local expired = redis.call('ZRANGEBYSCORE', P .. ':idemexp', '-inf', now, 'LIMIT', 0, 10000)
for _, key in ipairs(expired) do
  redis.call('ZREM', P .. ':idemexp', key)
  redis.call('HDEL', P .. ':idem', key)
end
return 1
`;
