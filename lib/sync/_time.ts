/** The largest time `formatTimestamp` accepts: 9999-12-31T23:59:59.999Z. */
const MAX_TIME = 253_402_300_799_999;

/**
 * Reads an injected clock, checking what it returns.
 * @param now the clock, in epoch milliseconds
 * @param floor the result is never below this (clocks may step back)
 * @returns the time
 * @throws {RangeError} when the clock gives something other than a time in years 1970 to 9999
 */
export function readClock(now: () => number, floor: number): number {
  const time = now();
  if (typeof time !== "number" || !Number.isFinite(time) || time < 0 || time > MAX_TIME) {
    throw new RangeError(`Cannot read the clock: expected epoch milliseconds, got ${String(time)}`);
  }
  return Math.max(floor, time);
}

/**
 * Formats a time as the API does: `yyyy-mm-ddThh:mm:ssZ`, UTC, milliseconds dropped.
 * @param time epoch milliseconds in years 1970 to 9999
 * @returns the text
 */
export function formatTimestamp(time: number): string {
  return `${new Date(time).toISOString().slice(0, 19)}Z`;
}
