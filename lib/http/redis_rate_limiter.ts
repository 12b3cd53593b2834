import { bucketQuota, type RateDecision, type RateQuota } from "./rate_limiter.ts";

/** What {@linkcode RedisRateLimiter} needs of a Redis connection: atomic Lua scripts (`connectRedis` of the storage domain gives one). */
export interface ScriptRunner {
  run(script: string, args: readonly string[]): Promise<unknown>;
}

/** Options of {@linkcode RedisRateLimiter}. */
export interface RedisRateLimiterOptions {
  /** Sustained requests per second per key over every replica; 0 turns the rate limit off. */
  readonly ratePerSecond: number;
  /**
   * Requests a key may make at once after being idle.
   * @default {Math.max(1, ratePerSecond)}
   */
  readonly burst?: number;
  /** Requests per key in flight at once over every replica; 0 turns the limit off. */
  readonly maxConcurrent: number;
  /**
   * How long a permit counts when its process dies before releasing it, milliseconds.
   * @default {60000}
   */
  readonly permitTtlMs?: number;
  /**
   * Prefix of the limiter's keys.
   * @default {"tributary:"}
   */
  readonly prefix?: string;
  /** Unique permit ids (a counter with a process id suffices). */
  readonly permitId: () => string;
}

/**
 * One token bucket per key, and the key's permits in flight, on the Redis
 * clock; every check one script, so that replicas never interleave inside it.
 * Replies: `{1, tokens}` granted, `{0, 1, tokens}` too many in flight,
 * `{0, 2, seconds, tokens}` over the rate; `tokens` (what the bucket holds
 * after the check, as text since Redis cuts a Lua number to an integer) is
 * `''` without a rate.
 */
const ACQUIRE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local bucket = ARGV[1] .. 'rate:bucket:' .. ARGV[2]
local flight = ARGV[1] .. 'rate:flight:' .. ARGV[2]
local rate = tonumber(ARGV[3])
local burst = tonumber(ARGV[4])
local maxc = tonumber(ARGV[5])
local ttl = tonumber(ARGV[7])
local tokens = ''
if rate > 0 then
  local held = tonumber(redis.call('HGET', bucket, 't') or burst)
  local at = tonumber(redis.call('HGET', bucket, 'u') or now)
  tokens = math.min(burst, held + (now - at) * rate / 1000)
end
if maxc > 0 then
  redis.call('ZREMRANGEBYSCORE', flight, '-inf', now)
  if redis.call('ZCARD', flight) >= maxc then return {0, 1, tostring(tokens)} end
end
if rate > 0 then
  if tokens < 1 then
    redis.call('HSET', bucket, 't', tostring(tokens), 'u', tostring(now))
    redis.call('PEXPIRE', bucket, math.ceil(burst / rate * 1000) + 1000)
    return {0, 2, math.max(1, math.ceil((1 - tokens) / rate)), tostring(tokens)}
  end
  tokens = tokens - 1
  redis.call('HSET', bucket, 't', tostring(tokens), 'u', tostring(now))
  redis.call('PEXPIRE', bucket, math.ceil(burst / rate * 1000) + 1000)
end
if maxc > 0 then
  redis.call('ZADD', flight, now + ttl, ARGV[6])
  redis.call('PEXPIRE', flight, ttl)
end
return {1, tostring(tokens)}
`;

const RELEASE = `return redis.call('ZREM', ARGV[1] .. 'rate:flight:' .. ARGV[2], ARGV[3])`;

/** Pushes a permit's expiry on (only if it is still held), on the Redis clock. */
const RENEW = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local flight = ARGV[1] .. 'rate:flight:' .. ARGV[2]
redis.call('ZADD', flight, 'XX', now + tonumber(ARGV[4]), ARGV[3])
redis.call('PEXPIRE', flight, tonumber(ARGV[4]))
return 1
`;

/**
 * The per-key limits of {@linkcode RateLimiter} counted in Redis
 * (`RATE_LIMIT_REDIS_URL`), so that N replicas together allow what one
 * allows: a token bucket on the Redis server's clock, and permits in flight
 * that expire after `permitTtlMs` when their process dies holding them.
 * A Redis that cannot be reached rejects `acquire`, which `withRateLimit`
 * answers 503 with `Retry-After`.
 * @example
 * ```ts
 * const limiter = new RedisRateLimiter(await connectRedis(url), { ratePerSecond: 2, maxConcurrent: 1, permitId: () => `${process.pid}:${++n}` });
 * ```
 */
