/** The retry schedule of a sync client: exponential, with full jitter. */
export interface BackoffOptions {
  /**
   * The ceiling of the first retry's wait, in milliseconds.
   * @default {500}
   */
  readonly initialDelay?: number;
  /**
   * The greatest ceiling of a wait, in milliseconds.
   * @default {60000}
   */
  readonly maxDelay?: number;
  /**
   * What the ceiling is multiplied by after each failure.
   * @default {2}
   */
  readonly factor?: number;
}

/**
 * The wait before a retry, with full jitter: a uniform draw between 0 and
 * `min(maxDelay, initialDelay * factor ** attempt)`, so that clients failing
 * together do not retry together. A server's `Retry-After` wins when given.
 * @param attempt 0 for the first retry, 1 for the second, …
 * @param draw a uniform number in [0, 1)
 * @param options the schedule
 * @param retryAfter the server's `Retry-After` in milliseconds, if any
 * @returns the wait in milliseconds
 * @throws {RangeError} when `attempt` is negative or `draw` outside [0, 1)
 * @example
 * ```ts
 * nextDelay(3, 0.5); // 2000: half of 500 * 2 ** 3
 * nextDelay(3, 0.5, {}, 7000); // 7000: the server said when
 * ```
 */
export function nextDelay(
  attempt: number,
  draw: number,
  options: BackoffOptions = {},
  retryAfter?: number,
): number {
  if (!Number.isInteger(attempt) || attempt < 0) {
    throw new RangeError(
      `Cannot compute a delay: attempt must be an integer from 0, got ${attempt}`,
    );
  }
  if (!(draw >= 0 && draw < 1)) {
    throw new RangeError(`Cannot compute a delay: draw must be in [0, 1), got ${draw}`);
  }
  if (retryAfter !== undefined && retryAfter >= 0) return retryAfter;
  const initial = options.initialDelay ?? 500;
  const max = options.maxDelay ?? 60_000;
  const factor = options.factor ?? 2;
  const ceiling = Math.min(max, initial * factor ** Math.min(attempt, 64));
  return Math.floor(draw * ceiling);
}

/**
 * The wait a `Retry-After` header asks for: delay-seconds or an HTTP date.
 * @param header the header's value
 * @param now the time, in epoch milliseconds
 * @returns milliseconds (0 for a date past), or undefined when absent or unparsable
 */
export function parseRetryAfter(header: string | null, now: number): number | undefined {
  if (header === null) return undefined;
  const text = header.trim();
  if (/^[0-9]+$/.test(text)) return Number(text) * 1000;
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}
