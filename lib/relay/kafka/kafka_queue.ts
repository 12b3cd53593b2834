import { Heap } from "../_heap.ts";
import { readPage } from "../_message_log.ts";
import { queueFull } from "../errors.ts";
import { MemoryQueue } from "../memory_queue.ts";
import type {
  Attempt,
  AttemptCounts,
  ClaimOptions,
  DeadLetterQuery,
  Death,
  EnqueueBatch,
  EnqueueResult,
  Job,
  JobQueue,
  JobView,
  Lease,
  MessagePage,
  MessageQuery,
  QueueDepth,
} from "../queue.ts";
import { PartitionOffsets, type RecordPlace } from "./_kafka_offsets.ts";
import { KafkaOutbox } from "./_kafka_outbox.ts";
import {
  type JobRecord,
  KafkaView,
  parseJobRecord,
  type StateRecord,
  type ViewRetention,
} from "./_kafka_view.ts";
import type {
  KafkaBatch,
  KafkaLog,
  KafkaRecordOut,
  KafkaSubscription,
} from "../../storage/_internal.ts";

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
  return {
    jobs: `${prefix}.jobs`,
    retry: `${prefix}.retry`,
    dead: `${prefix}.dead`,
    state: `${prefix}.state`,
  };
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

/** Where a job being worked on came from: its record, to commit once handled. */
interface Origin extends RecordPlace {
  readonly rev: number;
}

/** A job in the local work queue: where it came from, and its message id there (one of its own each time). */
interface InHand extends Origin {
  readonly local: string;
}

