import { signWebhook } from "../crypto/mod.ts";
import { retryAfterDelay, retryDelay, type RetrySchedule } from "./backoff.ts";
import type { Deliver, DeliveryResult } from "./http_delivery.ts";
import {
  type Attempt,
  type AttemptOutcome,
  endpointKey,
  type Job,
  type Lease,
  type QueueLifecycle,
} from "./queue.ts";
import type { TenantDirectory } from "./endpoint_directory.ts";
import { type Endpoint, signingKeys } from "./tenants.ts";

/** Options of {@linkcode RelayWorker}. */
export interface RelayWorkerOptions {
  /** The queue's lifecycle half: the worker claims, renews and moves jobs, and shows none. */
  readonly queue: QueueLifecycle;
  /** The endpoints; an endpoint answering 410 is disabled through it. */
  readonly registry: TenantDirectory;
  readonly deliver: Deliver;
  readonly schedule: RetrySchedule;
  /** Wall clock, milliseconds since the epoch. */
  readonly now: () => number;
  /** A number in [0, 1), for jitter. */
  readonly random: () => number;
  /** Runs `task` after `ms`; returns a function that cancels it. */
  readonly setTimer: (task: () => void, ms: number) => () => void;
  /**
   * Runs `task` once the I/O of the event loop's current turn is handled:
   * the messages queued and the deliveries finished in one turn wake the
   * worker once, and one claim takes their jobs and fills the freed slots.
   * @default {setImmediate}
   */
  readonly defer?: (task: () => void) => void;
  /**
   * Deliveries in flight at most, over all endpoints.
   * @default {64}
   */
  readonly concurrency?: number;
  /**
   * Deliveries in flight at most to one endpoint.
   * @default {8}
   */
  readonly perEndpointConcurrency?: number;
  /**
   * How long a delivery may take before it counts as a timeout, milliseconds.
   * @default {15000}
   */
  readonly deliveryTimeoutMs?: number;
  /**
   * How often to look for due jobs queued by other processes, milliseconds.
   * @default {1000}
   */
  readonly pollIntervalMs?: number;
  /**
   * How long a claim holds a job, milliseconds. While its delivery runs the
   * lease is renewed every fifth of this (a heartbeat), so a delivery may
   * take longer; when the process dies the heartbeats stop and the job is
   * due again for the other processes this long after the last one.
   * @default {5000}
   */
  readonly leaseMs?: number;
  /** Told of every attempt, e.g. for metrics. */
  readonly onAttempt?: (job: Job, attempt: Attempt) => void;
  /** Told of every job moved to the dead letters. */
  readonly onDead?: (job: Job, reason: string) => void;
  /** Told of queue errors the worker survives (it tries again on its next wake-up). */
  readonly onError?: (error: unknown) => void;
}

/** Wait before a job of a busy endpoint (at its concurrency cap) is tried again, milliseconds. */
const BUSY_DELAY_MS = 50;
/**
 * How long after its intake a job whose endpoint this process does not know
 * waits for it (the endpoint's creation on another process reaches this one
 * within a second) before it counts as deleted, milliseconds.
 */
const UNKNOWN_ENDPOINT_GRACE_MS = 5000;
/** Wait before a job whose endpoint this process does not know yet is looked at again, milliseconds. */
const UNKNOWN_ENDPOINT_RETRY_MS = 500;

/**
 * Claims due jobs and delivers them with bounded concurrency, globally and
 * per endpoint, and a per-endpoint rate limit. 2xx acknowledges; 410
 * disables the endpoint and buries the job; 429 and 503 retry after
 * `Retry-After` (at most the schedule's longest delay) or the schedule's
 * delay; anything else (3xx included), timeouts, refused addresses and
 * connection errors retry on the schedule until attempts run out, then the
 * job goes to the dead letters. Retries wait in the queue, never in the
 * worker, so a failing endpoint holds back no other.
 * @example
 * ```ts
 * const worker = new RelayWorker({
 *   queue,
 *   registry,
 *   deliver: createHttpDelivery({ policy: createAddressPolicy({ allow: [] }) }).deliver,
 *   schedule: DEFAULT_RETRY_SCHEDULE,
 *   now: Date.now,
 *   random: Math.random,
 *   setTimer: (task, ms) => {
 *     const timer = setTimeout(task, ms);
 *     return () => clearTimeout(timer);
 *   },
 * });
 * worker.start();
 * // at shutdown, after intake stops:
 * await worker.stop();
 * ```
 */
