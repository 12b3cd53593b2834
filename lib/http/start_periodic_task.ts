import { startInterval } from "./start_interval.ts";

/**
 * Where a periodic task's outcomes go: an `OutageLog` of lib/log (with
 * `subject: "task"`) writes one line when the task starts failing and one
 * when it works again, whatever happens between.
 */
export interface TaskOutcomes {
  /** A run failed (threw or rejected). */
  failed(error: unknown): void;
  /** A run succeeded. */
  recovered(): void;
}

/** Options of {@linkcode startPeriodicTask}. */
export interface PeriodicTaskOptions {
  /** The period, milliseconds. */
  readonly everyMs: number;
  /** Told of each run's outcome. */
  readonly outcomes: TaskOutcomes;
  /**
   * Whether a failure is counted elsewhere already: the outage of a backend,
   * which its connection logs as two lines of its own (so that an outage of
   * the database is two lines, not two more for each task that needs it).
   * Such a failure is not told to `outcomes`.
   * @default none is
   */
  readonly countedElsewhere?: (error: unknown) => boolean;
  /**
   * Runs a function every period; returns a stop function (the services' `every` option).
   * @default {startInterval} real timers that do not keep the process alive
   */
  readonly every?: (tick: () => void, ms: number) => () => void;
}

/**
 * Runs a background task (a sweep, a poll, a probe) every `everyMs`, so that
 * no failure of it can stop the process: a run that throws or rejects is told
 * to `outcomes` (unless it is counted elsewhere; never left as an unhandled
 * rejection) and tried again at the next period. Runs never overlap: a tick that finds the last run still under
 * way (a database that hangs) is skipped.
 * @param task one run
 * @param options the period, where outcomes go, and the timer
 * @returns a stop function; it resolves once a run under way has ended
 * @example
 * ```ts
 * const stop = startPeriodicTask(() => store.sweep(Date.now()), {
 *   everyMs: 60_000,
 *   outcomes: new OutageLog(log, "Auth: sweeping expired tokens", Date.now, { subject: "task" }),
 * });
 * ```
 */
export function startPeriodicTask(
  task: () => unknown,
  options: PeriodicTaskOptions,
): () => Promise<void> {
  const { outcomes } = options;
  let running: Promise<void> | undefined;
  let stopped = false;
  async function run(): Promise<void> {
    let failure: { readonly error: unknown } | undefined;
    try {
      await task();
    } catch (error) {
      failure = { error };
    }
    try {
      if (failure === undefined) outcomes.recovered();
      else if (options.countedElsewhere?.(failure.error) !== true) outcomes.failed(failure.error);
    } catch {
      // Where outcomes go failed itself: nothing else to tell, and the task goes on.
    }
  }
  const stopTimer = (options.every ?? startInterval)(() => {
    if (stopped || running !== undefined) return;
    running = run().finally(() => (running = undefined));
  }, options.everyMs);
  return async () => {
    stopped = true;
    stopTimer();
    await running;
  };
}
