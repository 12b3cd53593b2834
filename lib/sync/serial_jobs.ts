/** Options of {@linkcode SerialJobs}. */
export interface SerialJobsOptions {
  /**
   * Schedules the start of a run of jobs, after the current request has been answered.
   * @default {setImmediate}
   */
  readonly defer?: (run: () => void) => void;
  /** Called with what a job throws; the next job runs regardless. */
  readonly onError?: (error: unknown) => void;
}

/**
 * Background jobs run one at a time, in the order they were queued: queued
 * patches of a context apply in the order they were accepted, and a burst of
 * large diffs does not compete with requests for more than one job at once.
 */
export class SerialJobs {
  readonly #defer: (run: () => void) => void;
  readonly #onError: (error: unknown) => void;
  #queue: (() => Promise<void>)[] = [];
  #next = 0;
  #running = false;
  #idle: (() => void)[] = [];

  /**
   * Creates an empty queue.
   * @param options when runs start, and where job errors go
   */
  constructor(options: SerialJobsOptions = {}) {
    this.#defer = options.defer ?? ((run) => setImmediate(run));
    this.#onError = options.onError ?? (() => {});
  }

  /** Jobs queued and not yet finished. */
  get pending(): number {
    // The running job stays at #next until it finishes.
    return this.#queue.length - this.#next;
  }

  /**
   * Queues a job.
   * @param job the work; what it throws goes to `onError`
   */
  push(job: () => Promise<void>): void {
    this.#queue.push(job);
    if (!this.#running) {
      this.#running = true;
      this.#defer(() => void this.#drain());
    }
  }

  /**
   * Waits until every queued job has finished.
   * @returns a promise resolved when the queue is empty
   */
  idle(): Promise<void> {
    if (!this.#running) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  async #drain(): Promise<void> {
    while (this.#next < this.#queue.length) {
      const job = this.#queue[this.#next]!;
      try {
        await job();
      } catch (error) {
        this.#onError(error);
      }
      this.#next++;
    }
    this.#queue = [];
    this.#next = 0;
    this.#running = false;
    const waiting = this.#idle;
    this.#idle = [];
    for (const resolve of waiting) resolve();
  }
}
