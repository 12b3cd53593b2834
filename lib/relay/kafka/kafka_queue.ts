import { Heap } from "../_heap.ts";
import { AttemptStats, MessageLog, readPage } from "../_message_log.ts";
import { queueFull, RelayError } from "../errors.ts";
import { MemoryQueue } from "../memory_queue.ts";
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
  JobView,
  Lease,
  MessageCursor,
  MessagePage,
  MessageQuery,
  QueueDepth,
} from "../queue.ts";

/** A record to append. */
export interface KafkaRecordOut {
  readonly topic: string;
  readonly partition: number;
  readonly key: string;
  /** null: a tombstone. */
  readonly value: string | null;
}

/** A record read. */
export interface KafkaRecordIn {
  readonly offset: number;
  readonly key: string | null;
  readonly value: string | null;
}

/** Records of one partition, in offset order. */
export interface KafkaBatch {
  readonly topic: string;
  readonly partition: number;
  readonly records: readonly KafkaRecordIn[];
}

/** A consumer-group member's hold on its partitions. */
export interface KafkaSubscription {
  /** Stops fetching a partition (its records wait in the log). */
  pause(topic: string, partition: number): void;
  resume(topic: string, partition: number): void;
  /** Commits, for each partition, the offset of the next record to read. */
  commit(offsets: readonly { readonly topic: string; readonly partition: number; readonly offset: number }[]): Promise<void>;
  close(): Promise<void>;
}

/** Options of {@linkcode KafkaLog.subscribe}. */
export interface KafkaSubscribeOptions {
  readonly groupId: string;
  readonly topics: readonly string[];
  /** Read a partition with no committed offset from its start (else from its end). */
  readonly fromBeginning: boolean;
  /** Told of records as they are fetched; the next fetch of the partition waits for it. */
  readonly onBatch: (batch: KafkaBatch) => void;
  /** Told of each new assignment: partitions by topic. */
  readonly onAssign: (assigned: ReadonlyMap<string, readonly number[]>) => void;
}

/**
 * What {@linkcode KafkaQueue} needs of Kafka: kafka_client.ts implements it
 * with `kafkajs`; nothing else in the queue knows the client.
 */
export interface KafkaLog {
  /**
   * Appends records, acknowledged by every in-sync replica (`acks: -1`).
   * @returns each record's offset, in order
   */
  produce(records: readonly KafkaRecordOut[]): Promise<number[]>;
  /** Joins a consumer group; resolves once the first assignment is known. */
  subscribe(options: KafkaSubscribeOptions): Promise<KafkaSubscription>;
  /** Partitions of a topic. */
  partitions(topic: string): Promise<number>;
  /** The offset after the last record, by partition. */
  ends(topic: string): Promise<Map<number, number>>;
  close(): Promise<void>;
}

/** Topic names of a {@linkcode KafkaQueue}. */
export interface KafkaTopics {
  /** Jobs to deliver, keyed by tenant. */
  readonly jobs: string;
  /** Jobs waiting for a retry, keyed by tenant. */
  readonly retry: string;
  /** Jobs whose attempts ran out, keyed by tenant: for other consumers to read. */
  readonly dead: string;
  /** Every job's latest state, keyed by job (compacted): the status and dead-letter APIs read it. */
  readonly state: string;
}

/**
 * The topic names for a prefix.
 * @param prefix e.g. `tributary`
 * @returns `<prefix>.jobs`, `.retry`, `.dead` and `.state`
 */
export function kafkaTopics(prefix: string): KafkaTopics {
  return { jobs: `${prefix}.jobs`, retry: `${prefix}.retry`, dead: `${prefix}.dead`, state: `${prefix}.state` };
}

/** Options of {@linkcode KafkaQueue.open}. */
export interface KafkaQueueOptions {
  readonly topics: KafkaTopics;
  /**
   * The consumer group the relay processes share.
   * @default {"tributary-relay"}
   */
  readonly groupId?: string;
  /** Distinguishes this process's state reader from the others'. */
  readonly instanceId: string;
  /**
   * Jobs waiting (ready or retrying) at most, over all processes; a batch
   * that does not fit is refused whole.
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
   * Records read ahead per partition before it is paused.
   * @default {10000}
   */
  readonly maxBufferedPerPartition?: number;
  /**
   * Sets a timer (for the commits, every 100 ms); returns how to cancel it.
   * @default {setTimeout}
   */
  readonly setTimer?: (task: () => void, ms: number) => () => void;
  /**
   * How long `claim` and `nextDue` wait for this process's own newest
   * records to come back from the log, milliseconds.
   * @default {2000}
   */
  readonly catchUpMs?: number;
}

