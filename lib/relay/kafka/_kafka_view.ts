import { AttemptStats, MessageLog } from "../_message_log.ts";
import type {
  AttemptCounts,
  IdempotentAnswer,
  Job,
  MessageCursor,
  MessageQuery,
} from "../queue.ts";

/** A job's latest state as the state topic holds it. */
export interface StateRecord {
  readonly rev: number;
  readonly state: "ready" | "delayed" | "delivered" | "dead";
  readonly reason: string;
  readonly finished: number;
  readonly job: Job;
}

/** An idempotency key's answer and when it expires, as the state topic holds it. */
export interface KeptAnswer {
  answer: IdempotentAnswer;
  expiresAt: number;
}

/** Jobs of the view by state. */
export interface StateCounts {
  readonly ready: number;
  readonly delayed: number;
  readonly delivered: number;
  readonly dead: number;
}

/** How long the view keeps finished jobs, and how many. */
export interface ViewRetention {
  readonly deliveredRetentionMs: number;
  readonly maxDelivered: number;
  readonly deadRetentionMs: number;
  readonly maxDeadPerTenant: number;
}

/**
 * The Kafka queue's view of every job: the in-memory projection of the
 * compacted state topic (which every process reads whole), with this
 * process's own writes taken in at once. It holds each job's latest state by
 * revision, the jobs of each message, each tenant's message log, the
 * attempts counted as states come in, the idempotency answers, and the
 * number of jobs in each state: what the status, dead-letter, replay and
 * capacity checks read.
 */
export class KafkaView {
  readonly #jobs = new Map<string, StateRecord>();
  readonly #byMessage = new Map<string, string[]>();
  /** Each tenant's messages in log order, and the attempts counted as the view takes them in. */
  readonly #messageLog = new MessageLog();
  readonly #stats = new AttemptStats();
  readonly #idempotency = new Map<string, KeptAnswer>();
  readonly #counts = { ready: 0, delayed: 0, delivered: 0, dead: 0 };

  /** Jobs by state. */
  get counts(): StateCounts {
    return this.#counts;
  }

  /** A job's latest state; undefined when the view has none. */
  get(id: string): StateRecord | undefined {
    return this.#jobs.get(id);
  }

  /** The ids of a message's jobs; undefined when the view has none of them. */
  jobsOf(messageId: string): readonly string[] | undefined {
    return this.#byMessage.get(messageId);
  }

  /** The answer kept for an idempotency key (`<tenant>\n<key>`). */
  answer(key: string): KeptAnswer | undefined {
    return this.#idempotency.get(key);
  }

  /** Keeps an idempotency key's answer. */
  keepAnswer(key: string, kept: KeptAnswer): void {
    this.#idempotency.set(key, kept);
  }

  /** Forgets an idempotency key's answer. */
  dropAnswer(key: string): void {
    this.#idempotency.delete(key);
  }

  /** Applies a state-topic record read from the log. */
  applyRecord(key: string, value: string | null): void {
    if (key.startsWith("idem:")) {
      const idempotencyKey = key.slice("idem:".length);
      if (value === null) this.#idempotency.delete(idempotencyKey);
      else {
        const kept = parseJson(value) as KeptAnswer | undefined;
        if (kept !== undefined) this.#idempotency.set(idempotencyKey, kept);
      }
      return;
    }
    if (!key.startsWith("job:")) return;
    if (value === null) {
      this.forget(key.slice("job:".length));
      return;
    }
    const state = parseJson(value) as StateRecord | undefined;
    if (state !== undefined && typeof state.rev === "number" && typeof state.job?.id === "string") {
      this.apply(state);
    }
  }