/** A retry read from its topic before its due time. */
interface Waiting {
  readonly dueAt: number;
  readonly job: Job;
  readonly origin: Origin;
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
 *
 * Its parts: the view of every job from the state topic (_kafka_view.ts),
 * the appends awaiting acknowledgement (_kafka_outbox.ts) and the offsets of
 * the partitions it reads (_kafka_offsets.ts); this class moves jobs
 * between them and the local work queue.
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
  readonly #retention: ViewRetention;
  readonly #partitionCount: number;
  readonly #local = new MemoryQueue({
    capacity: Number.MAX_SAFE_INTEGER,
    maxDelivered: 0,
    maxDeadPerTenant: 0,
    deadRetentionMs: 0,
    deliveredRetentionMs: 0,
  });
  readonly #origins = new Map<string, InHand>();
  /** Jobs put into the local work queue so far, for their message ids there. */
  #taken = 0;
  readonly #waiting = new Heap<Waiting>((a, b) => a.dueAt < b.dueAt);
  readonly #offsets: PartitionOffsets;
  #work: KafkaSubscription | undefined;
  /** Job batches read before the state topic was: they wait for it. */
  #stateRead: KafkaBatch[] | undefined = [];
  #stateReader: KafkaSubscription | undefined;
  /** The view of every job, from the state topic (and this process's own writes at once). */
  readonly #view = new KafkaView();
  /** Appends of one turn of the event loop go as one request (a group commit). */
  readonly #outbox: KafkaOutbox;

  private constructor(log: KafkaLog, options: KafkaQueueOptions, partitionCount: number) {
    this.#log = log;
    this.#topics = options.topics;
    this.#capacity = options.capacity ?? 100_000;
    this.#retention = {
      deliveredRetentionMs: options.deliveredRetentionMs ?? 86_400_000,
      maxDelivered: options.maxDelivered ?? 100_000,
      deadRetentionMs: options.deadRetentionMs ?? 604_800_000,
      maxDeadPerTenant: options.maxDeadPerTenant ?? 10_000,
    };
    this.#partitionCount = partitionCount;
    this.#offsets = new PartitionOffsets({
      maxBuffered: options.maxBufferedPerPartition ?? 10_000,
      catchUpMs: options.catchUpMs ?? 2000,
      setTimer: options.setTimer ?? ((task, ms) => {
        const timer = setTimeout(task, ms);
        return () => clearTimeout(timer);
      }),
    });
    this.#outbox = new KafkaOutbox(log, (record, offset) => {
      // What this process appended to its own jobs and retry partitions: `claim` waits to have read it.
      if (record.topic === this.#topics.jobs || record.topic === this.#topics.retry) {
        this.#offsets.produced(record.topic, record.partition, offset);
      }
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
    const [jobs, retry] = await Promise.all([
      log.partitions(options.topics.jobs),
      log.partitions(options.topics.retry),
    ]);
    if (jobs !== retry) {
      throw new TypeError(
        `Cannot use the Kafka topics: ${options.topics.jobs} has ${jobs} partitions but ${options.topics.retry} has ${retry}; they need as many`,
      );
    }
    const queue = new KafkaQueue(log, options, jobs);
    // Both joins at once (a group's first join takes seconds); jobs read before the state is wait for it.
    const [, work] = await Promise.all([
      queue.#readState(options.instanceId, options.groupId ?? "tributary-relay"),
      log.subscribe({
        groupId: options.groupId ?? "tributary-relay",
        topics: [options.topics.jobs, options.topics.retry],
        fromBeginning: true,
        onBatch: (batch) =>
          queue.#stateRead === undefined ? queue.#read(batch) : queue.#stateRead.push(batch),
        onAssign: (assigned) => queue.#offsets.assign(assigned),
      }),
    ]);
    queue.#work = work;
    queue.#offsets.attach(work);
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
          if (record.key !== null) this.#view.applyRecord(record.key, record.value);
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
    const idempotencyKey = batch.idempotency === undefined
      ? undefined
      : `${batch.tenantId}\n${batch.idempotency.key}`;
    if (idempotencyKey !== undefined) {
      const previous = this.#view.answer(idempotencyKey);
      if (previous !== undefined) {
        return Promise.resolve({ accepted: false, previous: previous.answer });
      }
    }
    if (this.#view.counts.ready + this.#view.counts.delayed + batch.jobs.length > this.#capacity) {
      return Promise.reject(queueFull("queue the message", this.#capacity));
    }
    if (this.#view.jobsOf(batch.messageId) !== undefined) {
      return Promise.reject(
        new TypeError(`Cannot queue message ${batch.messageId}: it is queued already`),
      );
    }
    // Seen at once by this process, so the next batch of the same turn is checked against it.
    const records: KafkaRecordOut[] = [];
    for (const job of batch.jobs) {
      const state: StateRecord = { rev: 0, state: "ready", reason: "", finished: 0, job };
      this.#view.apply(state);
      records.push(this.#jobRecord(this.#topics.jobs, job, 0), this.#stateRecord(state));
    }
    if (idempotencyKey !== undefined && batch.idempotency !== undefined) {
      const kept = { answer: batch.idempotency.answer, expiresAt: batch.idempotency.expiresAt };
      this.#view.keepAnswer(idempotencyKey, kept);
      records.push({
        topic: this.#topics.state,
        partition: this.#partitionOf(batch.tenantId),
        key: `idem:${idempotencyKey}`,
        value: JSON.stringify(kept),
      });
    }
    return this.#outbox.append(records).then(
      () => ({ accepted: true }),
      (error: unknown) => {
        // Not appended: as if never queued.
        for (const job of batch.jobs) this.#view.forget(job.id);
        if (idempotencyKey !== undefined) this.#view.dropAnswer(idempotencyKey);
        throw error;
      },
    );
  }

  async claim(options: ClaimOptions): Promise<Lease[]> {
    await this.#offsets.caughtUp();
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
    this.#view.apply(state);
    try {
      await this.#outbox.append([this.#stateRecord(state)]);
    } finally {
      // Delivered whether or not its state could be written.
      this.#offsets.handled(origin);
    }
    return true;
  }

  async retry(lease: Lease, attempt: Attempt, dueAt: number): Promise<boolean> {
    const origin = this.#origins.get(lease.job.id);
    if (origin === undefined || !(await this.#local.ack(lease, attempt))) return false;
    this.#origins.delete(lease.job.id);
    const job: Job = { ...lease.job, attempts: [...lease.job.attempts, attempt], dueAt };
    const state: StateRecord = {
      rev: origin.rev + 1,
      state: "delayed",
      reason: "",
      finished: 0,
      job,
    };
    try {
      await this.#outbox.append([
        this.#jobRecord(this.#topics.retry, job, state.rev),
        this.#stateRecord(state),
      ]);
    } catch (error) {
      // Kept here, its record not handled, until it can be handed on.
      this.#waiting.push({ dueAt, job, origin });
      throw error;
    }
    this.#view.apply(state);
    this.#offsets.handled(origin);
    return true;
  }

  release(lease: Lease, dueAt: number): Promise<boolean> {
    return this.#local.release(lease, dueAt);
  }

  async bury(lease: Lease, death: Death): Promise<boolean> {
    const origin = this.#origins.get(lease.job.id);
    const last = death.attempt ??
      { at: death.at, outcome: "failure", status: null, latencyMs: 0, error: death.reason };
    if (origin === undefined || !(await this.#local.ack(lease, last))) return false;
    this.#origins.delete(lease.job.id);
    const job: Job = death.attempt === undefined
      ? lease.job
      : { ...lease.job, attempts: [...lease.job.attempts, death.attempt] };
    const state: StateRecord = {
      rev: origin.rev + 1,
      state: "dead",
      reason: death.reason,
      finished: death.at,
      job,
    };
    try {
      await this.#outbox.append([
        this.#jobRecord(this.#topics.dead, job, state.rev),
        this.#stateRecord(state),
      ]);
    } catch (error) {
      this.#waiting.push({ dueAt: death.at, job: lease.job, origin });
      throw error;
    }
    this.#view.apply(state);
    this.#offsets.handled(origin);
    return true;
  }

  deadLetters(tenantId: string, query: DeadLetterQuery): Promise<JobView[]> {
    const dead = this.#view.dead(tenantId).filter((entry) =>
      query.endpointId === undefined || entry.job.endpointId === query.endpointId
    );
    return Promise.resolve(
      dead.slice(0, query.limit).map((entry) => ({
        ...entry.job,
        state: "dead",
        reason: entry.reason,
      })),
    );
  }

  async replay(
    tenantId: string,
    target: { readonly jobId: string } | { readonly endpointId?: string },
    now: number,
  ): Promise<number> {
    const chosen = this.#view.dead(tenantId).filter((entry) =>
      "jobId" in target
        ? entry.job.id === target.jobId
        : target.endpointId === undefined || entry.job.endpointId === target.endpointId
    );
    if (this.#view.counts.ready + this.#view.counts.delayed + chosen.length > this.#capacity) {
      throw queueFull(`replay ${chosen.length} jobs`, this.#capacity);
    }
    const records: KafkaRecordOut[] = [];
    const states: StateRecord[] = [];
    for (const entry of chosen) {
      const state: StateRecord = {
        rev: entry.rev + 1,
        state: "ready",
        reason: "",
        finished: 0,
        job: { ...entry.job, dueAt: now },
      };
      states.push(state);
      records.push(
        this.#jobRecord(this.#topics.jobs, state.job, state.rev),
        this.#stateRecord(state),
      );
    }
    if (records.length > 0) await this.#outbox.append(records);
    for (const state of states) this.#view.apply(state);
    return chosen.length;
  }

  async message(tenantId: string, messageId: string): Promise<JobView[]> {
    const views: JobView[] = [];
    for (const id of this.#view.jobsOf(messageId) ?? []) {
      const entry = this.#view.get(id);
      if (entry === undefined || entry.job.tenantId !== tenantId) continue;
      // A job in hand here: its state is the local one (leased, or released to wait).
      const origin = this.#origins.get(id);
      const [local] = origin === undefined ? [] : await this.#local.message(tenantId, origin.local);
      if (local !== undefined) views.push(local);
      else {views.push(
          entry.state === "dead"
            ? { ...entry.job, state: "dead", reason: entry.reason }
            : { ...entry.job, state: entry.state },
        );}
    }
    return views;
  }

  messages(tenantId: string, query: MessageQuery): Promise<MessagePage> {
    return readPage(
      this.#view.newestFirst(tenantId, query),
      query,
      (key) => this.message(tenantId, key.messageId),
    );
  }

  attemptStats(tenantId: string, since: number): Promise<AttemptCounts[]> {
    return Promise.resolve(this.#view.attemptTotals(tenantId, since));
  }

  async depth(now: number): Promise<QueueDepth> {
    const local = await this.#local.depth(now);
    return {
      ready: Math.max(0, this.#view.counts.ready - local.leased),
      delayed: this.#view.counts.delayed,
      leased: local.leased,
      dead: this.#view.counts.dead,
    };
  }

  async nextDue(): Promise<number | undefined> {
    await this.#offsets.caughtUp();
    const local = await this.#local.nextDue();
    const waiting = this.#waiting.peek()?.dueAt;
    if (local === undefined) return waiting;
    return waiting === undefined ? local : Math.min(local, waiting);
  }

  async sweep(now: number): Promise<void> {
    await this.#local.sweep(now);
    this.#view.sweep(now, this.#retention);
  }

  async close(): Promise<void> {
    // What is handled is committed while this process still holds its partitions.
    await this.#offsets.commit();
    await Promise.allSettled([this.#work?.close(), this.#stateReader?.close()]);
    await this.#log.close();
  }

  /** Takes records of the jobs and retry topics into the local work queue. */
  #read(batch: KafkaBatch): void {
    this.#offsets.read(batch, (record) => {
      const parsed = parseJobRecord(record.value);
      // Unreadable, superseded (the state topic has a later revision: delivered, retried, dead) or in hand from another record: nothing to do.
      if (parsed === undefined || this.#stale(parsed) || this.#origins.has(parsed.job.id)) {
        return false;
      }
      const from: Origin = {
        topic: batch.topic,
        partition: batch.partition,
        offset: record.offset,
        rev: parsed.rev,
      };
      if (batch.topic === this.#topics.retry) {
        this.#waiting.push({ dueAt: parsed.job.dueAt, job: parsed.job, origin: from });
      } else this.#take(parsed.job, from);
      return true;
    });
  }

  /**
   * Puts a job into the local work queue, under a message id never used
   * there before: a job whose retry or burial could not be appended is put
   * in again from the same record, while the local queue may still hold
   * the id of its first time (refused there as queued already).
   */
  #take(job: Job, origin: Origin): void {
    const local = `${origin.topic}/${origin.partition}/${origin.offset}/${++this.#taken}`;
    this.#origins.set(job.id, { ...origin, local });
    void this.#local.enqueue({ tenantId: job.tenantId, messageId: local, jobs: [job] });
  }

  /** Moves retries that are due into the local work queue. */
  #promote(now: number): void {
    for (
      let next = this.#waiting.peek();
      next !== undefined && next.dueAt <= now;
      next = this.#waiting.peek()
    ) {
      this.#waiting.pop();
      if (this.#origins.has(next.job.id)) {
        this.#offsets.handled(next.origin);
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

  #jobRecord(topic: string, job: Job, rev: number): KafkaRecordOut {
    return {
      topic,
      partition: this.#partitionOf(job.tenantId),
      key: job.tenantId,
      value: JSON.stringify({ rev, job }),
    };
  }

  #stateRecord(state: StateRecord): KafkaRecordOut {
    return {
      topic: this.#topics.state,
      partition: this.#partitionOf(state.job.tenantId),
      key: `job:${state.job.id}`,
      value: JSON.stringify(state),
    };
  }

  /** A tenant's partition: the same for all its records, so they keep their order. */
  #partitionOf(tenantId: string): number {
    let hash = 0x811c9dc5;
    for (let i = 0; i < tenantId.length; i++) {
      hash = Math.imul(hash ^ tenantId.charCodeAt(i), 0x01000193);
    }
    return (hash >>> 0) % this.#partitionCount;
  }
}
