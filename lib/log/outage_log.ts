import type { Logger } from "./logger.ts";

/**
 * Where an {@linkcode OutageLog} writes: a {@linkcode Logger}, or any log
 * with `info` and `error` (a service's log), whose `debug` and `enabled`,
 * when it has none, count as off.
 */
export type OutageLogTarget =
  & Pick<Logger, "info" | "error">
  & Partial<Pick<Logger, "debug" | "enabled">>;

/** Options of {@linkcode OutageLog}. */
export interface OutageLogOptions {
  /**
   * What is watched, which the lines' words follow: a `backend` is
   * "unreachable" and then "answering again"; a `task` (a sweep, a poll) is
   * "failing" and then "working again".
   * @default {"backend"}
   */
  readonly subject?: "backend" | "task";
}

/** The words of the two lines, by subject. */
const WORDS = {
  backend: { down: "unreachable", back: "answers", again: "answering again" },
  task: { down: "failing", back: "works", again: "working again" },
} as const;

/**
 * Logs a backend that goes down and comes back as two lines, whatever
 * happens between: one error when it first fails, and one when it answers
 * again, with how many failures there were and for how long. A client that
 * retries every 100 ms thus writes two lines for an outage, not a stack
 * trace an attempt.
 * @example
 * ```ts
 * const redis = new OutageLog(log, "Relay queue: Redis at 127.0.0.1:6379", Date.now);
 * client.on("error", (error) => redis.failed(error));
 * client.on("ready", () => redis.recovered());
 * ```
 */
export class OutageLog {
  readonly #log: OutageLogTarget;
  readonly #what: string;
  readonly #now: () => number;
  readonly #words: (typeof WORDS)[keyof typeof WORDS];
  #since: number | undefined;
  #failures = 0;

  /**
   * Watches one backend.
   * @param log where the two lines go
   * @param what the backend, as the lines name it
   * @param now the clock, in epoch milliseconds
   * @param options what it watches, which the lines' words follow
   */
  constructor(
    log: OutageLogTarget,
    what: string,
    now: () => number,
    options: OutageLogOptions = {},
  ) {
    this.#log = log;
    this.#what = what;
    this.#now = now;
    this.#words = WORDS[options.subject ?? "backend"];
  }

  /** Whether the backend's last news was a failure. */
  get down(): boolean {
    return this.#since !== undefined;
  }

  /** Failures counted since the backend went down; 0 while it is up. */
  get failures(): number {
    return this.#failures;
  }

  /**
   * Counts a failure; the first of an outage is logged (later ones at the debug level only).
   * @param error what failed
   */
  failed(error: unknown): void {
    this.#failures++;
    if (this.#since === undefined) {
      this.#since = this.#now();
      this.#log.error(
        `${this.#what}: ${this.#words.down}; retrying, and logging once more when it ${this.#words.back}`,
        error,
      );
    } else if (this.#log.debug !== undefined && this.#log.enabled?.("debug") === true) {
      this.#log.debug(`${this.#what}: still ${this.#words.down}`, {
        failures: this.#failures,
        error: error instanceof Error ? error.message : String(error),
      });
    }
  }

  /**
   * Counts the outcome of an attempt at the backend (a probe, a request): a
   * success ends an outage, a failure counts in it; the outcome is passed on.
   * @param attempt the attempt
   * @returns the attempt's own outcome
   */
  async watch<T>(attempt: Promise<T>): Promise<T> {
    let value: T;
    try {
      value = await attempt;
    } catch (error) {
      this.failed(error);
      throw error;
    }
    this.recovered();
    return value;
  }

  /** Ends an outage, if one is under way, with one line. */
  recovered(): void {
    if (this.#since === undefined) return;
    const seconds = (this.#now() - this.#since) / 1000;
    this.#log.info(
      `${this.#what}: ${this.#words.again} after ${
        seconds.toFixed(1)
      } s and ${this.#failures} failure${this.#failures === 1 ? "" : "s"}`,
      {
        failures: this.#failures,
        downSeconds: Number(seconds.toFixed(3)),
      },
    );
    this.#since = undefined;
    this.#failures = 0;
  }
}