/** A job's latest state as the state topic holds it. */
interface StateRecord {
  readonly rev: number;
  readonly state: "ready" | "delayed" | "delivered" | "dead";
  readonly reason: string;
  readonly finished: number;
  readonly job: Job;
}

/** Where a job being worked on came from: its record, to commit once handled. */
interface Origin {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  readonly rev: number;
}

/** A partition this process reads. */
interface PartitionState {
  owned: boolean;
  /** The offset after the highest record read; -1 before the first. */
  next: number;
  /** Offsets of records read whose jobs are in hand (not yet delivered or handed on). */
  readonly unhandled: Set<number>;
  paused: boolean;
  /** The offset last committed (at first, the one reading started from). */
  committed: number;
}

/** A retry read from its topic before its due time. */
interface Waiting {
  readonly dueAt: number;
  readonly job: Job;
  readonly origin: Origin;
}

/** A job record's value on the jobs and retry topics. */
interface JobRecord {
  readonly rev: number;
  readonly job: Job;
}

/**
 * The relay's queue on Kafka. Intake appends each job to the jobs topic,
 * keyed (and partitioned) by tenant. The relay processes share the jobs and
 * retry topics' partitions as one consumer group; each reads its partitions
 * into a local work queue (a {@linkcode MemoryQueue}: endpoints take turns,
 * leases expire), pausing a partition that runs far ahead. A failed attempt
 * appends the job to the retry topic, whose records wait in memory until due
 * without holding back other partitions or tenants; exhausted jobs go to the
 * dead-letter topic. A record's offset is committed only once its job is
 * delivered or handed to the retry or dead-letter topic, so a process that
 * dies leaves its jobs to the others (delivery is at least once). Every
 * job's latest state goes to a compacted state topic that every process
 * reads whole, for the status, dead-letter and replay APIs.
 * @example
 * ```ts
 * const log = await connectKafka(["127.0.0.1:9092"]);
 * const queue = await KafkaQueue.open(log, { topics: kafkaTopics("tributary"), groupId: "tributary-relay", instanceId: crypto.randomUUID() });
 * ```
 */
export class KafkaQueue implements JobQueue {
  readonly #log: KafkaLog;
  readonly #topics: KafkaTopics;
  readonly #capacity: number;
  readonly #deliveredRetention: number;
  readonly #maxDelivered: number;
  readonly #deadRetention: number;
  readonly #maxDeadPerTenant: number;
  readonly #maxBuffered: number;
  readonly #catchUpMs: number;
  readonly #partitionCount: number;
  readonly #local = new MemoryQueue({ capacity: Number.MAX_SAFE_INTEGER, maxDelivered: 0, maxDeadPerTenant: 0, deadRetentionMs: 0, deliveredRetentionMs: 0 });
  readonly #origins = new Map<string, Origin>();
  readonly #waiting = new Heap<Waiting>((a, b) => a.dueAt < b.dueAt);
  readonly #partitions = new Map<string, PartitionState>();
  /** The last offset this process appended, by jobs or retry partition: `claim` waits to have read it. */
  readonly #produced = new Map<string, number>();
  #readWaiters: (() => void)[] = [];
  #work: KafkaSubscription | undefined;
  /** Job batches read before the state topic was: they wait for it. */
  #stateRead: KafkaBatch[] | undefined = [];
  #stateReader: KafkaSubscription | undefined;
  readonly #setTimer: (task: () => void, ms: number) => () => void;
  /** Cancels the pending commit, when one is due. */
  #cancelCommit: (() => void) | undefined;
  // The view of every job, from the state topic (and this process's own writes at once).
  readonly #view = new Map<string, StateRecord>();
  readonly #byMessage = new Map<string, string[]>();
  /** Each tenant's messages in log order, and the attempts counted as the view takes them in. */
  readonly #messageLog = new MessageLog();
  readonly #stats = new AttemptStats();
  readonly #idempotency = new Map<string, { answer: IdempotentAnswer; expiresAt: number }>();
  readonly #counts = { ready: 0, delayed: 0, delivered: 0, dead: 0 };
  // Appends of one turn of the event loop go as one request (a group commit).
  #outbox: { records: KafkaRecordOut[]; resolve: (offsets: number[]) => void; reject: (error: unknown) => void }[] = [];

