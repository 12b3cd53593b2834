// One cohesive structure, over 600 lines on purpose: MemoryQueue is one class
// whose methods share its private indexes (the ready deques per tenant and
// their turns, the delayed and leased heaps, the dead letters, the
// idempotency keys, the message log) and
// keep them consistent through every enqueue, claim, ack, retry, bury and
// replay. What stands alone lives beside it: the heap and deque (_heap.ts),
// the message log and attempt statistics, the snapshot
// (_memory_queue_snapshot.ts).
import type { ChangeSink } from "../storage/mod.ts";
import { Deque, Heap } from "./_heap.ts";
import { AttemptStats, MessageLog, readPage } from "./_message_log.ts";
import {
  foldChanges,
  idempotencyKey,
  type MemoryQueueSnapshot,
  type QueueChange,
  type SnapshotJob,
} from "./_memory_queue_snapshot.ts";
import { queueFull } from "./errors.ts";
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
  MessageCursor,
  MessagePage,
  MessageQuery,
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
  /**
   * Where the queue's changes go to be durable (e.g. a journal in
   * `STATE_DIR`): an enqueue, ack, retry, burial or replay resolves only once
   * the sink has its change. Claims and releases are not recorded: after a
   * restart every job not finished is due again (delivery is at least once).
   * @default none: the queue lives and dies with the process
   */
  readonly sink?: ChangeSink<QueueChange>;
}

interface Entry {
  job: Job;
  /**
   * The message it was queued with: the batch's id, which is the job's
   * except in a KafkaQueue's local work queue (there, the record's place).
   */
  readonly messageId: string;
  /** "forgotten": past retention, dropped. */
  state: JobState | "forgotten";
  /** The lease's token while leased; a new token for every claim. */
  token: string;
  /** While leased: when the lease expires (renewals move it). */
  leaseExpiresAt: number;
  /** When it was delivered or died. */
  finishedAt: number;
  reason: string;
}

interface Timed {
  readonly at: number;
  readonly seq: number;
  readonly entry: Entry;
  /** For leases: the token the entry had when leased. */
  readonly token: string;
}

const earlier = (a: Timed, b: Timed): boolean => a.at < b.at || (a.at === b.at && a.seq < b.seq);

/** A lease made by a MemoryQueue: it holds its entry, so moving the job needs no lookup. */
class HeldLease implements Lease {
  readonly job: Job;
  readonly token: string;
  readonly expiresAt: number;
  readonly #entry: Entry;

  constructor(entry: Entry, token: string, expiresAt: number) {
    this.job = entry.job;
    this.token = token;
    this.expiresAt = expiresAt;
    this.#entry = entry;
  }

  /** The entry behind a lease this queue made; undefined for any other object. */
  static entryOf(lease: Lease): Entry | undefined {
    return #entry in lease ? (lease as HeldLease).#entry : undefined;
  }
}

/**
 * The in-memory {@linkcode JobQueue}: the embedded default. Ready jobs wait in
 * one FIFO per endpoint, and the endpoints with ready jobs in a ring that a
 * claim walks round, one job per endpoint per turn; retries wait in a heap by
 * due time, leases in a heap by expiry; a lease holds its job's entry. A claim
 * costs O(log n) per job, plus one step per endpoint it skips, and an enqueue
 * one map insertion per message, whatever the backlog. Without a sink the
 * queue lives in the process; with one (a journal in `STATE_DIR`), every
 * accepted message is durable before its enqueue resolves, and
 * {@linkcode MemoryQueue.restore} rebuilds the queue after a restart or a crash
 * (the changes it records, its snapshot and how they fold together are in
 * _memory_queue_snapshot.ts).
 * @example
 * ```ts
 * const queue = new MemoryQueue({ capacity: 100_000 });
 * const worker = new RelayWorker({ queue, registry, deliver, schedule: DEFAULT_RETRY_SCHEDULE, now: Date.now, random: Math.random, setTimer });
 * ```
 */
