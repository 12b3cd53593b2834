import { Deque, Heap } from "./_heap.ts";
import { RelayError } from "./errors.ts";
import type {
  Attempt,
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
  QueueDepth,
} from "./queue.ts";
import { endpointKey } from "./queue.ts";

/** Options of {@linkcode MemoryQueue}. */
export interface MemoryQueueOptions {
  /**
   * Jobs waiting or held (ready, delayed and leased) at most; a batch that
   * does not fit is refused whole.
   * @default {100000}
   */
  readonly capacity?: number;
  /**
   * How long a delivered job stays visible to the status API, milliseconds.
   * @default {86400000}
   */
  readonly deliveredRetentionMs?: number;
  /**
   * Delivered jobs kept at most (the oldest go first).
   * @default {100000}
   */
  readonly maxDelivered?: number;
  /**
   * How long dead letters are kept for replay, milliseconds.
   * @default {604800000}
   */
  readonly deadRetentionMs?: number;
  /**
   * Dead letters kept per tenant at most (the oldest go first).
   * @default {10000}
   */
  readonly maxDeadPerTenant?: number;
}

interface Entry {
  job: Job;
  state: JobState;
  /** The lease's token while leased; a new token for every claim. */
  token: string;
  leaseExpiresAt: number;
  /** When it was delivered or died. */
  finishedAt: number;
  reason: string;
}

interface Timed {
  readonly at: number;
  readonly seq: number;
  readonly id: string;
  /** For leases: the token the entry had when leased. */
  readonly token: string;
}

const earlier = (a: Timed, b: Timed): boolean => a.at < b.at || (a.at === b.at && a.seq < b.seq);

/**
 * The in-memory {@linkcode JobQueue}: the embedded default. Ready jobs wait in
 * one FIFO per endpoint, and the endpoints with ready jobs in a ring that a
 * claim walks round, one job per endpoint per turn; retries wait in a heap by
 * due time, leases in a heap by expiry. A claim costs O(log n) per job, plus
 * one step per endpoint it skips, whatever the backlog. Everything is lost
 * when the process exits: use Redis or Kafka where that matters.
 */
export class MemoryQueue implements JobQueue {
  readonly #capacity: number;
  readonly #deliveredRetention: number;
  readonly #maxDelivered: number;
  readonly #deadRetention: number;
  readonly #maxDeadPerTenant: number;
  readonly #entries = new Map<string, Entry>();
  /** Ready job ids by endpoint key, each in due order. */
  readonly #ready = new Map<string, Deque<string>>();
  /** Endpoint keys with ready jobs, in turn order. */
  readonly #turns = new Deque<string>();
  #readyCount = 0;
  readonly #delayed = new Heap<Timed>(earlier);
  readonly #leases = new Heap<Timed>(earlier);
  /** Job ids of each message by message id (random, so unique over tenants), for the status API. */
  readonly #byMessage = new Map<string, string | string[]>();
  /** Delivered jobs in the order they finished, for retention. */
  readonly #delivered = new Deque<string>();
  /** Each tenant's dead jobs, oldest first (a Set keeps insertion order). */
  readonly #dead = new Map<string, Set<string>>();
  readonly #idempotency = new Map<string, { answer: IdempotentAnswer; expiresAt: number }>();
  #waiting = 0;
  #leased = 0;
  #seq = 0;

  /**
   * Creates an empty queue.
   * @param options capacity and retention
   */
  constructor(options: MemoryQueueOptions = {}) {
    this.#capacity = options.capacity ?? 100_000;
    this.#deliveredRetention = options.deliveredRetentionMs ?? 86_400_000;
    this.#maxDelivered = options.maxDelivered ?? 100_000;
    this.#deadRetention = options.deadRetentionMs ?? 604_800_000;
    this.#maxDeadPerTenant = options.maxDeadPerTenant ?? 10_000;
  }

  enqueue(batch: EnqueueBatch): Promise<EnqueueResult> {
    const key = batch.idempotency === undefined ? undefined : idempotencyKey(batch.tenantId, batch.idempotency.key);
    if (key !== undefined) {
      const previous = this.#idempotency.get(key);
      if (previous !== undefined) return Promise.resolve({ accepted: false, previous: previous.answer });
    }
    if (this.#waiting + this.#leased + batch.jobs.length > this.#capacity) {
      return Promise.reject(
        new RelayError("ERR_RELAY_QUEUE_FULL", `Cannot queue the message: the queue holds its limit of ${this.#capacity} jobs`, {
          headers: { "retry-after": "1" },
        }),
      );
    }
    if (this.#byMessage.has(batch.messageId)) {
      return Promise.reject(new TypeError(`Cannot queue message ${batch.messageId}: it is queued already`));
    }
    for (const job of batch.jobs) {
      this.#entries.set(job.id, { job, state: "ready", token: "", leaseExpiresAt: 0, finishedAt: 0, reason: "" });
      this.#makeReady(job);
    }
    this.#waiting += batch.jobs.length;
    this.#byMessage.set(batch.messageId, batch.jobs.length === 1 ? batch.jobs[0]!.id : batch.jobs.map((job) => job.id));
    if (key !== undefined && batch.idempotency !== undefined) {
      this.#idempotency.set(key, { answer: batch.idempotency.answer, expiresAt: batch.idempotency.expiresAt });
    }
    return Promise.resolve({ accepted: true });
  }

