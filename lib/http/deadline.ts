import { HttpError } from "./errors.ts";

/** A point in time after which work should stop. */
export interface Deadline {
  /** Clock reading at which the deadline passes. */
  readonly expiresAt: number;
  /** Tells whether the deadline has passed. */
  expired(): boolean;
  /**
   * Throws once the deadline has passed; long computations call it between steps.
   * @throws {HttpError} `ERR_HTTP_TIMEOUT`
   */
  check(): void;
}

/**
 * Starts a deadline `timeoutMs` from now on the given clock. CPU-bound work
 * cannot be interrupted by a timer, so it calls `check()` as it goes.
 * @param timeoutMs milliseconds until the deadline; `Infinity` never expires
 * @param now monotonic clock in milliseconds
 * @returns the deadline
 * @throws {RangeError} when `timeoutMs` is negative or NaN
 */
export function createDeadline(timeoutMs: number, now: () => number): Deadline {
  if (!(timeoutMs >= 0)) {
    throw new RangeError(
      `Cannot create a deadline: timeout must be >= 0: current value is ${timeoutMs}`,
    );
  }
  const expiresAt = now() + timeoutMs;
  return {
    expiresAt,
    expired: () => now() > expiresAt,
    check(): void {
      if (now() > expiresAt) {
        throw new HttpError(
          "ERR_HTTP_TIMEOUT",
          `Cannot finish the request within ${timeoutMs} ms: narrow the filter or lower $top`,
        );
      }
    },
  };
}
