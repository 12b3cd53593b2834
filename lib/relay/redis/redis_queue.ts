import type { RedisScripts } from "../../storage/mod.ts";
import { bucketOf } from "../_message_log.ts";
import { queueFull, RelayError } from "../errors.ts";
import type {
  Attempt,
  AttemptCounts,
  ClaimOptions,
  Death,
  DeadLetterQuery,
  EnqueueBatch,
  EnqueueResult,
  IdempotentAnswer,
  Job,
  JobQueue,
  JobState,
  JobView,
  Lease,
  MessagePage,
  MessageQuery,
  QueueDepth,
} from "../queue.ts";
import { ATTEMPT_STATS_RETENTION_MS, endpointKey } from "../queue.ts";

/** What {@linkcode RedisQueue} needs of a Redis connection: Lua scripts, run atomically. */

/** Options of {@linkcode RedisQueue}. */
export interface RedisQueueOptions {
  /**
   * Prefix of every key; a `{hash tag}` keeps them in one cluster slot.
   * @default {"{tributary}"}
   */
  readonly prefix?: string;
  /**
   * Jobs waiting or held at most; a batch that does not fit is refused whole.
   * @default {100000}
   */
  readonly capacity?: number;
  /** @default {86400000} */
  readonly deliveredRetentionMs?: number;
  /** @default {100000} */
  readonly maxDelivered?: number;
  /** @default {604800000} */
  readonly deadRetentionMs?: number;
  /** @default {10000} */
  readonly maxDeadPerTenant?: number;
  /**
   * Messages one message-log read looks at, at most: a query that matches
   * few messages answers a short page with a cursor to go on from, rather
   * than holding Redis for a scan of the whole log.
   * @default {5000}
   */
  readonly maxLogScan?: number;
}

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

/** Batches queued by one script at most. */
const MAX_ENQUEUE_GROUP = 256;

// ARGV: P, capacity, the batches as one JSON array, then the jobs' bodies in
// order (kept out of the JSON, so they are sent as given, not escaped twice).
// Each batch is [message, idempotency key or '', its answer, its expiry,
// jobs, tenant, creation time], each job [id, endpoint key, tenant, due, job
// JSON without body].
// Batches are taken in order, as if queued one by one; the reply holds two
// items per batch: its outcome and, for 'previous', the first answer.
const ENQUEUE = `${PRELUDE}
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

// ARGV: P, now, limit, leaseMs, perEndpoint, then pairs: endpoint key, its limit
const CLAIM = `${PRELUDE}
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

