import type { ReadinessProbe, ServiceLog } from "../http/mod.ts";

/** What a {@linkcode ProcessGuard} listens to: `process`, or any emitter of its `unhandledRejection` event. */
export interface GuardedProcess {
  on(event: "unhandledRejection", listener: (reason: unknown) => void): unknown;
  off(event: "unhandledRejection", listener: (reason: unknown) => void): unknown;
}

/** Options of {@linkcode ProcessGuard}. */
export interface ProcessGuardOptions {
  /** Where an unhandled rejection is written, as an error line. */
  readonly log: Pick<ServiceLog, "error">;
  /** Monotonic clock, milliseconds, e.g. `() => performance.now()`. */
  readonly now: () => number;
  /**
   * How long readiness fails after an unhandled rejection, milliseconds: an
   * orchestrator takes the process out of rotation for a while and its
   * dashboards show why, without a restart loop.
   * @default {60000}
   */
  readonly notReadyMs?: number;
}

/**
 * Keeps a process alive through a promise rejection nothing handled (a bug:
 * every background task handles its own failures): instead of Node's exit,
 * an error line (the first of a run of the same failure; repeats within
 * `notReadyMs` are counted, not written), and readiness (its
 * {@linkcode ProcessGuard.probe}) failing, naming it, until `notReadyMs` have
 * passed without another. An uncaught exception still ends the process: after
 * one, its state is unknown.
 * @example
 * ```ts
 * const guard = new ProcessGuard({ log, now: () => performance.now() });
 * guard.install(process);
 * const check = createReadinessCheck([{ service: "server", probes: [guard.probe] }], { now: () => performance.now() });
 * ```
 */
export class ProcessGuard {
  readonly #log: Pick<ServiceLog, "error">;
  readonly #now: () => number;
  readonly #notReadyMs: number;
  /** Rejections since readiness last passed. */
  #count = 0;
  #last: { readonly at: number; readonly reason: string } | undefined;
  #written: { readonly at: number; readonly reason: string } | undefined;

  /**
   * Creates a guard, not yet listening.
   * @param options the log, the clock, and how long readiness fails
   */
  constructor(options: ProcessGuardOptions) {
    this.#log = options.log;
    this.#now = options.now;
    this.#notReadyMs = options.notReadyMs ?? 60_000;
  }

  /** Asks whether an unhandled rejection happened within `notReadyMs`; fails naming it (and how many) if so. */
  readonly probe: ReadinessProbe = {
    part: "process",
    check: () => {
      const last = this.#last;
      if (last === undefined) return Promise.resolve();
      const ago = this.#now() - last.at;
      if (ago >= this.#notReadyMs) {
        this.#last = undefined;
        this.#count = 0;
        return Promise.resolve();
      }
      const count = this.#count === 1
        ? "an unhandled rejection"
        : `${this.#count} unhandled rejections`;
      return Promise.reject(
        new Error(
          `${count}, the last ${(ago / 1000).toFixed(0)} s ago (${last.reason}); ready again ${
            this.#notReadyMs / 1000
          } s after the last`,
        ),
      );
    },
  };

  /**
   * Counts a rejection nothing handled: an error line, and readiness failing for `notReadyMs`.
   * @param reason what the promise was rejected with
   */
  rejected(reason: unknown): void {
    const at = this.#now();
    const text = describe(reason);
    this.#count++;
    this.#last = { at, reason: text };
    const written = this.#written;
    if (written !== undefined && written.reason === text && at - written.at < this.#notReadyMs) {
      return;
    }
    this.#written = { at, reason: text };
    this.#log.error(
      `Unhandled rejection (a bug; the process goes on, and /health/ready answers 503 for ${
        this.#notReadyMs / 1000
      } s; repeats of it within that time are counted there, not logged)`,
      reason,
    );
  }

  /**
   * Listens to a process's `unhandledRejection` event, which takes the place
   * of Node's default (the process exits).
   * @param target the process, e.g. `process`
   * @returns a function that stops listening
   */
  install(target: GuardedProcess): () => void {
    const listener = (reason: unknown): void => this.rejected(reason);
    target.on("unhandledRejection", listener);
    return () => void target.off("unhandledRejection", listener);
  }
}

/** A rejection's reason on one line: its name and message. */
function describe(reason: unknown): string {
  if (reason instanceof Error) return `${reason.name}: ${reason.message}`.replace(/\s*\n\s*/g, " ");
  return String(reason);
}