  /**
   * Takes a job's state into the view, unless the view has a later one; the
   * attempts it holds beyond the view's are counted (every process reads
   * every state record, so each counts every attempt once).
   */
  apply(state: StateRecord): void {
    const id = state.job.id;
    const known = this.#jobs.get(id);
    if (known !== undefined) {
      if (known.rev >= state.rev) return;
      this.#counts[known.state]--;
    } else {
      const ids = this.#byMessage.get(state.job.messageId);
      if (ids === undefined) {
        this.#byMessage.set(state.job.messageId, [id]);
        this.#messageLog.add(state.job.tenantId, {
          createdAt: state.job.createdAt,
          messageId: state.job.messageId,
        });
      } else ids.push(id);
    }
    const attempts = state.job.attempts;
    for (let i = known?.job.attempts.length ?? 0; i < attempts.length; i++) {
      this.#stats.count(state.job.tenantId, state.job.endpointId, attempts[i]!);
    }
    this.#jobs.set(id, state);
    this.#counts[state.state]++;
  }

  /** Drops a job from the view; its message goes with its last job. */
  forget(id: string): void {
    const known = this.#jobs.get(id);
    if (known === undefined) return;
    this.#jobs.delete(id);
    this.#counts[known.state]--;
    const ids = this.#byMessage.get(known.job.messageId)?.filter((other) => other !== id) ?? [];
    if (ids.length === 0) {
      this.#byMessage.delete(known.job.messageId);
      this.#messageLog.drop(known.job.tenantId, (key) => this.#kept(key));
    } else this.#byMessage.set(known.job.messageId, ids);
  }

  /** A tenant's dead jobs, newest first. */
  dead(tenantId: string): StateRecord[] {
    const dead: StateRecord[] = [];
    for (const entry of this.#jobs.values()) {
      if (entry.state === "dead" && entry.job.tenantId === tenantId) dead.push(entry);
    }
    return dead.sort((a, b) => b.finished - a.finished);
  }

  /** The keys of a tenant's messages the query may match, newest first (see {@linkcode MessageLog.newestFirst}). */
  newestFirst(tenantId: string, query: MessageQuery): Iterable<MessageCursor> {
    return this.#messageLog.newestFirst(tenantId, query);
  }

  /** Attempts per endpoint of a tenant since a time. */
  attemptTotals(tenantId: string, since: number): AttemptCounts[] {
    return this.#stats.totals(tenantId, since);
  }

  /** Forgets attempt counts, idempotency answers and finished jobs past their retention. */
  sweep(now: number, retention: ViewRetention): void {
    this.#stats.sweep(now);
    for (const [key, kept] of this.#idempotency) {
      if (kept.expiresAt <= now) this.#idempotency.delete(key);
    }
    const delivered: StateRecord[] = [];
    const deadByTenant = new Map<string, StateRecord[]>();
    for (const entry of this.#jobs.values()) {
      if (entry.state === "delivered") {
        if (entry.finished <= now - retention.deliveredRetentionMs) this.forget(entry.job.id);
        else delivered.push(entry);
      } else if (entry.state === "dead") {
        if (entry.finished <= now - retention.deadRetentionMs) this.forget(entry.job.id);
        else {
          const dead = deadByTenant.get(entry.job.tenantId);
          if (dead === undefined) deadByTenant.set(entry.job.tenantId, [entry]);
          else dead.push(entry);
        }
      }
    }
    const oldestFirst = (a: StateRecord, b: StateRecord): number => a.finished - b.finished;
    for (
      const entry of delivered.sort(oldestFirst).slice(
        0,
        Math.max(0, delivered.length - retention.maxDelivered),
      )
    ) this.forget(entry.job.id);
    for (const dead of deadByTenant.values()) {
      for (
        const entry of dead.sort(oldestFirst).slice(
          0,
          Math.max(0, dead.length - retention.maxDeadPerTenant),
        )
      ) this.forget(entry.job.id);
    }
  }

  /** Whether a key of the log still names a message in the view. */
  #kept(key: MessageCursor): boolean {
    const first = this.#byMessage.get(key.messageId)?.[0];
    return first !== undefined && this.#jobs.get(first)?.job.createdAt === key.createdAt;
  }
}

/** Parsed JSON; undefined when the text is not JSON. */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** A job record's value on the jobs and retry topics. */
export interface JobRecord {
  readonly rev: number;
  readonly job: Job;
}

/** A job record read from its topic, or undefined for one that is not a job record (a tombstone, another shape). */
export function parseJobRecord(value: string | null): JobRecord | undefined {
  if (value === null) return undefined;
  const parsed = parseJson(value) as JobRecord | undefined;
  if (
    parsed === undefined || typeof parsed.rev !== "number" || typeof parsed.job?.id !== "string"
  ) return undefined;
  return parsed;
}