export class RelayWorker {
  readonly #options: RelayWorkerOptions;
  readonly #concurrency: number;
  readonly #perEndpoint: number;
  readonly #timeout: number;
  readonly #leaseMs: number;
  readonly #pollInterval: number;
  readonly #maxRetryAfter: number;
  readonly #inFlight = new Set<Promise<void>>();
  /** The leases of the deliveries in flight, renewed by the heartbeat. */
  readonly #held = new Set<Lease>();
  #cancelBeat: (() => void) | undefined;
  readonly #byEndpoint = new Map<string, number>();
  readonly #buckets = new Map<string, { tokens: number; at: number; rate: number }>();
  #running = false;
  #pumping: Promise<void> | undefined;
  #again = false;
  /** The wake-up that {@linkcode RelayWorker.notify} asked for, until it runs. */
  #soon: Promise<void> | undefined;
  readonly #defer: (task: () => void) => void;
  #cancelTimer: (() => void) | undefined;
  #timerAt = Number.POSITIVE_INFINITY;

  /**
   * Creates a stopped worker.
   * @param options queue, registry, delivery, schedule, clock, timers and limits
   */
  constructor(options: RelayWorkerOptions) {
    this.#options = options;
    this.#concurrency = options.concurrency ?? 64;
    this.#perEndpoint = options.perEndpointConcurrency ?? 8;
    this.#timeout = options.deliveryTimeoutMs ?? 15_000;
    // Short, and renewed while the delivery runs: a live worker keeps its jobs, a dead one's come back soon.
    this.#leaseMs = options.leaseMs ?? 5000;
    this.#pollInterval = options.pollIntervalMs ?? 1000;
    this.#defer = options.defer ?? setImmediate;
    const schedule = options.schedule;
    this.#maxRetryAfter = schedule.kind === "fixed"
      ? Math.max(0, ...schedule.delaysMs)
      : schedule.capMs;
  }

  /** Deliveries in flight now. */
  get inFlight(): number {
    return this.#inFlight.size;
  }

  /** Starts claiming and delivering. */
  start(): void {
    this.#running = true;
    this.#wake();
  }