export class MemoryQueue implements JobQueue {
  readonly #capacity: number;
  readonly #deliveredRetention: number;
  readonly #maxDelivered: number;
  readonly #deadRetention: number;
  readonly #maxDeadPerTenant: number;
  /** Each message's entries, by message id (random, so unique over tenants). */
  readonly #byMessage = new Map<string, Entry | Entry[]>();
  /** Ready entries by endpoint key, each in due order. */
  readonly #ready = new Map<string, Deque<Entry>>();
  /** Endpoint keys with ready jobs, in turn order. */
  readonly #turns = new Deque<string>();
  #readyCount = 0;
  readonly #delayed = new Heap<Timed>(earlier);
  readonly #leases = new Heap<Timed>(earlier);
  /** Delivered entries in the order they finished, for retention. */
  readonly #delivered = new Deque<Entry>();
  /** Each tenant's dead entries by job id, oldest first (a Map keeps insertion order). */
  readonly #dead = new Map<string, Map<string, Entry>>();
  readonly #idempotency = new Map<string, { answer: IdempotentAnswer; expiresAt: number }>();
  /** Each tenant's messages in log order. */
  readonly #log = new MessageLog();
  readonly #stats = new AttemptStats();
  #waiting = 0;
  #leased = 0;
  #seq = 0;
  readonly #sink: ChangeSink<QueueChange> | undefined;

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
    this.#sink = options.sink;
  }

  /**
   * Rebuilds a queue from what its sink recorded: the last snapshot (from
   * {@linkcode MemoryQueue.exportState}) and the changes after it. Jobs that
   * were leased are due again; capacity does not refuse restored jobs.
   * @param snapshot the last snapshot; undefined for none
   * @param changes the changes recorded after it, oldest first
   * @param options capacity, retention and the sink for new changes
   * @returns the queue
   * @throws {TypeError} when the snapshot or a change is not one a MemoryQueue wrote
   * @example
   * ```ts
   * const { journal, replay } = await state.journal("relay-queue");
   * let queue: MemoryQueue;
   * queue = MemoryQueue.restore(replay.snapshot, replay.records, { sink: journalSink(journal, () => queue.exportState()) });
   * ```
   */
  static restore(
    snapshot: unknown,
    changes: readonly unknown[],
    options: MemoryQueueOptions = {},
  ): MemoryQueue {
    const queue = new MemoryQueue(options);
    queue.#load(foldChanges(snapshot, changes));
    return queue;
  }

  enqueue(batch: EnqueueBatch): Promise<EnqueueResult> {
    const key = batch.idempotency === undefined
      ? undefined
      : idempotencyKey(batch.tenantId, batch.idempotency.key);
    if (key !== undefined) {
      const previous = this.#idempotency.get(key);
      if (previous !== undefined) {
        return Promise.resolve({ accepted: false, previous: previous.answer });
      }
    }
    if (this.#waiting + this.#leased + batch.jobs.length > this.#capacity) {
      return Promise.reject(queueFull("queue the message", this.#capacity));
    }
    if (this.#byMessage.has(batch.messageId)) {
      return Promise.reject(
        new TypeError(`Cannot queue message ${batch.messageId}: it is queued already`),
      );
    }
    const entries = batch.jobs.map((job): Entry => ({
      job,
      messageId: batch.messageId,
      state: "ready",
      token: "",
      leaseExpiresAt: 0,
      finishedAt: 0,
      reason: "",
    }));
    this.#byMessage.set(batch.messageId, entries.length === 1 ? entries[0]! : entries);
    if (batch.jobs.length > 0) {
      this.#log.add(batch.tenantId, {
        createdAt: batch.jobs[0]!.createdAt,
        messageId: batch.messageId,
      });
    }
    for (const entry of entries) this.#makeReady(entry);
    this.#waiting += entries.length;
    if (key !== undefined && batch.idempotency !== undefined) {
      this.#idempotency.set(key, {
        answer: batch.idempotency.answer,
        expiresAt: batch.idempotency.expiresAt,
      });
    }
    return this.#sink === undefined
      ? Promise.resolve(ACCEPTED)
      : this.#sink.record({ op: "enqueue", batch }).then(() => ACCEPTED);
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
      const ready = this.#ready.get(key)!;
      const entry = ready.shift()!;
      this.#readyCount--;
      if (ready.size === 0) this.#ready.delete(key);
      else this.#turns.push(key);
      taken.set(key, count + 1);
      const token = String(++this.#seq);
      const expiresAt = options.now + options.leaseMs;
      entry.state = "leased";
      entry.token = token;
      entry.leaseExpiresAt = expiresAt;
      this.#leases.push({ at: expiresAt, seq: this.#seq, entry, token });
      this.#waiting--;
      this.#leased++;
      leases.push(new HeldLease(entry, token, expiresAt));
    }
    for (const key of skipped) this.#turns.push(key);
    return Promise.resolve(leases);
  }

  renew(leases: readonly Lease[], expiresAt: number): Promise<Lease[]> {
    const renewed: Lease[] = [];
    for (const lease of leases) {
      const entry = this.#held(lease);
      if (entry === undefined) continue;
      // The heap keeps the older expiry too; #promote skips it, since it is no longer the entry's.
      entry.leaseExpiresAt = expiresAt;
      this.#leases.push({ at: expiresAt, seq: ++this.#seq, entry, token: entry.token });
      renewed.push(new HeldLease(entry, entry.token, expiresAt));
    }
    return Promise.resolve(renewed);
  }

  ack(lease: Lease, attempt: Attempt): Promise<boolean> {
    const entry = this.#held(lease);
    if (entry === undefined) return Promise.resolve(false);
    this.#finish(entry, "delivered", attempt, attempt.at + attempt.latencyMs);
    this.#delivered.push(entry);
    this.#stats.count(entry.job.tenantId, entry.job.endpointId, attempt);
    return this.#record({ op: "ack", job: entry.job.id, attempt });
  }

  retry(lease: Lease, attempt: Attempt, dueAt: number): Promise<boolean> {
    const entry = this.#held(lease);
    if (entry === undefined) return Promise.resolve(false);
    entry.job = { ...entry.job, attempts: [...entry.job.attempts, attempt], dueAt };
    this.#wait(entry, dueAt);
    this.#stats.count(entry.job.tenantId, entry.job.endpointId, attempt);
    return this.#record({ op: "retry", job: entry.job.id, attempt, dueAt });
  }

  /** Not recorded by the sink: after a restart the job is simply due again. */
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
    if (death.attempt !== undefined) {
      this.#stats.count(entry.job.tenantId, entry.job.endpointId, death.attempt);
    }
    this.#addDead(entry);
    return this.#record({ op: "bury", job: entry.job.id, death });
  }

  deadLetters(tenantId: string, query: DeadLetterQuery): Promise<JobView[]> {
    const dead = [...(this.#dead.get(tenantId)?.values() ?? [])].reverse();
    const views: JobView[] = [];
    for (const entry of dead) {
      if (views.length >= query.limit) break;
      if (query.endpointId !== undefined && entry.job.endpointId !== query.endpointId) continue;
      views.push(view(entry));
    }
    return Promise.resolve(views);
  }

  replay(
    tenantId: string,
    target: { readonly jobId: string } | { readonly endpointId?: string },
    now: number,
  ): Promise<number> {
    const dead = this.#dead.get(tenantId);
    if (dead === undefined) return Promise.resolve(0);
    let chosen: Entry[];
    if ("jobId" in target) {
      const entry = dead.get(target.jobId);
      chosen = entry === undefined ? [] : [entry];
    } else {
      chosen = [...dead.values()].filter((entry) =>
        target.endpointId === undefined || entry.job.endpointId === target.endpointId
      );
    }
    if (this.#waiting + this.#leased + chosen.length > this.#capacity) {
      return Promise.reject(queueFull(`replay ${chosen.length} jobs`, this.#capacity));
    }
    for (const entry of chosen) {
      dead.delete(entry.job.id);
      entry.job = { ...entry.job, dueAt: now };
      entry.reason = "";
      this.#makeReady(entry);
      this.#waiting++;
    }
    if (this.#sink === undefined || chosen.length === 0) return Promise.resolve(chosen.length);
    return this.#sink.record({
      op: "replay",
      jobs: chosen.map((entry) => entry.job.id),
      dueAt: now,
    }).then(() => chosen.length);
  }

  message(tenantId: string, messageId: string): Promise<JobView[]> {
    return Promise.resolve(this.#views(tenantId, messageId));
  }

  messages(tenantId: string, query: MessageQuery): Promise<MessagePage> {
    return readPage(
      this.#log.newestFirst(tenantId, query),
      query,
      (key) => this.#views(tenantId, key.messageId),
    );
  }

  attemptStats(tenantId: string, since: number): Promise<AttemptCounts[]> {
    return Promise.resolve(this.#stats.totals(tenantId, since));
  }

  depth(now: number): Promise<QueueDepth> {
    this.#promote(now);
    let dead = 0;
    for (const entries of this.#dead.values()) dead += entries.size;
    return Promise.resolve({
      ready: this.#readyCount,
      delayed: this.#waiting - this.#readyCount,
      leased: this.#leased,
      dead,
    });
  }

  nextDue(): Promise<number | undefined> {
    const candidates = [this.#delayed.peek()?.at, this.#leases.peek()?.at].filter((at) =>
      at !== undefined
    );
    return Promise.resolve(candidates.length === 0 ? undefined : Math.min(...candidates));
  }

  sweep(now: number): Promise<void> {
    for (;;) {
      const entry = this.#delivered.peek();
      if (entry === undefined) break;
      const stale = entry.state !== "delivered";
      if (
        !stale && entry.finishedAt > now - this.#deliveredRetention &&
        this.#delivered.size <= this.#maxDelivered
      ) break;
      this.#delivered.shift();
      if (!stale) this.#forget(entry);
    }
    for (const dead of this.#dead.values()) {
      for (const entry of dead.values()) {
        if (entry.finishedAt > now - this.#deadRetention) break;
        dead.delete(entry.job.id);
        this.#forget(entry);
      }
    }
    for (const [key, kept] of this.#idempotency) {
      if (kept.expiresAt <= now) this.#idempotency.delete(key);
    }
    this.#stats.sweep(now);
    return Promise.resolve();
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  /**
   * Everything the queue holds, for {@linkcode MemoryQueue.restore} after a restart.
   * @returns jobs of every state (leased ones as ready) and live idempotency keys
   */
  exportState(): MemoryQueueSnapshot {
    const jobs: SnapshotJob[] = [];
    for (const held of this.#byMessage.values()) {
      for (const entry of Array.isArray(held) ? held : [held]) {
        if (entry.state === "forgotten") continue;
        const finished = entry.state === "delivered" || entry.state === "dead";
        jobs.push({
          ...view(entry),
          ...(entry.state === "leased" ? { state: "ready" } : {}),
          ...(finished ? { finishedAt: entry.finishedAt } : {}),
        });
      }
    }
    const idempotency = [...this.#idempotency].map(([key, kept]) => {
      const cut = key.indexOf("\n");
      return {
        tenantId: key.slice(0, cut),
        key: key.slice(cut + 1),
        answer: kept.answer,
        expiresAt: kept.expiresAt,
      };
    });
    return { version: 1, jobs, idempotency, stats: this.#stats.buckets() };
  }

  /** Takes in a snapshot, into an empty queue. */
  #load(snapshot: MemoryQueueSnapshot): void {
    const byMessage = new Map<string, Entry[]>();
    const finished: Entry[] = [];
    for (const saved of snapshot.jobs) {
      const { state, reason, finishedAt, ...job } = saved;
      const entry: Entry = {
        job,
        messageId: job.messageId,
        state,
        token: "",
        leaseExpiresAt: 0,
        finishedAt: finishedAt ?? 0,
        reason: reason ?? "",
      };
      let entries = byMessage.get(job.messageId);
      if (entries === undefined) byMessage.set(job.messageId, entries = []);
      entries.push(entry);
      if (state === "delivered" || state === "dead") {
        finished.push(entry);
      } else if (state === "delayed") {
        this.#waiting++;
        this.#delayed.push({ at: job.dueAt, seq: ++this.#seq, entry, token: "" });
      } else {
        this.#waiting++;
        this.#makeReady(entry);
      }
    }
    for (const [messageId, entries] of byMessage) {
      this.#byMessage.set(messageId, entries.length === 1 ? entries[0]! : entries);
      this.#log.add(entries[0]!.job.tenantId, { createdAt: entries[0]!.job.createdAt, messageId });
    }
    for (const bucket of snapshot.stats ?? []) this.#stats.restore(bucket);
    // Retention and the dead letters' order go by when jobs finished.
    finished.sort((a, b) => a.finishedAt - b.finishedAt);
    for (const entry of finished) {
      if (entry.state === "delivered") this.#delivered.push(entry);
      else this.#addDead(entry);
    }
    for (const kept of snapshot.idempotency) {
      this.#idempotency.set(idempotencyKey(kept.tenantId, kept.key), {
        answer: kept.answer,
        expiresAt: kept.expiresAt,
      });
    }
  }

  /** Resolves with true once the sink has the change. */
  #record(change: QueueChange): Promise<boolean> {
    return this.#sink === undefined
      ? Promise.resolve(true)
      : this.#sink.record(change).then(() => true);
  }

  /** Moves due retries and jobs of expired leases to their endpoints' ready FIFOs, in due order. */
  #promote(now: number): void {
    for (;;) {
      const lease = this.#leases.peek();
      if (lease === undefined || lease.at > now) break;
      this.#leases.pop();
      const entry = lease.entry;
      if (
        entry.state !== "leased" || entry.token !== lease.token || entry.leaseExpiresAt !== lease.at
      ) continue;
      // The worker holding it died or stalled: the job is due again, its lease void.
      entry.token = "";
      this.#leased--;
      this.#waiting++;
      this.#makeReady(entry);
    }
    for (;;) {
      const next = this.#delayed.peek();
      if (next === undefined || next.at > now) break;
      this.#delayed.pop();
      const entry = next.entry;
      if (entry.state !== "delayed" || entry.job.dueAt !== next.at) continue;
      this.#makeReady(entry);
    }
  }

  /** Appends an entry to its endpoint's ready FIFO, giving the endpoint a turn if it had none. */
  #makeReady(entry: Entry): void {
    entry.state = "ready";
    const key = endpointKey(entry.job.tenantId, entry.job.endpointId);
    let ready = this.#ready.get(key);
    if (ready === undefined) {
      this.#ready.set(key, ready = new Deque());
      this.#turns.push(key);
    }
    ready.push(entry);
    this.#readyCount++;
  }

  #addDead(entry: Entry): void {
    let dead = this.#dead.get(entry.job.tenantId);
    if (dead === undefined) this.#dead.set(entry.job.tenantId, dead = new Map());
    dead.set(entry.job.id, entry);
    if (dead.size > this.#maxDeadPerTenant) {
      const oldest = dead.values().next().value as Entry;
      dead.delete(oldest.job.id);
      this.#forget(oldest);
    }
  }

  /** The entry if `lease` still holds it. */
  #held(lease: Lease): Entry | undefined {
    const entry = HeldLease.entryOf(lease);
    if (entry === undefined || entry.state !== "leased" || entry.token !== lease.token) {
      return undefined;
    }
    return entry;
  }

  /** A message's live jobs, as shown; empty when it is gone or not the tenant's. */
  #views(tenantId: string, messageId: string): JobView[] {
    const views: JobView[] = [];
    for (const entry of this.#entriesOf(messageId)) {
      if (entry.job.tenantId === tenantId && entry.state !== "forgotten") views.push(view(entry));
    }
    return views;
  }

  /** Whether a key of the log still names a message this queue keeps. */
  #kept(key: MessageCursor): boolean {
    const [first] = this.#entriesOf(key.messageId);
    return first !== undefined && first.job.createdAt === key.createdAt;
  }

  #entriesOf(messageId: string): readonly Entry[] {
    const held = this.#byMessage.get(messageId);
    return held === undefined ? [] : Array.isArray(held) ? held : [held];
  }

  #wait(entry: Entry, dueAt: number): void {
    entry.state = "delayed";
    entry.token = "";
    this.#leased--;
    this.#waiting++;
    this.#delayed.push({ at: dueAt, seq: ++this.#seq, entry, token: "" });
  }

  #finish(
    entry: Entry,
    state: "delivered" | "dead",
    attempt: Attempt | undefined,
    at: number,
  ): void {
    if (attempt !== undefined) {
      entry.job = { ...entry.job, attempts: [...entry.job.attempts, attempt] };
    }
    entry.state = state;
    entry.token = "";
    entry.finishedAt = at;
    this.#leased--;
  }

  /** Drops a finished entry; its message goes when it has no entry left. */
  #forget(entry: Entry): void {
    entry.state = "forgotten";
    const messageId = entry.messageId;
    const held = this.#byMessage.get(messageId);
    if (
      held === entry || (Array.isArray(held) && held.every((other) => other.state === "forgotten"))
    ) {
      this.#byMessage.delete(messageId);
      this.#log.drop(entry.job.tenantId, (key) => this.#kept(key));
    }
  }
}

const ACCEPTED: EnqueueResult = Object.freeze({ accepted: true });

/** A live entry as the status API shows it. */
function view(entry: Entry): JobView {
  const state = entry.state === "forgotten" ? "delivered" : entry.state;
  return state === "dead" ? { ...entry.job, state, reason: entry.reason } : { ...entry.job, state };
}
