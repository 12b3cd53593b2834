/** Options of {@linkcode Batcher}. */
export interface BatcherOptions<T> {
  /**
   * Does a batch; it settles every item itself (for example by resolving a
   * promise the item carries) and never rejects. It may give an item back
   * with {@linkcode Batcher.add}, to go in a later batch.
   */
  readonly run: (items: readonly T[]) => Promise<void>;
  /** The key of an item: items of one key never share a batch, nor run at once. */
  readonly keyOf: (item: T) => string;
  /** Items in one batch at most. */
  readonly maxBatch: number;
  /** Batches running at once at most. */
  readonly maxRunning: number;
  /**
   * Calls a function once the current turn's I/O is read, so that a batch
   * takes every item that arrived with the first.
   * @default {setImmediate}
   */
  readonly defer?: (run: () => void) => void;
}

/**
 * Groups items that arrive while earlier batches run into one batch: the
 * group commit of a store whose every write is a round trip, so that many
 * writers share one statement and one commit. Items of one key (a user's,
 * say) are never in one batch or two running batches at once, so a batch can
 * assume one item per key. An item waits only for the batches already
 * running, and none when fewer than `maxRunning` are.
 * @example
 * ```ts
 * const batcher = new Batcher<Job>({ run: (jobs) => writeAll(jobs), keyOf: (job) => job.user, maxBatch: 64, maxRunning: 2 });
 * batcher.add(job);
 * ```
 */
export class Batcher<T> {
  readonly #options: BatcherOptions<T>;
  readonly #defer: (run: () => void) => void;
  #waiting: T[] = [];
  /** Keys of the items in running batches. */
  readonly #busy = new Set<string>();
  #running = 0;
  #scheduled = false;

  /**
   * Creates an idle batcher.
   * @param options what a batch does, and how large and how many at once
   */
  constructor(options: BatcherOptions<T>) {
    this.#options = options;
    this.#defer = options.defer ?? setImmediate;
  }

  /** Items waiting for a batch. */
  get waiting(): number {
    return this.#waiting.length;
  }

  /** Batches running now. */
  get running(): number {
    return this.#running;
  }

  /**
   * Adds an item to the next batch.
   * @param item the item
   */
  add(item: T): void {
    this.#waiting.push(item);
    this.#schedule();
  }

  #schedule(): void {
    if (this.#scheduled || this.#running >= this.#options.maxRunning || this.#waiting.length === 0) return;
    this.#scheduled = true;
    this.#defer(() => {
      this.#scheduled = false;
      this.#start();
    });
  }

  #start(): void {
    const { keyOf, maxBatch, maxRunning, run } = this.#options;
    while (this.#running < maxRunning && this.#waiting.length > 0) {
      const batch: T[] = [];
      const keys = new Set<string>();
      const rest: T[] = [];
      for (const item of this.#waiting) {
        const key = keyOf(item);
        if (batch.length < maxBatch && !keys.has(key) && !this.#busy.has(key)) {
          batch.push(item);
          keys.add(key);
        } else {
          rest.push(item);
        }
      }
      // Everything waiting has its key in a running batch: the end of that batch starts the next.
      if (batch.length === 0) return;
      this.#waiting = rest;
      for (const key of keys) this.#busy.add(key);
      this.#running++;
      void run(batch).finally(() => {
        this.#running--;
        for (const key of keys) this.#busy.delete(key);
        this.#schedule();
      });
    }
  }
}