  /**
   * Tells the worker that jobs may be due now, e.g. after intake: it looks
   * once the I/O of the event loop's turn is handled, so the messages and
   * the answers of one turn make one look.
   */
  notify(): void {
    if (!this.#running || this.#soon !== undefined) return;
    this.#soon = new Promise((resolve) => {
      this.#defer(() => {
        this.#soon = undefined;
        this.#wake();
        resolve();
      });
    });
  }

  /** Looks for due jobs now (or again once the look under way ends). */
  #wake(): void {
    if (!this.#running) return;
    if (this.#pumping !== undefined) {
      this.#again = true;
      return;
    }
    this.#again = false;
    this.#pumping = this.#pump().finally(() => {
      this.#pumping = undefined;
      // A wake-up that came after the last look is not lost.
      if (this.#again) this.#wake();
    });
  }

  /** Stops claiming, and resolves when the deliveries in flight have finished and been recorded. */
  async stop(): Promise<void> {
    this.#running = false;
    this.#cancelTimer?.();
    this.#cancelTimer = undefined;
    while (this.#inFlight.size > 0) await Promise.all([...this.#inFlight]);
    this.#cancelBeat?.();
    this.#cancelBeat = undefined;
  }

  /** Resolves when nothing is in flight (for tests and benchmarks). */
  async idle(): Promise<void> {
    while (this.#inFlight.size > 0 || this.#pumping !== undefined || this.#soon !== undefined) {
      await Promise.all([...this.#inFlight, this.#pumping, this.#soon]);
    }
  }

  async #pump(): Promise<void> {
    try {
      do {
        this.#again = false;
        let tokenWait = Number.POSITIVE_INFINITY;
        while (this.#running && this.#inFlight.size < this.#concurrency) {
          const now = this.#options.now();
          const limit = this.#concurrency - this.#inFlight.size;
          const limits = this.#endpointLimits(now);
          tokenWait = limits.tokenWait;
          const leases = await this.#options.queue.claim({
            now,
            limit,
            leaseMs: this.#leaseMs,
            perEndpoint: this.#perEndpoint,
            endpointLimits: limits.limits,
          });
          for (const lease of leases) this.#start(lease);
          // Fewer than asked: what is still ready belongs to endpoints at their caps.
          if (leases.length < limit) break;
        }
        await this.#arm(tokenWait);
      } while (this.#again && this.#running);
    } catch (error) {
      this.#options.onError?.(error);
      this.#wakeIn(this.#pollInterval);
    }
  }

  /**
   * What the next claim may take of each endpoint that is busy or out of
   * rate tokens, and how soon a rate-limited endpoint has a token again.
   */
  #endpointLimits(now: number): { limits: Map<string, number>; tokenWait: number } {
    const limits = new Map<string, number>();
    for (const [key, busy] of this.#byEndpoint) limits.set(key, this.#perEndpoint - busy);
    let tokenWait = Number.POSITIVE_INFINITY;
    for (const [key, bucket] of this.#buckets) {
      const tokens = refill(bucket, now);
      if (tokens >= Math.max(1, bucket.rate)) {
        // Full again: the endpoint is as if never limited.
        this.#buckets.delete(key);
        continue;
      }
      const whole = Math.floor(tokens);
      limits.set(key, Math.min(limits.get(key) ?? this.#perEndpoint, whole));
      if (whole === 0) {
        tokenWait = Math.min(tokenWait, Math.ceil(((1 - tokens) * 1000) / bucket.rate));
      }
    }
    return { limits, tokenWait };
  }

  /** Sets the timer for the next due job, a rate token, or the poll interval, whichever is soonest. */
  async #arm(tokenWait: number): Promise<void> {
    if (!this.#running) return;
    const next = await this.#options.queue.nextDue();
    const now = this.#options.now();
    const due = next === undefined ? this.#pollInterval : Math.max(0, next - now);
    const wait = Math.min(this.#pollInterval, due, tokenWait);
    // With every slot busy, a finishing delivery wakes the worker.
    if (this.#inFlight.size >= this.#concurrency) return;
    this.#wakeIn(wait);
  }

  #wakeIn(ms: number): void {
    if (!this.#running) return;
    const at = this.#options.now() + ms;
    if (this.#cancelTimer !== undefined && this.#timerAt <= at) return;
    this.#cancelTimer?.();
    this.#timerAt = at;
    this.#cancelTimer = this.#options.setTimer(() => {
      this.#cancelTimer = undefined;
      this.#timerAt = Number.POSITIVE_INFINITY;
      this.#wake();
    }, ms);
  }

  #start(lease: Lease): void {
    this.#held.add(lease);
    this.#armBeat();
    const task = this.#handle(lease).catch((error: unknown) => this.#options.onError?.(error));
    this.#inFlight.add(task);
    void task.finally(() => {
      this.#held.delete(lease);
      this.#inFlight.delete(task);
      this.notify();
    });
  }

  /** Sets the heartbeat's timer while leases are held. */
  #armBeat(): void {
    if (this.#cancelBeat !== undefined || this.#held.size === 0) return;
    this.#cancelBeat = this.#options.setTimer(() => {
      this.#cancelBeat = undefined;
      if (this.#held.size === 0) return;
      // A renewal that fails (the backend away) is tried again at the next beat; a lease lost meanwhile only means the job may go twice.
      this.#options.queue.renew([...this.#held], this.#options.now() + this.#leaseMs).catch((
        error: unknown,
      ) => this.#options.onError?.(error));
      this.#armBeat();
    }, Math.max(1, Math.floor(this.#leaseMs / 5)));
  }

  async #handle(lease: Lease): Promise<void> {
    const { queue, registry } = this.#options;
    const job = lease.job;
    const endpoint = registry.endpoint(job.tenantId, job.endpointId);
    const now = this.#options.now();
    if (endpoint === undefined) {
      // Made on another process a moment ago, its endpoint may not have reached this one yet: wait for it a little.
      if (now - job.createdAt < UNKNOWN_ENDPOINT_GRACE_MS) {
        await queue.release(lease, now + UNKNOWN_ENDPOINT_RETRY_MS);
        return;
      }
      return this.#bury(lease, undefined, "the endpoint was deleted", now);
    }
    if (!endpoint.enabled) {
      return this.#bury(
        lease,
        undefined,
        `the endpoint is disabled (${endpoint.disabledReason ?? "by the tenant"})`,
        now,
      );
    }
    const key = endpointKey(job.tenantId, job.endpointId);
    const busy = this.#byEndpoint.get(key) ?? 0;
    if (busy >= this.#perEndpoint) {
      await queue.release(lease, now + BUSY_DELAY_MS);
      return;
    }
    const wait = this.#rateWait(key, endpoint, now);
    if (wait > 0) {
      await queue.release(lease, now + wait);
      return;
    }
    this.#byEndpoint.set(key, busy + 1);
    let result: DeliveryResult;
    const started = this.#options.now();
    try {
      result = await this.#options.deliver({
        url: endpoint.url,
        headers: headersFor(job, endpoint, started),
        body: job.body,
        timeoutMs: this.#timeout,
      });
    } finally {
      const left = (this.#byEndpoint.get(key) ?? 1) - 1;
      if (left === 0) this.#byEndpoint.delete(key);
      else this.#byEndpoint.set(key, left);
    }
    const finished = this.#options.now();
    const attempt = attemptOf(result, started, finished - started);
    this.#options.onAttempt?.(job, attempt);
    if (attempt.outcome === "success") {
      await queue.ack(lease, attempt);
      return;
    }
    if (attempt.outcome === "gone") {
      try {
        await registry.disableEndpoint(
          job.tenantId,
          job.endpointId,
          "the receiver answered 410 Gone",
        );
      } catch (error) {
        // The store is away: the job is buried all the same, and the next 410 tries again.
        this.#options.onError?.(error);
      }
      return this.#bury(
        lease,
        attempt,
        "the receiver answered 410 Gone; the endpoint is disabled",
        finished,
      );
    }
    const made = job.attempts.length + 1;
    const delay = retryDelay(made + 1, this.#options.schedule, this.#options.random);
    if (delay === undefined) {
      return this.#bury(lease, attempt, `all ${made} attempts failed`, finished);
    }
    const asked = result.kind === "response" && attempt.outcome === "throttled"
      ? retryAfterDelay(result.retryAfter, finished)
      : undefined;
    const pause = asked === undefined ? delay : Math.min(asked, this.#maxRetryAfter);
    await queue.retry(lease, attempt, finished + pause);
  }

  async #bury(
    lease: Lease,
    attempt: Attempt | undefined,
    reason: string,
    at: number,
  ): Promise<void> {
    if (
      await this.#options.queue.bury(lease, {
        ...(attempt === undefined ? {} : { attempt }),
        reason,
        at,
      })
    ) {
      this.#options.onDead?.(lease.job, reason);
    }
  }

  /** Milliseconds until the endpoint's token bucket has a token; 0 takes one now. */
  #rateWait(key: string, endpoint: Endpoint, now: number): number {
    const rate = endpoint.rateLimitPerSecond;
    if (rate === undefined) {
      this.#buckets.delete(key);
      return 0;
    }
    let bucket = this.#buckets.get(key);
    if (bucket === undefined) {
      this.#buckets.set(key, bucket = { tokens: Math.max(1, rate), at: now, rate });
    }
    bucket.rate = rate;
    const tokens = refill(bucket, now);
    if (tokens >= 1) {
      bucket.tokens = tokens - 1;
      return 0;
    }
    return Math.ceil(((1 - tokens) * 1000) / rate);
  }
}

