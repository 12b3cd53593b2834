import type { RedisScripts } from "../../storage/mod.ts";
import { bucketOf } from "../_message_log.ts";
import { queueFull, RelayError } from "../errors.ts";
import type {
  Attempt,
  AttemptCounts,
  ClaimOptions,
  DeadLetterQuery,
  Death,
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
import {
  CLAIM,
  DEAD,
  DEPTH,
  ENQUEUE,
  FINISH,
  MESSAGE,
  MESSAGES,
  NEXT_DUE,
  RENEW,
  REPLAY,
  STATS,
  SWEEP,
  WAIT,
} from "./_scripts.ts";

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

/** Batches queued by one script at most. */
const MAX_ENQUEUE_GROUP = 256;

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
  readonly #pending: {
    batch: EnqueueBatch;
    resolve: (result: EnqueueResult) => void;
    reject: (error: unknown) => void;
  }[] = [];
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
        batch.jobs.map((
          job,
        ) => [
          job.id,
          endpointKey(job.tenantId, job.endpointId),
          job.tenantId,
          String(job.dueAt),
          withoutBody(job),
        ]),
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
      if (outcome === "previous") {
        resolve({ accepted: false, previous: JSON.parse(reply[2 * i + 1]!) as IdempotentAnswer });
      } else if (outcome === "full") reject(queueFull("queue the message", this.#capacity));
      else if (outcome === "exists") {
        reject(new TypeError(`Cannot queue message ${batch.messageId}: it is queued already`));
      } else resolve({ accepted: true });
    });
  }

  async claim(options: ClaimOptions): Promise<Lease[]> {
    const args = [
      this.#prefix,
      String(options.now),
      String(options.limit),
      String(options.leaseMs),
      String(options.perEndpoint ?? options.limit),
    ];
    for (const [key, limit] of options.endpointLimits ?? []) args.push(key, String(limit));
    const reply = (await this.#run(CLAIM, args)) as string[];
    const leases: Lease[] = [];
    for (let i = 0; i < reply.length; i += 4) {
      leases.push({
        job: loaded(reply[i]!, reply[i + 1]!, reply[i + 2]!),
        token: reply[i + 3]!,
        expiresAt: options.now + options.leaseMs,
      });
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
    const args = [
      this.#prefix,
      lease.job.id,
      lease.token,
      withoutBody(job),
      String(dueAt),
      job.tenantId,
      ...counted(job.endpointId, attempt),
    ];
    return (await this.#run(WAIT, args)) === 1;
  }

  async release(lease: Lease, dueAt: number): Promise<boolean> {
    const args = [
      this.#prefix,
      lease.job.id,
      lease.token,
      withoutBody(lease.job),
      String(dueAt),
      lease.job.tenantId,
      ...counted(lease.job.endpointId, undefined),
    ];
    return (await this.#run(WAIT, args)) === 1;
  }

  async bury(lease: Lease, death: Death): Promise<boolean> {
    const job = death.attempt === undefined
      ? lease.job
      : { ...lease.job, attempts: [...lease.job.attempts, death.attempt] };
    return await this.#finish(lease, job, "dead", death.at, death.reason, death.attempt);
  }

  async deadLetters(tenantId: string, query: DeadLetterQuery): Promise<JobView[]> {
    const reply = (await this.#run(DEAD, [this.#prefix, tenantId])) as string[];
    const views: JobView[] = [];
    const wanted = query.endpointId === undefined
      ? undefined
      : endpointKey(tenantId, query.endpointId);
    for (let i = 0; i < reply.length && views.length < query.limit; i += 5) {
      if (wanted !== undefined && reply[i + 4] !== wanted) continue;
      views.push({
        ...loaded(reply[i]!, reply[i + 1]!, reply[i + 2]!),
        state: "dead",
        reason: reply[i + 3]!,
      });
    }
    return views;
  }

  async replay(
    tenantId: string,
    target: { readonly jobId: string } | { readonly endpointId?: string },
    now: number,
  ): Promise<number> {
    const jobId = "jobId" in target ? target.jobId : "";
    const endpoint = "jobId" in target || target.endpointId === undefined
      ? ""
      : endpointKey(tenantId, target.endpointId);
    const replayed = (await this.#run(REPLAY, [
      this.#prefix,
      tenantId,
      jobId,
      endpoint,
      String(now),
      String(this.#capacity),
    ])) as number;
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
        jobs.push(
          state === "dead" ? { ...job, state, reason: reply[i + 4] as string } : { ...job, state },
        );
      }
      messages.push(jobs);
    }
    if (reply[0] !== 1) return { messages };
    return { messages, next: { createdAt: Number(reply[1]), messageId: reply[2] as string } };
  }

  async attemptStats(tenantId: string, since: number): Promise<AttemptCounts[]> {
    const reply = (await this.#run(STATS, [this.#prefix, tenantId, String(bucketOf(since))])) as (
      | string
      | number
    )[];
    const counts: AttemptCounts[] = [];
    for (let i = 0; i < reply.length; i += 3) {
      counts.push({
        endpointId: reply[i] as string,
        attempts: reply[i + 1] as number,
        successes: reply[i + 2] as number,
      });
    }
    return counts.sort((
      a,
      b,
    ) => (a.endpointId < b.endpointId ? -1 : a.endpointId > b.endpointId ? 1 : 0));
  }

  async depth(now: number): Promise<QueueDepth> {
    const [waiting, leased, dead, delayed] =
      (await this.#run(DEPTH, [this.#prefix, String(now)])) as number[];
    return { ready: waiting! - delayed!, delayed: delayed!, leased: leased!, dead: dead! };
  }

  async nextDue(): Promise<number | undefined> {
    const times = ((await this.#run(NEXT_DUE, [this.#prefix])) as string[]).filter((at) =>
      at !== ""
    ).map(Number);
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

  async #finish(
    lease: Lease,
    job: Job,
    state: "delivered" | "dead",
    at: number,
    reason: string,
    attempt: Attempt | undefined,
  ): Promise<boolean> {
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
      throw new RelayError(
        "ERR_RELAY_QUEUE_UNAVAILABLE",
        `Cannot use the Redis queue: ${(error as Error).message}`,
        {
          retryAfterMs: 1000,
          cause: error,
        },
      );
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