export class RedisRateLimiter {
  readonly #redis: ScriptRunner;
  readonly #args: readonly string[];
  readonly #maxConcurrent: number;
  readonly #prefix: string;
  readonly #permitId: () => string;
  readonly #ttl: string;
  readonly #rate: number;
  readonly #burst: number;
  /** Releases under way by key: an acquire of the key waits for them, so that this process sees its own releases. */
  readonly #releasing = new Map<string, Promise<unknown>>();

  /**
   * Uses a Redis connection.
   * @param redis the connection's scripts
   * @param options the limits and the permit ids
   * @throws {RangeError} when a limit is negative or not finite
   */
  constructor(redis: ScriptRunner, options: RedisRateLimiterOptions) {
    for (
      const [name, value] of [["ratePerSecond", options.ratePerSecond], [
        "maxConcurrent",
        options.maxConcurrent,
      ], ["burst", options.burst ?? 1]] as const
    ) {
      if (!Number.isFinite(value) || value < 0) {
        throw new RangeError(
          `Cannot create a rate limiter: "${name}" must be >= 0: current value is ${value}`,
        );
      }
    }
    this.#redis = redis;
    this.#maxConcurrent = options.maxConcurrent;
    this.#prefix = options.prefix ?? "tributary:";
    this.#permitId = options.permitId;
    const burst = options.burst ?? Math.max(1, options.ratePerSecond);
    this.#args = [String(options.ratePerSecond), String(burst), String(options.maxConcurrent)];
    this.#rate = options.ratePerSecond;
    this.#burst = burst;
    this.#ttl = String(options.permitTtlMs ?? 60_000);
  }

  /**
   * Asks to start one request for a key, in one round trip.
   * @param key who the request counts against
   * @returns a permit with `release()`, or the reason and the seconds to wait
   * @throws {Error} when Redis cannot be reached
   */
  async acquire(key: string): Promise<RateDecision> {
    const permit = this.#permitId();
    await this.#releasing.get(key);
    const reply = await this.#redis.run(ACQUIRE, [
      this.#prefix,
      key,
      ...this.#args,
      permit,
      this.#ttl,
    ]) as (number | string)[];
    if (reply[0] !== 1) {
      return reply[1] === 1
        ? { ok: false, reason: "concurrency", retryAfterSeconds: 1, ...this.#quota(reply[2]) }
        : {
          ok: false,
          reason: "rate",
          retryAfterSeconds: Number(reply[2] ?? 1),
          ...this.#quota(reply[3]),
        };
    }
    let released = false;
    const held = this.#maxConcurrent > 0;
    return {
      ok: true,
      ...this.#quota(reply[1]),
      // A long stream (a CSV download at the client's pace) keeps its permit while it runs.
      ...(held
        ? {
          renew: async () => {
            // A renewal that fails leaves the permit to expire, as a release that fails does.
            if (!released) {
              await this.#redis.run(RENEW, [this.#prefix, key, permit, this.#ttl])
                .catch(() => {});
            }
          },
          renewEveryMs: Math.max(1000, Math.floor(Number(this.#ttl) / 3)),
        }
        : {}),
      release: () => {
        if (released || this.#maxConcurrent === 0) return;
        released = true;
        // A release that fails leaves the permit to expire.
        const done: Promise<unknown> = this.#redis.run(RELEASE, [this.#prefix, key, permit]).catch(
          () => {},
        ).finally(() => {
          if (this.#releasing.get(key) === done) this.#releasing.delete(key);
        });
        this.#releasing.set(key, done);
      },
    };
  }

  /** The `quota` field of a decision from the tokens the script reports: none without a rate. */
  #quota(tokens: number | string | undefined): { quota?: RateQuota } {
    if (this.#rate <= 0 || tokens === undefined || tokens === "") return {};
    return { quota: bucketQuota(Number(tokens), this.#burst, this.#rate) };
  }
}
