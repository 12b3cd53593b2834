import { AttemptStats } from "./_message_log.ts";
import type {
  Attempt,
  AttemptBucket,
  Death,
  EnqueueBatch,
  IdempotentAnswer,
  JobView,
} from "./queue.ts";

// What a MemoryQueue (memory_queue.ts) writes to be durable and reads back
// after a restart: the changes its sink records, the snapshot a journal's
// compaction writes, and foldChanges, which brings a snapshot up to date with
// the changes after it. MemoryQueue.exportState and MemoryQueue.restore are
// the two ends; they stay in the class, which owns the state they save.

/** A change of a {@linkcode MemoryQueue}, as its sink records it and {@linkcode MemoryQueue.restore} reads it back. */
export type QueueChange =
  | { readonly op: "enqueue"; readonly batch: EnqueueBatch }
  | { readonly op: "ack"; readonly job: string; readonly attempt: Attempt }
  | {
    readonly op: "retry";
    readonly job: string;
    readonly attempt: Attempt;
    readonly dueAt: number;
  }
  | { readonly op: "bury"; readonly job: string; readonly death: Death }
  | { readonly op: "replay"; readonly jobs: readonly string[]; readonly dueAt: number };

/** One job in a {@linkcode MemoryQueueSnapshot}. */
export interface SnapshotJob extends JobView {
  /** When a delivered or dead job finished. */
  readonly finishedAt?: number;
}

/**
 * What a {@linkcode MemoryQueue} holds, as plain JSON-ready data: what a
 * journal's compaction writes, and what {@linkcode MemoryQueue.restore} starts
 * from. Leased jobs are saved as ready: their leases die with the process.
 */
export interface MemoryQueueSnapshot {
  readonly version: 1;
  readonly jobs: readonly SnapshotJob[];
  readonly idempotency: readonly {
    readonly tenantId: string;
    readonly key: string;
    readonly answer: IdempotentAnswer;
    readonly expiresAt: number;
  }[];
  /** Attempt counts by bucket; absent in snapshots made before they were kept. */
  readonly stats?: readonly AttemptBucket[];
}

const SAVED_STATES = new Set(["ready", "delayed", "leased", "delivered", "dead"]);

/**
 * Applies recorded changes to a snapshot: the queue's state after them.
 * @param snapshot the last snapshot, or undefined for an empty queue
 * @param changes the changes after it, oldest first
 * @returns the state as one snapshot
 * @throws {TypeError} when the snapshot or a change is not one a MemoryQueue wrote
 */
export function foldChanges(snapshot: unknown, changes: readonly unknown[]): MemoryQueueSnapshot {
  const base = snapshot as Partial<MemoryQueueSnapshot> | null | undefined;
  if (
    base !== undefined &&
    (typeof base !== "object" || base === null || base.version !== 1 || !Array.isArray(base.jobs) ||
      !Array.isArray(base.idempotency))
  ) {
    throw new TypeError("Cannot restore the relay queue: the snapshot is not one it wrote");
  }
  // By job id, in the order the jobs were queued.
  const jobs = new Map<string, SnapshotJob>();
  const idempotency = new Map<string, MemoryQueueSnapshot["idempotency"][number]>();
  for (const job of base?.jobs ?? []) {
    if (typeof job?.id !== "string" || !SAVED_STATES.has(job.state)) {
      throw new TypeError("Cannot restore the relay queue: the snapshot is not one it wrote");
    }
    jobs.set(job.id, job);
  }
  for (const kept of base?.idempotency ?? []) {
    idempotency.set(idempotencyKey(kept.tenantId, kept.key), kept);
  }
  const stats = new AttemptStats();
  if (base?.stats !== undefined && !Array.isArray(base.stats)) {
    throw new TypeError("Cannot restore the relay queue: the snapshot is not one it wrote");
  }
  for (const bucket of base?.stats ?? []) stats.restore(checkedBucket(bucket));
  const known = (id: string): SnapshotJob => {
    const job = jobs.get(id);
    if (job === undefined) {
      throw new TypeError(
        `Cannot restore the relay queue: a change names job ${id}, which was never queued`,
      );
    }
    return job;
  };
  for (const raw of changes) {
    const change = raw as QueueChange;
    switch (change?.op) {
      case "enqueue":
        for (const job of change.batch.jobs) jobs.set(job.id, { ...job, state: "ready" });
        if (change.batch.idempotency !== undefined) {
          const { key, answer, expiresAt } = change.batch.idempotency;
          idempotency.set(idempotencyKey(change.batch.tenantId, key), {
            tenantId: change.batch.tenantId,
            key,
            answer,
            expiresAt,
          });
        }
        break;
      case "ack": {
        const job = known(change.job);
        const { attempt } = change;
        jobs.set(job.id, {
          ...job,
          state: "delivered",
          attempts: [...job.attempts, attempt],
          finishedAt: attempt.at + attempt.latencyMs,
        });
        stats.count(job.tenantId, job.endpointId, attempt);
        break;
      }
      case "retry": {
        const job = known(change.job);
        jobs.set(job.id, {
          ...job,
          state: "delayed",
          attempts: [...job.attempts, change.attempt],
          dueAt: change.dueAt,
        });
        stats.count(job.tenantId, job.endpointId, change.attempt);
        break;
      }
      case "bury": {
        const job = known(change.job);
        const { death } = change;
        const attempts = death.attempt === undefined
          ? job.attempts
          : [...job.attempts, death.attempt];
        jobs.set(job.id, {
          ...job,
          state: "dead",
          attempts,
          reason: death.reason,
          finishedAt: death.at,
        });
        if (death.attempt !== undefined) stats.count(job.tenantId, job.endpointId, death.attempt);
        break;
      }
      case "replay":
        for (const id of change.jobs) {
          const { reason: _reason, finishedAt: _finishedAt, ...job } = known(id);
          jobs.set(id, { ...job, state: "ready", dueAt: change.dueAt });
        }
        break;
      default:
        throw new TypeError("Cannot restore the relay queue: a change is not one it wrote");
    }
  }
  return {
    version: 1,
    jobs: [...jobs.values()],
    idempotency: [...idempotency.values()],
    stats: stats.buckets(),
  };
}

function checkedBucket(value: unknown): AttemptBucket {
  const bucket = value as Partial<AttemptBucket> | null;
  if (
    bucket === null || typeof bucket !== "object" || typeof bucket.tenantId !== "string" ||
    typeof bucket.endpointId !== "string" ||
    !Number.isSafeInteger(bucket.bucket) || !Number.isSafeInteger(bucket.attempts) ||
    !Number.isSafeInteger(bucket.successes)
  ) {
    throw new TypeError(
      "Cannot restore the relay queue: the snapshot's attempt counts are not ones it wrote",
    );
  }
  return bucket as AttemptBucket;
}

/**
 * The key of an idempotency answer: one string for the tenant and its key.
 * @param tenantId the tenant
 * @param key the request's `Idempotency-Key`
 * @returns `<tenant>\n<key>`
 */
export function idempotencyKey(tenantId: string, key: string): string {
  return `${tenantId}\n${key}`;
}