  claim(options: ClaimOptions): Promise<Lease[]> {
    this.#promote(options.now);
    const leases: Lease[] = [];
    const perEndpoint = options.perEndpoint ?? options.limit;
    const taken = new Map<string, number>();
    const skipped: string[] = [];
    while (leases.length < options.limit) {
      const key = this.#turns.shift();
      if (key === undefined) break;
      const count = taken.get(key) ?? 0;
      if (count >= Math.min(perEndpoint, options.endpointLimits?.get(key) ?? perEndpoint)) {
        skipped.push(key);
        continue;
      }
      const ids = this.#ready.get(key)!;
      const id = ids.shift()!;
      this.#readyCount--;
      if (ids.size === 0) this.#ready.delete(key);
      else this.#turns.push(key);
      taken.set(key, count + 1);
      const entry = this.#entries.get(id)!;
      const token = String(++this.#seq);
      entry.state = "leased";
      entry.token = token;
      entry.leaseExpiresAt = options.now + options.leaseMs;
      this.#leases.push({ at: entry.leaseExpiresAt, seq: this.#seq, id, token });
      this.#waiting--;
      this.#leased++;
      leases.push({ job: entry.job, token, expiresAt: entry.leaseExpiresAt });
    }
    for (const key of skipped) this.#turns.push(key);
    return Promise.resolve(leases);
  }

  ack(lease: Lease, attempt: Attempt): Promise<boolean> {
    const entry = this.#held(lease);
    if (entry === undefined) return Promise.resolve(false);
    this.#finish(entry, "delivered", attempt, attempt.at + attempt.latencyMs);
    this.#delivered.push(entry.job.id);
    return Promise.resolve(true);
  }

  retry(lease: Lease, attempt: Attempt, dueAt: number): Promise<boolean> {
    const entry = this.#held(lease);
    if (entry === undefined) return Promise.resolve(false);
    entry.job = { ...entry.job, attempts: [...entry.job.attempts, attempt], dueAt };
    this.#wait(entry, dueAt);
    return Promise.resolve(true);
  }

  release(lease: Lease, dueAt: number): Promise<boolean> {
    const entry = this.#held(lease);
    if (entry === undefined) return Promise.resolve(false);
    entry.job = { ...entry.job, dueAt };
    this.#wait(entry, dueAt);
    return Promise.resolve(true);
  }

  bury(lease: Lease, death: Death): Promise<boolean> {
    const entry = this.#held(lease);
    if (entry === undefined) return Promise.resolve(false);
    this.#finish(entry, "dead", death.attempt, death.at);
    entry.reason = death.reason;
    let dead = this.#dead.get(entry.job.tenantId);
    if (dead === undefined) this.#dead.set(entry.job.tenantId, (dead = new Set()));
    dead.add(entry.job.id);
    if (dead.size > this.#maxDeadPerTenant) {
      const oldest = dead.values().next().value as string;
      dead.delete(oldest);
      this.#forget(oldest);
    }
    return Promise.resolve(true);
  }

  deadLetters(tenantId: string, query: DeadLetterQuery): Promise<JobView[]> {
    const dead = [...(this.#dead.get(tenantId) ?? [])].reverse();
    const views: JobView[] = [];
    for (const id of dead) {
      if (views.length >= query.limit) break;
      const entry = this.#entries.get(id);
      if (entry === undefined) continue;
      if (query.endpointId !== undefined && entry.job.endpointId !== query.endpointId) continue;
      views.push(view(entry));
    }
    return Promise.resolve(views);
  }

  replay(tenantId: string, target: { readonly jobId: string } | { readonly endpointId?: string }, now: number): Promise<number> {
    const dead = this.#dead.get(tenantId);
    if (dead === undefined) return Promise.resolve(0);
    const chosen = "jobId" in target
      ? (dead.has(target.jobId) ? [target.jobId] : [])
      : [...dead].filter((id) => target.endpointId === undefined || this.#entries.get(id)?.job.endpointId === target.endpointId);
    if (this.#waiting + this.#leased + chosen.length > this.#capacity) {
      return Promise.reject(
        new RelayError("ERR_RELAY_QUEUE_FULL", `Cannot replay ${chosen.length} jobs: the queue holds its limit of ${this.#capacity} jobs`, {
          headers: { "retry-after": "1" },
        }),
      );
    }
    for (const id of chosen) {
      const entry = this.#entries.get(id)!;
      dead.delete(id);
      entry.job = { ...entry.job, dueAt: now };
      entry.state = "ready";
      entry.reason = "";
      this.#makeReady(entry.job);
      this.#waiting++;
    }
    return Promise.resolve(chosen.length);
  }

  message(tenantId: string, messageId: string): Promise<JobView[]> {
    const ids = this.#byMessage.get(messageId) ?? [];
    const views: JobView[] = [];
    for (const id of typeof ids === "string" ? [ids] : ids) {
      const entry = this.#entries.get(id);
      if (entry !== undefined && entry.job.tenantId === tenantId) views.push(view(entry));
    }
    return Promise.resolve(views);
  }

  depth(now: number): Promise<QueueDepth> {
    this.#promote(now);
    let dead = 0;
    for (const set of this.#dead.values()) dead += set.size;
    return Promise.resolve({ ready: this.#readyCount, delayed: this.#waiting - this.#readyCount, leased: this.#leased, dead });
  }

  nextDue(): Promise<number | undefined> {
    const candidates = [this.#delayed.peek()?.at, this.#leases.peek()?.at].filter((at) => at !== undefined);
    return Promise.resolve(candidates.length === 0 ? undefined : Math.min(...candidates));
  }

  sweep(now: number): Promise<void> {
    for (;;) {
      const id = this.#delivered.peek();
      if (id === undefined) break;
      const entry = this.#entries.get(id);
      const stale = entry === undefined || entry.state !== "delivered";
      if (!stale && entry.finishedAt > now - this.#deliveredRetention && this.#delivered.size <= this.#maxDelivered) break;
      this.#delivered.shift();
      if (!stale) this.#forget(id);
    }
    for (const dead of this.#dead.values()) {
      for (const id of dead) {
        const entry = this.#entries.get(id);
        if (entry !== undefined && entry.finishedAt > now - this.#deadRetention) break;
        dead.delete(id);
        this.#forget(id);
      }
    }
    for (const [key, kept] of this.#idempotency) {
      if (kept.expiresAt <= now) this.#idempotency.delete(key);
    }
    return Promise.resolve();
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  /** Moves due retries and jobs of expired leases to their endpoints' ready FIFOs, in due order. */
  #promote(now: number): void {
    for (;;) {
      const lease = this.#leases.peek();
      if (lease === undefined || lease.at > now) break;
      this.#leases.pop();
      const entry = this.#entries.get(lease.id);
      if (entry === undefined || entry.state !== "leased" || entry.token !== lease.token) continue;
      // The worker holding it died or stalled: the job is due again, its lease void.
      entry.state = "ready";
      entry.token = "";
      this.#leased--;
      this.#waiting++;
      this.#makeReady(entry.job);
    }
    for (;;) {
      const next = this.#delayed.peek();
      if (next === undefined || next.at > now) break;
      this.#delayed.pop();
      const entry = this.#entries.get(next.id);
      if (entry === undefined || entry.state !== "delayed" || entry.job.dueAt !== next.at) continue;
      entry.state = "ready";
      this.#makeReady(entry.job);
    }
  }

  /** Appends a job to its endpoint's ready FIFO, giving the endpoint a turn if it had none. */
  #makeReady(job: Job): void {
    const key = endpointKey(job.tenantId, job.endpointId);
    let ids = this.#ready.get(key);
    if (ids === undefined) {
      this.#ready.set(key, (ids = new Deque()));
      this.#turns.push(key);
    }
    ids.push(job.id);
    this.#readyCount++;
  }

  /** The entry if `lease` still holds it. */
  #held(lease: Lease): Entry | undefined {
    const entry = this.#entries.get(lease.job.id);
    if (entry === undefined || entry.state !== "leased" || entry.token !== lease.token) return undefined;
    return entry;
  }

  #wait(entry: Entry, dueAt: number): void {
    entry.state = "delayed";
    entry.token = "";
    this.#leased--;
    this.#waiting++;
    this.#delayed.push({ at: dueAt, seq: ++this.#seq, id: entry.job.id, token: "" });
  }

  #finish(entry: Entry, state: "delivered" | "dead", attempt: Attempt | undefined, at: number): void {
    if (attempt !== undefined) entry.job = { ...entry.job, attempts: [...entry.job.attempts, attempt] };
    entry.state = state;
    entry.token = "";
    entry.finishedAt = at;
    this.#leased--;
  }

  #forget(id: string): void {
    const entry = this.#entries.get(id);
    if (entry === undefined) return;
    this.#entries.delete(id);
    const key = entry.job.messageId;
    const ids = this.#byMessage.get(key);
    if (typeof ids === "string" || (ids !== undefined && ids.every((other) => other === id || !this.#entries.has(other)))) this.#byMessage.delete(key);
  }
}

function view(entry: Entry): JobView {
  return entry.state === "dead" ? { ...entry.job, state: entry.state, reason: entry.reason } : { ...entry.job, state: entry.state };
}

function idempotencyKey(tenantId: string, key: string): string {
  return `${tenantId}\n${key}`;
}

