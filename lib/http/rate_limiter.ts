/** Options of {@linkcode RateLimiter}. */
export interface RateLimiterOptions {
  /** Sustained requests per second per key; 0 turns the rate limit off. */
  ratePerSecond: number;
  /**
   * Requests a key may make at once after being idle.
   * @default {Math.max(1, ratePerSecond)}
   */
  burst?: number;
  /** Requests per key in flight at once; 0 turns the limit off. */
  maxConcurrent: number;
  /** Monotonic clock in milliseconds. */
  now: () => number;
  /**
   * Keys tracked before idle ones are forgotten.
   * @default {10000}
   */
  maxKeys?: number;
}

/**
 * Where a key stands against the rate, as the `RateLimit-*` headers tell it
 * (IETF draft-ietf-httpapi-ratelimit-headers): the bucket's size, the whole
 * requests left in it now, and the seconds until it is full again.
 */
export interface RateQuota {
  /** Requests a key may make at once after being idle: the burst. */
  readonly limit: number;
  /** Whole requests left now, after this one. */
  readonly remaining: number;
  /** Seconds until the bucket is full again (0 when it is). */
  readonly resetSeconds: number;
  /** Seconds in which an empty bucket fills: `limit / ratePerSecond`, rounded up. */
  readonly windowSeconds: number;
}

/** The limiter's answer: a permit to release when done, or a refusal; `quota` is absent when no rate is set. */
export type RateDecision =
  | {
    readonly ok: true;
    readonly release: () => void;
    /** For a permit that expires (a shared limiter's): keeps it alive, to be called every `renewEveryMs` while the answer streams. */
    readonly renew?: () => void | Promise<void>;
    readonly renewEveryMs?: number;
    readonly quota?: RateQuota | undefined;
  }
  | {
    readonly ok: false;
    readonly reason: "rate" | "concurrency";
    readonly retryAfterSeconds: number;
    readonly quota?: RateQuota;
  };

/**
 * The quota of a bucket holding `tokens` (fractional) of `burst`, refilled at `rate` per second.
 * @param tokens what the bucket holds now
 * @param burst its size
 * @param rate requests per second, above 0
 * @returns the quota the headers tell
 */
export function bucketQuota(tokens: number, burst: number, rate: number): RateQuota {
  return {
    limit: burst,
    remaining: Math.max(0, Math.floor(tokens)),
    resetSeconds: Math.max(0, Math.ceil((burst - tokens) / rate - 1e-9)),
    windowSeconds: Math.ceil(burst / rate - 1e-9),
  };
}

interface Bucket {
  tokens: number;
  updatedAt: number;
  inFlight: number;
}

/**
 * A granted request: one object that is both the decision and its quota, with
 * `release` on the prototype, so that the hit path allocates it alone (no
 * closure, no quota record, no spread).
 */
class Permit implements RateQuota {
  readonly ok = true as const;
  readonly limit: number;
  readonly remaining: number;
  readonly resetSeconds: number;
  readonly windowSeconds: number;
  /** Itself, when a rate is set (what the `RateLimit-*` headers tell); none without. */
  readonly quota: RateQuota | undefined;
  #bucket: Bucket | undefined;

  constructor(bucket: Bucket, burst: number, rate: number) {
    this.#bucket = bucket;
    if (rate > 0) {
      const tokens = bucket.tokens;
      this.limit = burst;
      this.remaining = Math.max(0, Math.floor(tokens));
      this.resetSeconds = Math.max(0, Math.ceil((burst - tokens) / rate - 1e-9));
      this.windowSeconds = Math.ceil(burst / rate - 1e-9);
      this.quota = this;
    } else {
      this.limit =
        this.remaining =
        this.resetSeconds =
        this.windowSeconds =
          0;
      this.quota = undefined;
    }
  }

  /** Ends the request's hold on its key; a second call does nothing. */
  release(): void {
    if (this.#bucket === undefined) return;
    this.#bucket.inFlight--;
    this.#bucket = undefined;
  }
}

/**
 * A per-key token bucket plus a per-key limit on requests in flight. Time
 * comes from the injected clock, so tests control it.
 * @example
 * ```ts
 * const limiter = new RateLimiter({ ratePerSecond: 2, maxConcurrent: 1, now: () => performance.now() });
 * const decision = limiter.acquire("key-a");
 * if (decision.ok) decision.release();
 * ```
 */
export class RateLimiter {
  readonly #rate: number;
  readonly #burst: number;
  readonly #maxConcurrent: number;
  readonly #now: () => number;
  readonly #maxKeys: number;
  readonly #buckets = new Map<string, Bucket>();

  /**
   * Creates a limiter.
   * @param options rate, burst, concurrency and clock
   * @throws {RangeError} when a limit is negative or not finite
   */
  constructor(options: RateLimiterOptions) {
    for (
      const [name, value] of [
        ["ratePerSecond", options.ratePerSecond],
        ["maxConcurrent", options.maxConcurrent],
        ["burst", options.burst ?? 1],
      ] as const
    ) {
      if (!Number.isFinite(value) || value < 0) {
        throw new RangeError(
          `Cannot create a rate limiter: "${name}" must be >= 0: current value is ${value}`,
        );
      }
    }
    this.#rate = options.ratePerSecond;
    this.#burst = options.burst ?? Math.max(1, options.ratePerSecond);
    this.#maxConcurrent = options.maxConcurrent;
    this.#now = options.now;
    this.#maxKeys = options.maxKeys ?? 10_000;
  }

  /**
   * Asks to start one request for a key.
   * @param key who the request counts against
   * @returns a permit with `release()`, or the reason and the seconds to wait
   */
  acquire(key: string): RateDecision {
    const now = this.#now();
    let bucket = this.#buckets.get(key);
    if (bucket === undefined) {
      if (this.#buckets.size >= this.#maxKeys) this.#forgetIdle(now);
      bucket = { tokens: this.#burst, updatedAt: now, inFlight: 0 };
      this.#buckets.set(key, bucket);
    }
    if (this.#rate > 0) {
      bucket.tokens = Math.min(
        this.#burst,
        bucket.tokens + ((now - bucket.updatedAt) * this.#rate) / 1000,
      );
      bucket.updatedAt = now;
    }
    if (this.#maxConcurrent > 0 && bucket.inFlight >= this.#maxConcurrent) {
      return {
        ok: false,
        reason: "concurrency",
        retryAfterSeconds: 1,
        ...this.#quota(bucket.tokens),
      };
    }
    if (this.#rate > 0) {
      if (bucket.tokens < 1) {
        const seconds = Math.max(1, Math.ceil((1 - bucket.tokens) / this.#rate));
        return {
          ok: false,
          reason: "rate",
          retryAfterSeconds: seconds,
          ...this.#quota(bucket.tokens),
        };
      }
      bucket.tokens -= 1;
    }
    bucket.inFlight++;
    return new Permit(bucket, this.#rate > 0 ? this.#burst : 0, this.#rate);
  }

  /** The `quota` field of a decision: none without a rate. */
  #quota(tokens: number): { quota?: RateQuota } {
    return this.#rate > 0 ? { quota: bucketQuota(tokens, this.#burst, this.#rate) } : {};
  }

  #forgetIdle(now: number): void {
    for (const [key, bucket] of this.#buckets) {
      const refilled = bucket.tokens + ((now - bucket.updatedAt) * this.#rate) / 1000;
      if (bucket.inFlight === 0 && (this.#rate === 0 || refilled >= this.#burst)) {
        this.#buckets.delete(key);
      }
    }
  }
}
