import type { Logger } from "./logger.ts";

/** Options of {@linkcode Progress}. */
export interface ProgressOptions {
  /** What the work is, e.g. `Loading datasets`. */
  readonly label: string;
  /** The clock, in milliseconds (monotonic, e.g. `performance.now`). */
  readonly now: () => number;
  /** Where lines go when there is no terminal. */
  readonly log: Logger;
  /** A terminal to draw one line on, rewritten in place (e.g. `process.stderr` when it is a TTY); undefined: log lines. */
  readonly terminal?: { write(text: string): unknown } | undefined;
  /**
   * Least milliseconds between two reports.
   * @default {1000}
   */
  readonly interval?: number;
  /** The units counted, e.g. `rows`. @default {"items"} */
  readonly unit?: string;
}

/** How far long work has come: items done, and of a known total of items or bytes when there is one. */
export interface ProgressState {
  readonly done: number;
  /** Items there are in all. */
  readonly total?: number;
  /** Bytes read so far, of `totalBytes` (the percent shown is of bytes when both are known). */
  readonly bytes?: number;
  readonly totalBytes?: number;
}

/**
 * Reports the progress of long work (a load, a data generator, a benchmark's
 * setup) at most once an interval: items, items per second and the percent
 * of bytes read, as one line redrawn on a terminal, or as log lines for a
 * collector. Calling {@linkcode Progress.update} often is cheap.
 * @example
 * ```ts
 * const progress = new Progress({ label: "Loading datasets", now: () => performance.now(), log, unit: "rows" });
 * for (const chunk of chunks) progress.update({ done: rows, bytes: read, totalBytes: size });
 * progress.finish({ done: rows });
 * ```
 */
export class Progress {
  readonly #options: ProgressOptions;
  readonly #started: number;
  #last: number;
  #drawn = false;

  /**
   * Starts timing.
   * @param options the label, clock and where reports go
   */
  constructor(options: ProgressOptions) {
    this.#options = options;
    this.#started = options.now();
    this.#last = this.#started;
  }

  /**
   * Reports the state if an interval has passed since the last report.
   * @param state items done and bytes read
   * @returns whether it reported
   */
  update(state: ProgressState): boolean {
    const now = this.#options.now();
    if (now - this.#last < (this.#options.interval ?? 1000)) return false;
    this.#last = now;
    this.#report(state, now, false);
    return true;
  }

  /**
   * Reports the end: the items and the rate over the whole work.
   * @param state what was done
   */
  finish(state: ProgressState): void {
    this.#report(state, this.#options.now(), true);
  }

  #report(state: ProgressState, now: number, end: boolean): void {
    const { label, terminal, log } = this.#options;
    const unit = this.#options.unit ?? "items";
    const seconds = Math.max(now - this.#started, 1) / 1000;
    const rate = Math.round(state.done / seconds);
    const ofBytes = state.bytes !== undefined && state.totalBytes !== undefined &&
      state.totalBytes > 0;
    const percent = ofBytes
      ? Math.min(100, (100 * state.bytes!) / state.totalBytes!)
      : state.total !== undefined && state.total > 0
      ? Math.min(100, (100 * state.done) / state.total)
      : undefined;
    const of = ofBytes
      ? megabytes(state.totalBytes!)
      : `${state.total?.toLocaleString("en-US")} ${unit}`;
    const text =
      `${label}: ${state.done.toLocaleString("en-US")} ${unit}, ${
        rate.toLocaleString("en-US")
      } ${unit}/s` +
      (end
        ? ` in ${seconds.toFixed(1)} s`
        : percent === undefined
        ? ""
        : `, ${percent.toFixed(0)}% of ${of}`);
    if (terminal !== undefined) {
      // One line redrawn in place; the end leaves it standing.
      terminal.write(`\r\x1b[2K${text}${end ? "\n" : ""}`);
      this.#drawn = !end;
      return;
    }
    log.info(text, {
      [unit]: state.done,
      [`${unit}PerSecond`]: rate,
      ...(percent === undefined || end ? {} : { percent: Number(percent.toFixed(1)) }),
      ...(end ? { seconds: Number(seconds.toFixed(3)) } : {}),
    });
  }

  /** Whether a redrawn line stands unfinished on the terminal (something else printed now would join it). */
  get drawing(): boolean {
    return this.#drawn;
  }
}

function megabytes(bytes: number): string {
  return bytes >= 1e9 ? `${(bytes / 1e9).toFixed(1)} GB` : `${(bytes / 1e6).toFixed(1)} MB`;
}
