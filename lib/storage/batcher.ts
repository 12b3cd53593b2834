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
  /**
   * How long an item may wait for its batch to end, milliseconds, from the
   * first time it was added: then it is given to `expire` (which answers its
   * caller, with a 503 say), taken out of the batches not yet started, and
   * never run again if given back. A batch that is already running goes on
   * and may settle the item later: settling must be idempotent (a promise's
   * resolve and reject are). Without it, an item waits as long as the
   * batches ahead of it take.
   * @default {Infinity}
   */
  readonly timeoutMs?: number;
  /**
   * Items waiting at most (not yet in a running batch): an item added
   * beyond it is given to `expire` at once.
   * @default {Infinity}
   */
  readonly maxWaiting?: number;
  /**
   * Answers an item that waited `timeoutMs`, or found `maxWaiting` items
   * waiting before it; required with either.
   */
  readonly expire?: (item: T, why: "timeout" | "full") => void;
  /**
   * Monotonic clock, milliseconds.
   * @default {() => performance.now()}
   */
  readonly now?: () => number;
  /**
   * Runs a task once after `ms`; returns a cancel function.
   * @default real timers that do not keep the process alive
   */
  readonly setTimer?: (task: () => void, ms: number) => () => void;
}

/** What the batcher knows of an item it was given. */
interface Entry {
  /** When it expires, on the monotonic clock. */
  readonly deadline: number;
  /** Whether it waits (rather than runs in a batch). */
  waiting: boolean;
}

/**
 * Groups items that arrive while earlier batches run into one batch: the
 * group commit of a store whose every write is a round trip, so that many
 * writers share one statement and one commit. Items of one key (a user's,
 * say) are never in one batch or two running batches at once, so a batch can
 * assume one item per key. An item waits only for the batches already
 * running, and none when fewer than `maxRunning` are. With `timeoutMs`,
 * no item waits longer for its answer, however long the batches ahead of it
 * hang (a database that does not answer); with `maxWaiting`, no more than so
 * many wait.
 * @example
 * ```ts
 * const batcher = new Batcher<Job>({ run: (jobs) => writeAll(jobs), keyOf: (job) => job.user, maxBatch: 64, maxRunning: 2 });
 * batcher.add(job);
 * ```
 */
export class Batcher<T extends object> {
  readonly #options: BatcherOptions<T>;
  readonly #defer: (run: () => void) => void;
  readonly #timeoutMs: number;
  readonly #maxWaiting: number;
  readonly #now: () => number;
  readonly #setTimer: (task: () => void, ms: number) => () => void;
  #waiting: T[] = [];
  /** Items given and not yet done or expired, in the order they were first given: the order of their deadlines. */
  readonly #entries = new Map<T, Entry>();
  /** Items expired: given back later, they are dropped. */
  readonly #expired = new WeakSet<T>();
  /** The timer set for the earliest deadline, if any. */
  #timer: { readonly at: number; readonly cancel: () => void } | undefined;
  /** Keys of the items in running batches. */
  readonly #busy = new Set<string>();
  #running = 0;
  #scheduled = false;

  /**
   * Creates an idle batcher.
   * @param options what a batch does, how large and how many at once, and how long an item waits at most
   * @throws {TypeError} when `timeoutMs` or `maxWaiting` is given without `expire`
   */
  constructor(options: BatcherOptions<T>) {
    this.#options = options;
    this.#defer = options.defer ?? setImmediate;
    this.#timeoutMs = options.timeoutMs ?? Number.POSITIVE_INFINITY;
    this.#maxWaiting = options.maxWaiting ?? Number.POSITIVE_INFINITY;
    if (
      (Number.isFinite(this.#timeoutMs) || Number.isFinite(this.#maxWaiting)) &&
      options.expire === undefined
    ) {
      throw new TypeError(
        "Cannot create a batcher: timeoutMs and maxWaiting need an expire function",
      );
    }
    this.#now = options.now ?? (() => performance.now());
    this.#setTimer = options.setTimer ?? realTimer;
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
    if (this.#expired.has(item)) return;
    if (this.#waiting.length >= this.#maxWaiting) {
      this.#expireNow(item, "full");
      return;
    }
    let entry = this.#entries.get(item);
    if (entry === undefined) {
      entry = { deadline: this.#now() + this.#timeoutMs, waiting: true };
      if (Number.isFinite(this.#timeoutMs)) {
        this.#entries.set(item, entry);
        this.#arm();
      }
    }
    entry.waiting = true;
    this.#waiting.push(item);
    this.#schedule();
  }

  /** Sets the timer for the earliest deadline, unless one is set for it or earlier. */
  #arm(): void {
    const first = this.#entries.values().next();
    if (first.done === true) return;
    const at = first.value.deadline;
    if (this.#timer !== undefined && this.#timer.at <= at) return;
    this.#timer?.cancel();
    this.#timer = {
      at,
      cancel: this.#setTimer(() => this.#expireDue(), Math.max(0, at - this.#now())),
    };
  }

  /** Expires the items past their deadline, and sets the timer for the next. */
  #expireDue(): void {
    this.#timer = undefined;
    const now = this.#now();
    const due: T[] = [];
    for (const [item, entry] of this.#entries) {
      if (entry.deadline > now) break;
      due.push(item);
    }
    if (due.length > 0) {
      const gone = new Set(due);
      this.#waiting = this.#waiting.filter((item) => !gone.has(item));
      for (const item of due) this.#expireNow(item, "timeout");
    }
    this.#arm();
  }

  #expireNow(item: T, why: "timeout" | "full"): void {
    this.#entries.delete(item);
    this.#expired.add(item);
    this.#options.expire!(item, why);
  }

  #schedule(): void {
    if (
      this.#scheduled || this.#running >= this.#options.maxRunning || this.#waiting.length === 0
    ) return;
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
      for (const item of batch) {
        const entry = this.#entries.get(item);
        if (entry !== undefined) entry.waiting = false;
      }
      this.#running++;
      const ended = (): void => {
        this.#running--;
        for (const key of keys) this.#busy.delete(key);
        // Done, unless given back meanwhile (then it waits again, with its first deadline).
        for (const item of batch) {
          if (this.#entries.get(item)?.waiting === false) this.#entries.delete(item);
        }
        this.#schedule();
      };
      // A run that breaks its promise not to reject must not become an unhandled rejection either.
      run(batch).then(ended, ended);
    }
  }
}

function realTimer(task: () => void, ms: number): () => void {
  const timer = setTimeout(task, ms);
  timer.unref();
  return () => clearTimeout(timer);
}