// ARGV: P, id, token, json (without body), state ('delivered' or 'dead'), finished, reason, tenant, maxDeadPerTenant,
// then the attempt to count: endpoint, bucket ('' for none), '1' for a success
const FINISH = `${PRELUDE}
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

// ARGV: P, expiresAt, then id and token of each lease; replies the (1-based) positions of the leases still held
const RENEW = `${PRELUDE}
local renewed = {}
for i = 3, #ARGV, 2 do
  if held(ARGV[i], ARGV[i + 1]) then
    redis.call('ZADD', P .. ':leases', 'XX', ARGV[2], ARGV[i])
    renewed[#renewed + 1] = (i - 1) / 2
  end
end
return renewed
`;

// ARGV: P, id, token, json (without body), due, then the attempt to count: tenant, endpoint, bucket ('' for none), '1' for a success
const WAIT = `${PRELUDE}
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

// ARGV: P, tenant; replies the tenant's dead jobs, newest first: json, body, due, reason, ep per job
const DEAD = `${PRELUDE}
local out = {}
for _, id in ipairs(redis.call('ZREVRANGE', P .. ':dead:' .. ARGV[2], 0, -1)) do
  local fields = redis.call('HMGET', P .. ':job:' .. id, 'job', 'body', 'due', 'reason', 'ep')
  if fields[1] then
    for i = 1, 5 do table.insert(out, fields[i]) end
  end
end
return out
`;

// ARGV: P, tenant, jobId ('' for all), endpoint key ('' for any), now, capacity
const REPLAY = `${PRELUDE}
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

// ARGV: P, message; replies json, body, due, state, reason, tenant per job
const MESSAGE = `${PRELUDE}
local out = {}
for _, id in ipairs(redis.call('LRANGE', P .. ':msg:' .. ARGV[2], 0, -1)) do
  local fields = redis.call('HMGET', P .. ':job:' .. id, 'job', 'body', 'due', 'state', 'reason', 'tenant')
  if fields[1] then
    for i = 1, 6 do table.insert(out, fields[i]) end
  end
end
return out
`;

// ARGV: P, tenant, upper bound (ZREVRANGEBYSCORE's max), the cursor's score and id ('' for none), lower bound,
// event, status ('pending', 'delivered', 'dead' or '' for any), endpoint key ('' for any), limit, most messages to look at.
// Replies 1 when more may follow (else 0), the score and id to go on from, then per message: its id, its number of
// jobs, and json, body, due, state, reason per job.
const MESSAGES = `${PRELUDE}
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

// ARGV: P, tenant, the first bucket; replies endpoint, attempts, successes per endpoint with attempts
const STATS = `${PRELUDE}
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

// ARGV: P, now; replies waiting, leased, dead, delayed
const DEPTH = `${PRELUDE}
promote(tonumber(ARGV[2]))
local counts = redis.call('HMGET', P .. ':count', 'waiting', 'leased', 'dead')
return {tonumber(counts[1]) or 0, tonumber(counts[2]) or 0, tonumber(counts[3]) or 0, redis.call('ZCARD', P .. ':delayed')}
`;

// ARGV: P; replies the earliest delayed due time and lease expiry ('' when none)
const NEXT_DUE = `${PRELUDE}
local delayed = redis.call('ZRANGE', P .. ':delayed', 0, 0, 'WITHSCORES')
local leases = redis.call('ZRANGE', P .. ':leases', 0, 0, 'WITHSCORES')
return {delayed[2] or '', leases[2] or ''}
`;

// ARGV: P, now, deliveredRetentionMs, maxDelivered, deadRetentionMs, the oldest stats bucket to keep
const SWEEP = `${PRELUDE}
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

/**
 * The {@linkcode JobQueue} on Redis: the state of every job in a hash, ready
 * jobs in one list per endpoint with a list of endpoint turns, retries and
 * leases in sorted sets by time, dead letters in a sorted set per tenant.
 * Every operation is one Lua script, so processes sharing the queue never
 * claim or move a job twice; a lease that expires (its worker died) makes the
 * job ready again. Keys share one prefix (a cluster hash tag by default).
 * @example
 * ```ts
 * const queue = new RedisQueue(await connectRedis("redis://127.0.0.1:6379"), { prefix: "{tributary}", capacity: 100_000 });
 * ```
 */
export class RedisQueue implements JobQueue {
  readonly #redis: RedisScripts;
  readonly #prefix: string;
  readonly #capacity: number;
  /** Batches waiting for the next group commit. */
  readonly #pending: { batch: EnqueueBatch; resolve: (result: EnqueueResult) => void; reject: (error: unknown) => void }[] = [];
  readonly #deliveredRetention: number;
  readonly #maxDelivered: number;
  readonly #deadRetention: number;
  readonly #maxDeadPerTenant: number;
  readonly #maxLogScan: number;

  /**
   * Uses a Redis connection.
   * @param redis the connection's scripts
   * @param options key prefix, capacity and retention
   */
  constructor(redis: RedisScripts, options: RedisQueueOptions = {}) {
    this.#redis = redis;
    this.#prefix = options.prefix ?? "{tributary}";
    this.#capacity = options.capacity ?? 100_000;
    this.#deliveredRetention = options.deliveredRetentionMs ?? 86_400_000;
    this.#maxDelivered = options.maxDelivered ?? 100_000;
    this.#deadRetention = options.deadRetentionMs ?? 604_800_000;
    this.#maxDeadPerTenant = options.maxDeadPerTenant ?? 10_000;
    this.#maxLogScan = options.maxLogScan ?? 5000;
  }

  /**
   * Queues the batch with the others that arrive in the same turn of the
   * event loop: one script for all of them (a group commit), each accepted,
   * refused or answered on its own.
   */
  enqueue(batch: EnqueueBatch): Promise<EnqueueResult> {
    return new Promise((resolve, reject) => {
      if (this.#pending.length === 0) setImmediate(() => void this.#flush());
      this.#pending.push({ batch, resolve, reject });
    });
  }

  async #flush(): Promise<void> {
    const pending = this.#pending.splice(0, MAX_ENQUEUE_GROUP);
    if (this.#pending.length > 0) setImmediate(() => void this.#flush());
    const batches = pending.map(({ batch }) => {
      const idempotency = batch.idempotency;
      return [
        batch.messageId,
        idempotency === undefined ? "" : `${batch.tenantId}\n${idempotency.key}`,
        idempotency === undefined ? "" : JSON.stringify(idempotency.answer),
        idempotency === undefined ? "0" : String(idempotency.expiresAt),
        batch.jobs.map((job) => [job.id, endpointKey(job.tenantId, job.endpointId), job.tenantId, String(job.dueAt), withoutBody(job)]),
        batch.tenantId,
        String(batch.jobs[0]?.createdAt ?? 0),
      ];
    });
    const args = [this.#prefix, String(this.#capacity), JSON.stringify(batches)];
    for (const { batch } of pending) for (const job of batch.jobs) args.push(job.body);
    let reply: string[];
    try {
      reply = (await this.#run(ENQUEUE, args)) as string[];
    } catch (error) {
      for (const { reject } of pending) reject(error);
      return;
    }
    pending.forEach(({ batch, resolve, reject }, i) => {
      const outcome = reply[2 * i];
      if (outcome === "previous") resolve({ accepted: false, previous: JSON.parse(reply[2 * i + 1]!) as IdempotentAnswer });
      else if (outcome === "full") reject(queueFull("queue the message", this.#capacity));
      else if (outcome === "exists") reject(new TypeError(`Cannot queue message ${batch.messageId}: it is queued already`));
      else resolve({ accepted: true });
    });
  }

  async claim(options: ClaimOptions): Promise<Lease[]> {
    const args = [this.#prefix, String(options.now), String(options.limit), String(options.leaseMs), String(options.perEndpoint ?? options.limit)];
    for (const [key, limit] of options.endpointLimits ?? []) args.push(key, String(limit));
    const reply = (await this.#run(CLAIM, args)) as string[];
    const leases: Lease[] = [];
    for (let i = 0; i < reply.length; i += 4) {
      leases.push({ job: loaded(reply[i]!, reply[i + 1]!, reply[i + 2]!), token: reply[i + 3]!, expiresAt: options.now + options.leaseMs });
    }
    return leases;
  }

  async renew(leases: readonly Lease[], expiresAt: number): Promise<Lease[]> {
    if (leases.length === 0) return [];
    const args = [this.#prefix, String(expiresAt)];
    for (const lease of leases) args.push(lease.job.id, lease.token);
    const positions = (await this.#run(RENEW, args)) as number[];
    return positions.map((position) => ({ ...leases[position - 1]!, expiresAt }));
  }

  async ack(lease: Lease, attempt: Attempt): Promise<boolean> {
    const job = { ...lease.job, attempts: [...lease.job.attempts, attempt] };
    return await this.#finish(lease, job, "delivered", attempt.at + attempt.latencyMs, "", attempt);
  }

  async retry(lease: Lease, attempt: Attempt, dueAt: number): Promise<boolean> {
    const job = { ...lease.job, attempts: [...lease.job.attempts, attempt] };
    const args = [this.#prefix, lease.job.id, lease.token, withoutBody(job), String(dueAt), job.tenantId, ...counted(job.endpointId, attempt)];
    return (await this.#run(WAIT, args)) === 1;
  }

  async release(lease: Lease, dueAt: number): Promise<boolean> {
    const args = [this.#prefix, lease.job.id, lease.token, withoutBody(lease.job), String(dueAt), lease.job.tenantId, ...counted(lease.job.endpointId, undefined)];
    return (await this.#run(WAIT, args)) === 1;
  }

  async bury(lease: Lease, death: Death): Promise<boolean> {
    const job = death.attempt === undefined ? lease.job : { ...lease.job, attempts: [...lease.job.attempts, death.attempt] };
    return await this.#finish(lease, job, "dead", death.at, death.reason, death.attempt);
  }

  async deadLetters(tenantId: string, query: DeadLetterQuery): Promise<JobView[]> {
    const reply = (await this.#run(DEAD, [this.#prefix, tenantId])) as string[];
    const views: JobView[] = [];
    const wanted = query.endpointId === undefined ? undefined : endpointKey(tenantId, query.endpointId);
    for (let i = 0; i < reply.length && views.length < query.limit; i += 5) {
      if (wanted !== undefined && reply[i + 4] !== wanted) continue;
      views.push({ ...loaded(reply[i]!, reply[i + 1]!, reply[i + 2]!), state: "dead", reason: reply[i + 3]! });
    }
    return views;
  }

  async replay(tenantId: string, target: { readonly jobId: string } | { readonly endpointId?: string }, now: number): Promise<number> {
    const jobId = "jobId" in target ? target.jobId : "";
    const endpoint = "jobId" in target || target.endpointId === undefined ? "" : endpointKey(tenantId, target.endpointId);
    const replayed = (await this.#run(REPLAY, [this.#prefix, tenantId, jobId, endpoint, String(now), String(this.#capacity)])) as number;
    if (replayed < 0) {
      throw queueFull("replay the jobs", this.#capacity);
    }
    return replayed;
  }

  async message(tenantId: string, messageId: string): Promise<JobView[]> {
    const reply = (await this.#run(MESSAGE, [this.#prefix, messageId])) as string[];
    const views: JobView[] = [];
    for (let i = 0; i < reply.length; i += 6) {
      if (reply[i + 5] !== tenantId) continue;
      const state = reply[i + 3] as JobState;
      const job = loaded(reply[i]!, reply[i + 1]!, reply[i + 2]!);
      views.push(state === "dead" ? { ...job, state, reason: reply[i + 4]! } : { ...job, state });
    }
    return views;
  }

  async messages(tenantId: string, query: MessageQuery): Promise<MessagePage> {
    const { after, until, since } = query;
    let max = "+inf";
    let cursor = ["", ""];
    if (after !== undefined && (until === undefined || after.createdAt < until)) {
      max = String(after.createdAt);
      cursor = [String(after.createdAt), after.messageId];
    } else if (until !== undefined) {
      max = `(${until}`;
    }
    const args = [
      this.#prefix,
      tenantId,
      max,
      ...cursor,
      since === undefined ? "-inf" : String(since),
      query.event ?? "",
      query.status ?? "",
      query.endpointId === undefined ? "" : endpointKey(tenantId, query.endpointId),
      String(query.limit),
      String(this.#maxLogScan),
    ];
    const reply = (await this.#run(MESSAGES, args)) as (string | number)[];
    const messages: JobView[][] = [];
    for (let i = 3; i < reply.length;) {
      const count = reply[i + 1] as number;
      i += 2;
      const jobs: JobView[] = [];
      for (let j = 0; j < count; j++, i += 5) {
        const job = loaded(reply[i] as string, reply[i + 1] as string, reply[i + 2] as string);
        const state = reply[i + 3] as JobState;
        jobs.push(state === "dead" ? { ...job, state, reason: reply[i + 4] as string } : { ...job, state });
      }
      messages.push(jobs);
    }
    if (reply[0] !== 1) return { messages };
    return { messages, next: { createdAt: Number(reply[1]), messageId: reply[2] as string } };
  }

  async attemptStats(tenantId: string, since: number): Promise<AttemptCounts[]> {
    const reply = (await this.#run(STATS, [this.#prefix, tenantId, String(bucketOf(since))])) as (string | number)[];
    const counts: AttemptCounts[] = [];
    for (let i = 0; i < reply.length; i += 3) {
      counts.push({ endpointId: reply[i] as string, attempts: reply[i + 1] as number, successes: reply[i + 2] as number });
    }
    return counts.sort((a, b) => (a.endpointId < b.endpointId ? -1 : a.endpointId > b.endpointId ? 1 : 0));
  }

  async depth(now: number): Promise<QueueDepth> {
    const [waiting, leased, dead, delayed] = (await this.#run(DEPTH, [this.#prefix, String(now)])) as number[];
    return { ready: waiting! - delayed!, delayed: delayed!, leased: leased!, dead: dead! };
  }

  async nextDue(): Promise<number | undefined> {
    const times = ((await this.#run(NEXT_DUE, [this.#prefix])) as string[]).filter((at) => at !== "").map(Number);
    return times.length === 0 ? undefined : Math.min(...times);
  }

  async sweep(now: number): Promise<void> {
    await this.#run(SWEEP, [
      this.#prefix,
      String(now),
      String(this.#deliveredRetention),
      String(this.#maxDelivered),
      String(this.#deadRetention),
      String(bucketOf(now - ATTEMPT_STATS_RETENTION_MS)),
    ]);
  }

  async close(): Promise<void> {
    await this.#redis.close();
  }

  async #finish(lease: Lease, job: Job, state: "delivered" | "dead", at: number, reason: string, attempt: Attempt | undefined): Promise<boolean> {
    const args = [
      this.#prefix,
      lease.job.id,
      lease.token,
      withoutBody(job),
      state,
      String(at),
      reason,
      job.tenantId,
      String(this.#maxDeadPerTenant),
      ...counted(job.endpointId, attempt),
    ];
    return (await this.#run(FINISH, args)) === 1;
  }

  async #run(script: string, args: readonly string[]): Promise<unknown> {
    try {
      return await this.#redis.run(script, args);
    } catch (error) {
      throw new RelayError("ERR_RELAY_QUEUE_UNAVAILABLE", `Cannot use the Redis queue: ${(error as Error).message}`, {
        retryAfterMs: 1000,
        cause: error,
      });
    }
  }
}

/** The ARGV that count an attempt in a script: endpoint, bucket ('' for no attempt), '1' for a success. */
function counted(endpointId: string, attempt: Attempt | undefined): string[] {
  if (attempt === undefined) return [endpointId, "", "0"];
  return [endpointId, String(bucketOf(attempt.at)), attempt.outcome === "success" ? "1" : "0"];
}

/**
 * A job's JSON without its body: the body is kept in a field of its own,
 * written once, and not escaped into JSON (for a 1 KiB body, that escaping
 * was most of an enqueue's cost).
 */
function withoutBody(job: Job): string {
  const { body: _body, ...rest } = job;
  return JSON.stringify(rest);
}

/** A job as kept in Redis: its JSON, its body, and the due time from the hash field beside them, which scripts change. */
function loaded(json: string, body: string, due: string): Job {
  return { ...(JSON.parse(json) as Omit<Job, "body">), body, dueAt: Number(due) };
}
