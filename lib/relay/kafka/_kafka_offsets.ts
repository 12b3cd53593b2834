import type { KafkaBatch, KafkaRecordIn, KafkaSubscription } from "../../storage/_internal.ts";

/** A record of a partition: what is committed once its job is handled. */
export interface RecordPlace {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
}

/** Options of {@linkcode PartitionOffsets}. */
export interface PartitionOffsetsOptions {
  /** Records read ahead (not yet handled) per partition before it is paused. */
  readonly maxBuffered: number;
  /** How long {@linkcode PartitionOffsets.caughtUp} waits at most, milliseconds. */
  readonly catchUpMs: number;
  /** Sets a timer (for the commits, every 100 ms); returns how to cancel it. */
  readonly setTimer: (task: () => void, ms: number) => () => void;
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

/**
 * The Kafka queue's offsets in the partitions of the jobs and retry topics
 * this process reads as a consumer-group member: which records are read, which of
 * them still have their job in hand, what is committed (the offset before the
 * first record in hand, so a process that dies leaves its jobs to the others),
 * which partitions are paused for reading too far ahead, and what this process
 * appended to its own partitions and has not read back yet.
 */
export class PartitionOffsets {
  readonly #maxBuffered: number;
  readonly #catchUpMs: number;
  readonly #setTimer: (task: () => void, ms: number) => () => void;
  readonly #partitions = new Map<string, PartitionState>();
  /** The last offset this process appended, by jobs or retry partition: `claim` waits to have read it. */
  readonly #produced = new Map<string, number>();
  #readWaiters: (() => void)[] = [];
  /** Cancels the pending commit, when one is due. */
  #cancelCommit: (() => void) | undefined;
  #subscription: KafkaSubscription | undefined;

  /**
   * Tracks no partition yet.
   * @param options read-ahead bound, catch-up bound and timer
   */
  constructor(options: PartitionOffsetsOptions) {
    this.#maxBuffered = options.maxBuffered;
    this.#catchUpMs = options.catchUpMs;
    this.#setTimer = options.setTimer;
  }

  /** The group membership that pauses, resumes and commits the partitions. */
  attach(subscription: KafkaSubscription): void {
    this.#subscription = subscription;
  }

  /**
   * Takes a batch read from a partition: each record not read before (or
   * whose job is no longer in hand) goes to `take`, and is in hand from then
   * on when `take` keeps it. The partition is paused once it runs too far ahead.
   * @param batch the records, in offset order
   * @param take true when the record's job is now in hand
   */
  read(batch: KafkaBatch, take: (record: KafkaRecordIn) => boolean): void {
    const key = `${batch.topic}\n${batch.partition}`;
    let partition = this.#partitions.get(key);
    // The client hands over records of a partition only while this process holds it, whatever the order of its events.
    if (partition === undefined) this.#partitions.set(key, partition = newPartition());
    else if (!partition.owned) hold(partition);
    for (const record of batch.records) {
      // The first record read is where the group's last commit left off.
      if (partition.next < 0) partition.committed = record.offset;
      partition.next = Math.max(partition.next, record.offset + 1);
      // Read again (after a rebalance the client starts over from the last commit) while its job is in hand.
      if (partition.unhandled.has(record.offset)) continue;
      if (take(record)) partition.unhandled.add(record.offset);
    }
    if (!partition.paused && partition.unhandled.size >= this.#maxBuffered) {
      partition.paused = true;
      this.#subscription?.pause(batch.topic, batch.partition);
    }
    const waiters = this.#readWaiters;
    this.#readWaiters = [];
    for (const wake of waiters) wake();
  }

  /** Takes a new assignment: partitions by topic. */
  assign(assigned: ReadonlyMap<string, readonly number[]>): void {
    const now = new Set<string>();
    for (const [topic, partitions] of assigned) {
      for (const partition of partitions) now.add(`${topic}\n${partition}`);
    }
    // A partition lost keeps its record of jobs in hand (they are still delivered) but commits no more:
    // its new holder reads it again from the last commit.
    for (const [key, state] of this.#partitions) {
      if (!now.has(key)) state.owned = false;
      else if (!state.owned) hold(state);
    }
    for (const key of now) {
      if (!this.#partitions.has(key)) this.#partitions.set(key, newPartition());
    }
  }

  /** Marks a record handled; commits what is handled in order at the end of the turn. */
  handled(place: RecordPlace): void {
    const partition = this.#partitions.get(`${place.topic}\n${place.partition}`);
    if (partition === undefined) return;
    partition.unhandled.delete(place.offset);
    if (partition.paused && partition.unhandled.size < this.#maxBuffered / 2) {
      partition.paused = false;
      this.#subscription?.resume(place.topic, place.partition);
    }
    // Commits go out at most every 100 ms: each is a request to the group's coordinator.
    if (this.#cancelCommit === undefined) {
      this.#cancelCommit = this.#setTimer(() => void this.commit(), 100);
    }
  }

  /** Commits, for each partition held, the offset before its first record still in hand. */
  async commit(): Promise<void> {
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
    if (offsets.length > 0) await this.#subscription?.commit(offsets).catch(() => {});
  }

  /** Notes a record this process appended to a jobs or retry partition, for {@linkcode PartitionOffsets.caughtUp}. */
  produced(topic: string, partition: number, offset: number): void {
    const key = `${topic}\n${partition}`;
    if (this.#partitions.get(key)?.owned === true) {
      this.#produced.set(key, Math.max(this.#produced.get(key) ?? -1, offset));
    }
  }

  /**
   * Waits (a bounded time) until this process has read back what it appended
   * to its own partitions. A partition it no longer holds, or has paused, is
   * not waited for: no record of it is coming (waiting there made every
   * claim take the whole bound after a rebalance).
   */
  async caughtUp(): Promise<void> {
    const deadline = Date.now() + this.#catchUpMs;
    for (;;) {
      let behind = false;
      for (const [key, last] of this.#produced) {
        const partition = this.#partitions.get(key);
        if (
          partition === undefined || !partition.owned || partition.paused || partition.next > last
        ) this.#produced.delete(key);
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