/** Brings a token bucket (burst: one second's tokens, at least 1) up to `now`; returns its tokens. */
function refill(bucket: { tokens: number; at: number; rate: number }, now: number): number {
  bucket.tokens = Math.min(
    Math.max(1, bucket.rate),
    bucket.tokens + ((now - bucket.at) * bucket.rate) / 1000,
  );
  bucket.at = Math.max(bucket.at, now);
  return bucket.tokens;
}

/** The Standard Webhooks headers of one attempt, signed at its time. */
function headersFor(job: Job, endpoint: Endpoint, now: number): Record<string, string> {
  const timestamp = Math.floor(now / 1000);
  return {
    "content-type": job.contentType,
    "user-agent": "tributary-relay",
    "webhook-id": job.messageId,
    "webhook-timestamp": String(timestamp),
    "webhook-signature": signWebhook(
      signingKeys(endpoint, now),
      job.messageId,
      timestamp,
      job.body,
    ),
  };
}

function attemptOf(result: DeliveryResult, at: number, latencyMs: number): Attempt {
  if (result.kind !== "response") {
    const outcome: AttemptOutcome = result.kind === "timeout"
      ? "timeout"
      : result.kind === "blocked"
      ? "blocked"
      : "failure";
    return { at, outcome, status: null, latencyMs, error: result.message };
  }
  const status = result.status;
  const outcome: AttemptOutcome = status >= 200 && status < 300
    ? "success"
    : status === 410
    ? "gone"
    : status === 429 || status === 503
    ? "throttled"
    : "failure";
  const error = outcome === "success"
    ? null
    : status >= 300 && status < 400
    ? `HTTP ${status} (redirects are not followed)`
    : `HTTP ${status}`;
  return { at, outcome, status, latencyMs, error };
}
