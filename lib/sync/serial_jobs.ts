/** Options of {@linkcode SerialJobs}. */
export interface SerialJobsOptions {
  /**
   * Schedules the start of a run of jobs, after the current request has been answered.
   * @default {setImmediate}
   */
  readonly defer?: (run: () => void) => void;
  /** Called with what a job throws; the next job runs regardless. */
  readonly onError?: (error: unknown) => void;
  /**
   * Jobs running at once at most. One runs them strictly one after another;
   * more let a store that waits on a disk or a database commit several at once.
   * @default {1}
   */
  readonly concurrency?: number;
}

/**
 * Background jobs, started in the order they were queued, at most
 * `concurrency` at a time (one by default): a burst of large diffs does not
 * compete with requests for more than that. Jobs that must not overlap (the
 * work of one sync context) are kept apart by the store that runs them.
 */
export class SerialJobs {
  readonly #defer: (run: () => void) => void;
  readonly #onError: (error: unknown) => void;
  readonly #concurrency: number;
  #jobs: (() => Promise<void>)[] = [];
  /** Jobs taken by a runner so far. */
  #taken = 0;
  /** Jobs queued and not yet finished. */
  #unfinished = 0;
  #runners = 0;
  #scheduled = false;
  #idle: (() => void)[] = [];
  /** Keys of jobs queued by {@linkcode SerialJobs.pushOnce} and not started yet. */
  readonly #waiting = new Set<string>();

  /**
   * Creates an empty queue.
   * @param options when runs start, how many at once, and where job errors go
   * @throws {RangeError} when `concurrency` is not a positive integer
   */
  constructor(options: SerialJobsOptions = {}) {
    this.#defer = options.defer ?? ((run) => setImmediate(run));
    this.#onError = options.onError ?? (() => {});
    this.#concurrency = options.concurrency ?? 1;
    if (!Number.isSafeInteger(this.#concurrency) || this.#concurrency < 1) {
      throw new RangeError(
        `Cannot create a job queue: concurrency must be a positive integer, got ${this.#concurrency}`,
      );
    }
  }

  /** Jobs queued and not yet finished. */
  get pending(): number {
    return this.#unfinished;
  }

  /**
   * Queues a job.
   * @param job the work; what it throws goes to `onError`
   */
  push(job: () => Promise<void>): void {
    this.#jobs.push(job);
    this.#unfinished++;
    if (this.#scheduled || this.#runners >= this.#concurrency) return;
    this.#scheduled = true;
    this.#defer(() => {
      this.#scheduled = false;
      while (this.#runners < this.#concurrency && this.#taken < this.#jobs.length) {
        this.#runners++;
        void this.#run();
      }
    });
  }

  /**
   * Queues a job unless a job of the same key is queued and has not started
   * yet: that one will do what this one would. A job of the key that has
   * started does not count, so work queued while it runs is not missed.
   * @param key what the job works on (a sync context's owner)
   * @param job the work; what it throws goes to `onError`
   * @returns whether the job was queued
   */
  pushOnce(key: string, job: () => Promise<void>): boolean {
    if (this.#waiting.has(key)) return false;
    this.#waiting.add(key);
    this.push(() => {
      this.#waiting.delete(key);
      return job();
    });
    return true;
  }

  /**
   * Waits until every queued job has finished.
   * @returns a promise resolved when the queue is empty
   */
  idle(): Promise<void> {
    if (this.#unfinished === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  async #run(): Promise<void> {
    while (this.#taken < this.#jobs.length) {
      const job = this.#jobs[this.#taken++]!;
      // Jobs taken leave the front of the list once they are many, so a queue that never empties stays small.
      if (this.#taken >= 1024 && this.#taken * 2 >= this.#jobs.length) {
        this.#jobs = this.#jobs.slice(this.#taken);
        this.#taken = 0;
      }
      try {
        await job();
      } catch (error) {
        this.#onError(error);
      }
      this.#unfinished--;
    }
    this.#runners--;
    if (this.#unfinished === 0) {
      this.#jobs = [];
      this.#taken = 0;
      const waiting = this.#idle;
      this.#idle = [];
      for (const resolve of waiting) resolve();
    }
  }
}