  private constructor(log: KafkaLog, options: KafkaQueueOptions, partitionCount: number) {
    this.#log = log;
    this.#topics = options.topics;
    this.#capacity = options.capacity ?? 100_000;
    this.#deliveredRetention = options.deliveredRetentionMs ?? 86_400_000;
    this.#maxDelivered = options.maxDelivered ?? 100_000;
    this.#deadRetention = options.deadRetentionMs ?? 604_800_000;
    this.#maxDeadPerTenant = options.maxDeadPerTenant ?? 10_000;
    this.#maxBuffered = options.maxBufferedPerPartition ?? 10_000;
    this.#catchUpMs = options.catchUpMs ?? 2000;
    this.#partitionCount = partitionCount;
    this.#setTimer = options.setTimer ?? ((task, ms) => {
      const timer = setTimeout(task, ms);
      return () => clearTimeout(timer);
    });
  }

  /**
   * Opens the queue: reads the state topic to its end, then joins the
   * consumer group of the jobs and retry topics.
   * @param log the Kafka connection
   * @param options topics, group and limits
   * @returns the queue, ready to use
   */
  static async open(log: KafkaLog, options: KafkaQueueOptions): Promise<KafkaQueue> {
    const [jobs, retry] = await Promise.all([log.partitions(options.topics.jobs), log.partitions(options.topics.retry)]);
    if (jobs !== retry) {
      throw new TypeError(`Cannot use the Kafka topics: ${options.topics.jobs} has ${jobs} partitions but ${options.topics.retry} has ${retry}; they need as many`);
    }
    const queue = new KafkaQueue(log, options, jobs);
    // Both joins at once (a group's first join takes seconds); jobs read before the state is wait for it.
    const [, work] = await Promise.all([
      queue.#readState(options.instanceId, options.groupId ?? "tributary-relay"),
      log.subscribe({
        groupId: options.groupId ?? "tributary-relay",
        topics: [options.topics.jobs, options.topics.retry],
        fromBeginning: true,
        onBatch: (batch) => queue.#stateRead === undefined ? queue.#read(batch) : queue.#stateRead.push(batch),
        onAssign: (assigned) => queue.#assign(assigned),
      }),
    ]);
    queue.#work = work;
    const early = queue.#stateRead ?? [];
    queue.#stateRead = undefined;
    for (const batch of early) queue.#read(batch);
    return queue;
  }

  /** Reads the state topic from its start, in a group of this process alone, up to its end at the time of opening. */
  async #readState(instanceId: string, groupId: string): Promise<void> {
    const ends = await this.#log.ends(this.#topics.state);
    const reached = new Map<number, number>();
    let caughtUp: () => void = () => {};
    const done = new Promise<void>((resolve) => (caughtUp = resolve));
    const check = (): void => {
      for (const [partition, end] of ends) if ((reached.get(partition) ?? 0) < end) return;
      caughtUp();
    };
    this.#stateReader = await this.#log.subscribe({
      groupId: `${groupId}.state.${instanceId}`,
      topics: [this.#topics.state],
      fromBeginning: true,
      onBatch: (batch) => {
        for (const record of batch.records) {
          if (record.key !== null) this.#applyRecord(record.key, record.value);
          reached.set(batch.partition, record.offset + 1);
        }
        check();
      },
      onAssign: () => {},
    });
    check();
    await done;
  }

  enqueue(batch: EnqueueBatch): Promise<EnqueueResult> {
    const idempotencyKey = batch.idempotency === undefined ? undefined : `${batch.tenantId}\n${batch.idempotency.key}`;
    if (idempotencyKey !== undefined) {
      const previous = this.#idempotency.get(idempotencyKey);
      if (previous !== undefined) return Promise.resolve({ accepted: false, previous: previous.answer });
    }
    if (this.#counts.ready + this.#counts.delayed + batch.jobs.length > this.#capacity) {
      return Promise.reject(queueFull("queue the message", this.#capacity));
    }
    if (this.#byMessage.has(batch.messageId)) {
      return Promise.reject(new TypeError(`Cannot queue message ${batch.messageId}: it is queued already`));
    }
    // Seen at once by this process, so the next batch of the same turn is checked against it.
    const records: KafkaRecordOut[] = [];
    for (const job of batch.jobs) {
      const state: StateRecord = { rev: 0, state: "ready", reason: "", finished: 0, job };
      this.#apply(state);
      records.push(this.#jobRecord(this.#topics.jobs, job, 0), this.#stateRecord(state));
    }
    if (idempotencyKey !== undefined && batch.idempotency !== undefined) {
      const kept = { answer: batch.idempotency.answer, expiresAt: batch.idempotency.expiresAt };
      this.#idempotency.set(idempotencyKey, kept);
      records.push({ topic: this.#topics.state, partition: this.#partitionOf(batch.tenantId), key: `idem:${idempotencyKey}`, value: JSON.stringify(kept) });
    }
    return this.#append(records).then(
      () => ({ accepted: true }),
      (error: unknown) => {
        // Not appended: as if never queued.
        for (const job of batch.jobs) this.#forget(job.id);
        if (idempotencyKey !== undefined) this.#idempotency.delete(idempotencyKey);
        throw error;
      },
    );
  }

  async claim(options: ClaimOptions): Promise<Lease[]> {
    await this.#caughtUp();
    this.#promote(options.now);
    // Jobs in hand are delivered even if their partition has gone to another process since: that one may
    // send them again (at least once), but dropping them here would lose any the client does not read again.
    return await this.#local.claim(options);
  }

  /** Leases are this process's own (its partitions are what it holds in the group): renewed in its memory. */
  renew(leases: readonly Lease[], expiresAt: number): Promise<Lease[]> {
    return this.#local.renew(leases, expiresAt);
  }

  async ack(lease: Lease, attempt: Attempt): Promise<boolean> {
    const origin = this.#origins.get(lease.job.id);
    if (origin === undefined || !(await this.#local.ack(lease, attempt))) return false;
    this.#origins.delete(lease.job.id);
    const state: StateRecord = {
      rev: origin.rev + 1,
      state: "delivered",
      reason: "",
      finished: attempt.at + attempt.latencyMs,
      job: { ...lease.job, attempts: [...lease.job.attempts, attempt] },
    };
    this.#apply(state);
    try {
      await this.#append([this.#stateRecord(state)]);
    } finally {
      // Delivered whether or not its state could be written.
      this.#handled(origin);
    }
    return true;
  }

  async retry(lease: Lease, attempt: Attempt, dueAt: number): Promise<boolean> {
    const origin = this.#origins.get(lease.job.id);
    if (origin === undefined || !(await this.#local.ack(lease, attempt))) return false;
    this.#origins.delete(lease.job.id);
    const job: Job = { ...lease.job, attempts: [...lease.job.attempts, attempt], dueAt };
    const state: StateRecord = { rev: origin.rev + 1, state: "delayed", reason: "", finished: 0, job };
    try {
      await this.#append([this.#jobRecord(this.#topics.retry, job, state.rev), this.#stateRecord(state)]);
    } catch (error) {
      // Kept here, its record not handled, until it can be handed on.
      this.#waiting.push({ dueAt, job, origin });
      throw error;
    }
    this.#apply(state);
    this.#handled(origin);
    return true;
  }

  release(lease: Lease, dueAt: number): Promise<boolean> {
    return this.#local.release(lease, dueAt);
  }

  async bury(lease: Lease, death: Death): Promise<boolean> {
    const origin = this.#origins.get(lease.job.id);
    const last = death.attempt ?? { at: death.at, outcome: "failure", status: null, latencyMs: 0, error: death.reason };
    if (origin === undefined || !(await this.#local.ack(lease, last))) return false;
    this.#origins.delete(lease.job.id);
    const job: Job = death.attempt === undefined ? lease.job : { ...lease.job, attempts: [...lease.job.attempts, death.attempt] };
    const state: StateRecord = { rev: origin.rev + 1, state: "dead", reason: death.reason, finished: death.at, job };
    try {
      await this.#append([this.#jobRecord(this.#topics.dead, job, state.rev), this.#stateRecord(state)]);
    } catch (error) {
      this.#waiting.push({ dueAt: death.at, job: lease.job, origin });
      throw error;
    }
    this.#apply(state);
    this.#handled(origin);
    return true;
  }

  deadLetters(tenantId: string, query: DeadLetterQuery): Promise<JobView[]> {
    const dead = this.#dead(tenantId).filter((entry) => query.endpointId === undefined || entry.job.endpointId === query.endpointId);
    return Promise.resolve(dead.slice(0, query.limit).map((entry) => ({ ...entry.job, state: "dead", reason: entry.reason })));
  }

  async replay(tenantId: string, target: { readonly jobId: string } | { readonly endpointId?: string }, now: number): Promise<number> {
    const chosen = this.#dead(tenantId).filter((entry) =>
      "jobId" in target ? entry.job.id === target.jobId : target.endpointId === undefined || entry.job.endpointId === target.endpointId
    );
    if (this.#counts.ready + this.#counts.delayed + chosen.length > this.#capacity) {
      throw queueFull(`replay ${chosen.length} jobs`, this.#capacity);
    }
    const records: KafkaRecordOut[] = [];
    const states: StateRecord[] = [];
    for (const entry of chosen) {
      const state: StateRecord = { rev: entry.rev + 1, state: "ready", reason: "", finished: 0, job: { ...entry.job, dueAt: now } };
      states.push(state);
      records.push(this.#jobRecord(this.#topics.jobs, state.job, state.rev), this.#stateRecord(state));
    }
    if (records.length > 0) await this.#append(records);
    for (const state of states) this.#apply(state);
    return chosen.length;
  }

  async message(tenantId: string, messageId: string): Promise<JobView[]> {
    const views: JobView[] = [];
    for (const id of this.#byMessage.get(messageId) ?? []) {
      const entry = this.#view.get(id);
      if (entry === undefined || entry.job.tenantId !== tenantId) continue;
      // A job in hand here: its state is the local one (leased, or released to wait).
      const origin = this.#origins.get(id);
      const [local] = origin === undefined ? [] : await this.#local.message(tenantId, `${origin.topic}/${origin.partition}/${origin.offset}`);
      if (local !== undefined) views.push(local);
      else views.push(entry.state === "dead" ? { ...entry.job, state: "dead", reason: entry.reason } : { ...entry.job, state: entry.state });
    }
    return views;
  }

  messages(tenantId: string, query: MessageQuery): Promise<MessagePage> {
    return readPage(this.#messageLog.newestFirst(tenantId, query), query, (key) => this.message(tenantId, key.messageId));
  }

  attemptStats(tenantId: string, since: number): Promise<AttemptCounts[]> {
    return Promise.resolve(this.#stats.totals(tenantId, since));
  }

  async depth(now: number): Promise<QueueDepth> {
    const local = await this.#local.depth(now);
    return {
      ready: Math.max(0, this.#counts.ready - local.leased),
      delayed: this.#counts.delayed,
      leased: local.leased,
      dead: this.#counts.dead,
    };
  }

  async nextDue(): Promise<number | undefined> {
    await this.#caughtUp();
    const local = await this.#local.nextDue();
    const waiting = this.#waiting.peek()?.dueAt;
    if (local === undefined) return waiting;
    return waiting === undefined ? local : Math.min(local, waiting);
  }

  async sweep(now: number): Promise<void> {
    await this.#local.sweep(now);
    this.#stats.sweep(now);
    for (const [key, kept] of this.#idempotency) if (kept.expiresAt <= now) this.#idempotency.delete(key);
    const delivered: StateRecord[] = [];
    const deadByTenant = new Map<string, StateRecord[]>();
    for (const entry of this.#view.values()) {
      if (entry.state === "delivered") {
        if (entry.finished <= now - this.#deliveredRetention) this.#forget(entry.job.id);
        else delivered.push(entry);
      } else if (entry.state === "dead") {
        if (entry.finished <= now - this.#deadRetention) this.#forget(entry.job.id);
        else {
          const dead = deadByTenant.get(entry.job.tenantId);
          if (dead === undefined) deadByTenant.set(entry.job.tenantId, [entry]);
          else dead.push(entry);
        }
      }
    }
    const oldestFirst = (a: StateRecord, b: StateRecord): number => a.finished - b.finished;
    for (const entry of delivered.sort(oldestFirst).slice(0, Math.max(0, delivered.length - this.#maxDelivered))) this.#forget(entry.job.id);
    for (const dead of deadByTenant.values()) {
      for (const entry of dead.sort(oldestFirst).slice(0, Math.max(0, dead.length - this.#maxDeadPerTenant))) this.#forget(entry.job.id);
    }
  }

  async close(): Promise<void> {
    // What is handled is committed while this process still holds its partitions.
    await this.#commit();
    await Promise.allSettled([this.#work?.close(), this.#stateReader?.close()]);
    await this.#log.close();
  }

  /** Takes records of the jobs and retry topics into the local work queue. */
  #read(batch: KafkaBatch): void {
    const key = `${batch.topic}\n${batch.partition}`;
    let partition = this.#partitions.get(key);
    // The client hands over records of a partition only while this process holds it, whatever the order of its events.
    if (partition === undefined) this.#partitions.set(key, (partition = newPartition()));
    else if (!partition.owned) hold(partition);
    for (const record of batch.records) {
      // The first record read is where the group's last commit left off.
      if (partition.next < 0) partition.committed = record.offset;
      partition.next = Math.max(partition.next, record.offset + 1);
      // Read again (after a rebalance the client starts over from the last commit) while its job is in hand.
      if (partition.unhandled.has(record.offset)) continue;
      const parsed = parseJobRecord(record.value);
      // Unreadable, superseded (the state topic has a later revision: delivered, retried, dead) or in hand from another record: nothing to do.
      if (parsed === undefined || this.#stale(parsed) || this.#origins.has(parsed.job.id)) continue;
      partition.unhandled.add(record.offset);
      const from: Origin = { topic: batch.topic, partition: batch.partition, offset: record.offset, rev: parsed.rev };
      if (batch.topic === this.#topics.retry) this.#waiting.push({ dueAt: parsed.job.dueAt, job: parsed.job, origin: from });
      else this.#take(parsed.job, from);
    }
    if (!partition.paused && partition.unhandled.size >= this.#maxBuffered) {
      partition.paused = true;
      this.#work?.pause(batch.topic, batch.partition);
    }
    const waiters = this.#readWaiters;
    this.#readWaiters = [];
    for (const wake of waiters) wake();
  }

  /** Puts a job into the local work queue. */
  #take(job: Job, origin: Origin): void {
    this.#origins.set(job.id, origin);
    void this.#local.enqueue({ tenantId: job.tenantId, messageId: `${origin.topic}/${origin.partition}/${origin.offset}`, jobs: [job] });
  }

  /** Moves retries that are due into the local work queue. */
  #promote(now: number): void {
    for (let next = this.#waiting.peek(); next !== undefined && next.dueAt <= now; next = this.#waiting.peek()) {
      this.#waiting.pop();
      if (this.#origins.has(next.job.id)) {
        this.#handled(next.origin);
        continue;
      }
      this.#take(next.job, next.origin);
    }
  }

  /** True when the state topic says the job moved on past this record (delivered, dead, or read from a later record). */
  #stale(record: JobRecord): boolean {
    const known = this.#view.get(record.job.id);
    return known !== undefined && known.rev > record.rev;
  }

  #assign(assigned: ReadonlyMap<string, readonly number[]>): void {
    const now = new Set<string>();
    for (const [topic, partitions] of assigned) for (const partition of partitions) now.add(`${topic}\n${partition}`);
    // A partition lost keeps its record of jobs in hand (they are still delivered) but commits no more:
    // its new holder reads it again from the last commit.
    for (const [key, state] of this.#partitions) {
      if (!now.has(key)) state.owned = false;
      else if (!state.owned) hold(state);
    }
    for (const key of now) if (!this.#partitions.has(key)) this.#partitions.set(key, newPartition());
  }

  /** Marks a record handled; commits what is handled in order at the end of the turn. */
  #handled(origin: Origin): void {
    const partition = this.#partitions.get(`${origin.topic}\n${origin.partition}`);
    if (partition === undefined) return;
    partition.unhandled.delete(origin.offset);
    if (partition.paused && partition.unhandled.size < this.#maxBuffered / 2) {
      partition.paused = false;
      this.#work?.resume(origin.topic, origin.partition);
    }
    // Commits go out at most every 100 ms: each is a request to the group's coordinator.
    if (this.#cancelCommit === undefined) this.#cancelCommit = this.#setTimer(() => void this.#commit(), 100);
  }

  async #commit(): Promise<void> {
    this.#cancelCommit?.();
    this.#cancelCommit = undefined;
    const offsets: { topic: string; partition: number; offset: number }[] = [];
    for (const [key, partition] of this.#partitions) {
      if (!partition.owned) continue;
      let next = partition.next;
      for (const offset of partition.unhandled) next = Math.min(next, offset);
      // Nothing read yet: the group's committed offset stands.
      if (next < 0 || next <= partition.committed) continue;
      partition.committed = next;
      const [topic, number] = key.split("\n") as [string, string];
      offsets.push({ topic, partition: Number(number), offset: next });
    }
    // A commit refused in a rebalance is made good by the next one, or the records are read again: at least once.
    if (offsets.length > 0) await this.#work?.commit(offsets).catch(() => {});
  }

  /**
   * Waits (a bounded time) until this process has read back what it appended
   * to its own partitions. A partition it no longer holds, or has paused, is
   * not waited for: no record of it is coming (waiting there made every
   * claim take the whole bound after a rebalance).
   */
  async #caughtUp(): Promise<void> {
    const deadline = Date.now() + this.#catchUpMs;
    for (;;) {
      let behind = false;
      for (const [key, last] of this.#produced) {
        const partition = this.#partitions.get(key);
        if (partition === undefined || !partition.owned || partition.paused || partition.next > last) this.#produced.delete(key);
        else behind = true;
      }
      if (!behind || Date.now() >= deadline) return;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.max(1, deadline - Date.now()));
        this.#readWaiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** Appends records with those of the same turn, in one request. */
  #append(records: KafkaRecordOut[]): Promise<number[]> {
    return new Promise((resolve, reject) => {
      if (this.#outbox.length === 0) setImmediate(() => void this.#flush());
      this.#outbox.push({ records, resolve, reject });
    });
  }

  async #flush(): Promise<void> {
    const outbox = this.#outbox;
    this.#outbox = [];
    const all = outbox.flatMap((entry) => entry.records);
    let offsets: number[];
    try {
      offsets = await this.#log.produce(all);
    } catch (error) {
      const unavailable = new RelayError("ERR_RELAY_QUEUE_UNAVAILABLE", `Cannot use the Kafka queue: ${(error as Error).message}`, {
        retryAfterMs: 1000,
        cause: error,
      });
      for (const entry of outbox) entry.reject(unavailable);
      return;
    }
    all.forEach((record, i) => {
      if (record.topic !== this.#topics.jobs && record.topic !== this.#topics.retry) return;
      const key = `${record.topic}\n${record.partition}`;
      if (this.#partitions.get(key)?.owned === true) this.#produced.set(key, Math.max(this.#produced.get(key) ?? -1, offsets[i]!));
    });
    let at = 0;
    for (const entry of outbox) {
      entry.resolve(offsets.slice(at, at + entry.records.length));
      at += entry.records.length;
    }
  }

  #jobRecord(topic: string, job: Job, rev: number): KafkaRecordOut {
    return { topic, partition: this.#partitionOf(job.tenantId), key: job.tenantId, value: JSON.stringify({ rev, job }) };
  }

  #stateRecord(state: StateRecord): KafkaRecordOut {
    return { topic: this.#topics.state, partition: this.#partitionOf(state.job.tenantId), key: `job:${state.job.id}`, value: JSON.stringify(state) };
  }

  /** A tenant's partition: the same for all its records, so they keep their order. */
  #partitionOf(tenantId: string): number {
    let hash = 0x811c9dc5;
    for (let i = 0; i < tenantId.length; i++) hash = Math.imul(hash ^ tenantId.charCodeAt(i), 0x01000193);
    return (hash >>> 0) % this.#partitionCount;
  }

  /** Applies a state-topic record read from the log. */
  #applyRecord(key: string, value: string | null): void {
    if (key.startsWith("idem:")) {
      const idempotencyKey = key.slice("idem:".length);
      if (value === null) this.#idempotency.delete(idempotencyKey);
      else {
        const kept = parseJson(value) as { answer: IdempotentAnswer; expiresAt: number } | undefined;
        if (kept !== undefined) this.#idempotency.set(idempotencyKey, kept);
      }
      return;
    }
    if (!key.startsWith("job:")) return;
    if (value === null) {
      this.#forget(key.slice("job:".length));
      return;
    }
    const state = parseJson(value) as StateRecord | undefined;
    if (state !== undefined && typeof state.rev === "number" && typeof state.job?.id === "string") this.#apply(state);
  }

  /**
   * Takes a job's state into the view, unless the view has a later one; the
   * attempts it holds beyond the view's are counted (every process reads
   * every state record, so each counts every attempt once).
   */
  #apply(state: StateRecord): void {
    const id = state.job.id;
    const known = this.#view.get(id);
    if (known !== undefined) {
      if (known.rev >= state.rev) return;
      this.#counts[known.state]--;
    } else {
      const ids = this.#byMessage.get(state.job.messageId);
      if (ids === undefined) {
        this.#byMessage.set(state.job.messageId, [id]);
        this.#messageLog.add(state.job.tenantId, { createdAt: state.job.createdAt, messageId: state.job.messageId });
      } else ids.push(id);
    }
    const attempts = state.job.attempts;
    for (let i = known?.job.attempts.length ?? 0; i < attempts.length; i++) this.#stats.count(state.job.tenantId, state.job.endpointId, attempts[i]!);
    this.#view.set(id, state);
    this.#counts[state.state]++;
  }

  #forget(id: string): void {
    const known = this.#view.get(id);
    if (known === undefined) return;
    this.#view.delete(id);
    this.#counts[known.state]--;
    const ids = this.#byMessage.get(known.job.messageId)?.filter((other) => other !== id) ?? [];
    if (ids.length === 0) {
      this.#byMessage.delete(known.job.messageId);
      this.#messageLog.drop(known.job.tenantId, (key) => this.#kept(key));
    } else this.#byMessage.set(known.job.messageId, ids);
  }

  /** Whether a key of the log still names a message in the view. */
  #kept(key: MessageCursor): boolean {
    const first = this.#byMessage.get(key.messageId)?.[0];
    return first !== undefined && this.#view.get(first)?.job.createdAt === key.createdAt;
  }

  /** A tenant's dead jobs, newest first. */
  #dead(tenantId: string): StateRecord[] {
    const dead: StateRecord[] = [];
    for (const entry of this.#view.values()) if (entry.state === "dead" && entry.job.tenantId === tenantId) dead.push(entry);
    return dead.sort((a, b) => b.finished - a.finished);
  }
}

function newPartition(): PartitionState {
  return { owned: true, next: -1, unhandled: new Set(), paused: false, committed: -1 };
}

/**
 * Takes back a partition lost before: reading starts over from the group's
 * last commit, which another process may have moved past this one's, so
 * what this one read or committed then says nothing (committing its old
 * position would move the group's back). Jobs still in hand stay in hand.
 */
function hold(partition: PartitionState): void {
  partition.owned = true;
  partition.next = -1;
  partition.committed = -1;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function parseJobRecord(value: string | null): JobRecord | undefined {
  if (value === null) return undefined;
  const parsed = parseJson(value) as JobRecord | undefined;
  if (parsed === undefined || typeof parsed.rev !== "number" || typeof parsed.job?.id !== "string") return undefined;
  return parsed;
}
