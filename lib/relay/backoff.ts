import { RelayError } from "./errors.ts";

/** What every retry schedule has, whatever its shape. */
export interface RetryScheduleLimits {
  /**
   * Delivery attempts in all, the first one included; a positive integer.
   */
  readonly maxAttempts: number;
  /**
   * How far a delay may stray either way, as a fraction of it: `0.2` spreads
   * a 10 s delay over 8 s to 12 s, so retries of a burst do not arrive together.
   * @default {0.2}
   */
  readonly jitter?: number;
}

/** Explicit delays in milliseconds; when attempts outlast them, the last one repeats. */
export interface FixedRetrySchedule extends RetryScheduleLimits {
  readonly kind: "fixed";
  /** The wait before the first retry, the second, and so on. */
  readonly delaysMs: readonly number[];
}

/** Delays that grow by `factor` from `baseMs`, never above `capMs` (before jitter). */
export interface ExponentialRetrySchedule extends RetryScheduleLimits {
  readonly kind: "exponential";
  /** The wait before the first retry. */
  readonly baseMs: number;
  /** What each wait is multiplied by for the next one; at least 1. */
  readonly factor: number;
  /** The longest wait, before jitter. */
  readonly capMs: number;
}

/** When to retry a delivery, and how many times. */
export type RetrySchedule = FixedRetrySchedule | ExponentialRetrySchedule;

/** The jitter of a schedule that does not set one. */
const DEFAULT_JITTER = 0.2;

/** The longest delay `parseRetrySchedule` accepts: 7 days. */
const MAX_PARSED_DELAY_MS = 7 * 24 * 60 * 60 * 1000;

const UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** A decimal number without sign or exponent, then a unit. */
const DELAY_PATTERN = /^(\d+(?:\.\d+)?|\.\d+)(ms|s|m|h)$/;

const ACCEPTED_DELAYS =
  "expected a non-negative number with a unit ms, s, m or h, at most 7 days (e.g. 5s,5m,30m)";

/**
 * The schedule of Standard Webhooks and Svix: retries after 5 s, 5 min, 30 min,
 * 2 h, 5 h, 10 h and 10 h, each ±20 %, so 8 attempts over about 28 hours.
 */
export const DEFAULT_RETRY_SCHEDULE: FixedRetrySchedule = Object.freeze({
  kind: "fixed",
  delaysMs: Object.freeze([
    5_000,
    300_000,
    1_800_000,
    7_200_000,
    18_000_000,
    36_000_000,
    36_000_000,
  ]),
  jitter: DEFAULT_JITTER,
  maxAttempts: 8,
});

/**
 * Computes how long to wait before a delivery attempt. Pure: the randomness
 * comes in as `random`, which is called once per retry.
 *
 * @example
 * ```ts
 * retryDelay(2, DEFAULT_RETRY_SCHEDULE, Math.random); // 4000 to 6000
 * retryDelay(9, DEFAULT_RETRY_SCHEDULE, Math.random); // undefined: exhausted
 * ```
 *
 * @param attempt the attempt about to be made, counting from 1; attempt 2 is the first retry
 * @param schedule the delays, jitter and attempt limit
 * @param random a number in `[0, 1)` on each call, e.g. `Math.random`
 * @returns whole milliseconds to wait (0 for the first attempt), or `undefined`
 * when `attempt` is beyond `schedule.maxAttempts`
 * @throws {RangeError} when `attempt` is not a positive integer, the schedule holds a
 * negative or non-finite number, a jitter outside `[0, 1]`, a factor below 1 or no
 * delays for its retries, or `random` returns something outside `[0, 1]`
 */
export function retryDelay(
  attempt: number,
  schedule: RetrySchedule,
  random: () => number,
): number | undefined {
  if (!Number.isInteger(attempt) || attempt < 1) {
    throw new RangeError(
      `Cannot compute a retry delay: attempt must be a positive integer, got ${attempt}`,
    );
  }
  const jitter = schedule.jitter ?? DEFAULT_JITTER;
  checkLimits(schedule.maxAttempts, jitter);
  const nominal = nominalDelay(attempt, schedule);
  if (attempt > schedule.maxAttempts) return undefined;
  if (attempt === 1) return 0;
  const draw = random();
  if (!(draw >= 0 && draw <= 1)) {
    throw new RangeError(
      `Cannot jitter a retry delay: random() must return a number in [0, 1), got ${draw}`,
    );
  }
  // Uniform over [d·(1−j), d·(1+j)].
  const spread = nominal * (1 - jitter + 2 * jitter * draw);
  return Math.max(0, Math.round(spread));
}

/**
 * Parses a `RETRY_SCHEDULE` value: comma-separated delays, each a number and a
 * unit `ms`, `s`, `m` or `h`, with optional whitespace around each item.
 *
 * @example
 * ```ts
 * parseRetrySchedule("5s, 5m, 30m"); // [5000, 300000, 1800000]
 * ```
 *
 * @param text the setting, e.g. `5s,5m,30m` or `250ms, 1.5s`
 * @returns the delays in whole milliseconds, in order
 * @throws {RelayError} `ERR_RELAY_INVALID_SCHEDULE` for an empty item, a missing or unknown
 * unit, a negative or non-numeric delay, or a delay above 7 days
 */
export function parseRetrySchedule(text: string): readonly number[] {
  const delays: number[] = [];
  const items = text.split(",");
  for (const [index, raw] of items.entries()) {
    const item = raw.trim();
    const match = DELAY_PATTERN.exec(item);
    const value = match?.[1];
    const unit = match?.[2];
    const scale = unit === undefined ? undefined : UNIT_MS[unit];
    const ms = value === undefined || scale === undefined ? NaN : Number(value) * scale;
    if (!Number.isFinite(ms) || ms > MAX_PARSED_DELAY_MS) {
      const what = item === "" ? "an empty item" : `"${item}"`;
      throw new RelayError(
        "ERR_RELAY_INVALID_SCHEDULE",
        `Cannot parse retry schedule item ${index + 1}, ${what}: ${ACCEPTED_DELAYS}`,
      );
    }
    delays.push(Math.round(ms));
  }
  return delays;
}

/**
 * Reads an HTTP `Retry-After` value (RFC 9110 §10.2.3): delta seconds, or an
 * HTTP-date in IMF-fixdate, RFC 850 or asctime form.
 *
 * @param header the header's value, if the response had one
 * @param nowMs the current time in epoch milliseconds, for dates and two-digit years
 * @returns milliseconds from `nowMs`, 0 for a date already past, or `undefined` when
 * the header is absent or not a valid value
 * @throws {RangeError} when `nowMs` is not a finite number
 */
export function retryAfterDelay(header: string | undefined, nowMs: number): number | undefined {
  if (!Number.isFinite(nowMs)) {
    throw new RangeError(`Cannot read Retry-After: now must be epoch milliseconds, got ${nowMs}`);
  }
  if (header === undefined) return undefined;
  const text = header.trim();
  if (/^\d+$/.test(text)) {
    const ms = Number(text) * 1000;
    return Number.isFinite(ms) ? ms : undefined;
  }
  const date = parseHttpDate(text, nowMs);
  return date === undefined ? undefined : Math.max(0, Math.round(date - nowMs));
}

function checkLimits(maxAttempts: number, jitter: number): void {
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1) {
    throw new RangeError(
      `Cannot use the retry schedule: maxAttempts must be a positive integer, got ${maxAttempts}`,
    );
  }
  if (!(jitter >= 0 && jitter <= 1)) {
    throw new RangeError(`Cannot use the retry schedule: jitter must be in [0, 1], got ${jitter}`);
  }
}

function checkDelay(name: string, ms: number): void {
  if (!(ms >= 0) || !Number.isFinite(ms)) {
    throw new RangeError(
      `Cannot use the retry schedule: ${name} must be a non-negative finite number, got ${ms}`,
    );
  }
}

/** The delay before `attempt` without jitter; it also validates the schedule. */
function nominalDelay(attempt: number, schedule: RetrySchedule): number {
  switch (schedule.kind) {
    case "fixed": {
      const { delaysMs } = schedule;
      delaysMs.forEach((ms, i) => checkDelay(`delaysMs[${i}]`, ms));
      if (delaysMs.length === 0 && schedule.maxAttempts > 1) {
        throw new RangeError(
          "Cannot use the retry schedule: delaysMs is empty but maxAttempts is " +
            String(schedule.maxAttempts),
        );
      }
      if (attempt < 2) return 0;
      return delaysMs[Math.min(attempt - 2, delaysMs.length - 1)] ?? 0;
    }
    case "exponential": {
      const { baseMs, factor, capMs } = schedule;
      checkDelay("baseMs", baseMs);
      checkDelay("capMs", capMs);
      if (!(factor >= 1) || !Number.isFinite(factor)) {
        throw new RangeError(
          `Cannot use the retry schedule: factor must be finite and at least 1, got ${factor}`,
        );
      }
      if (attempt < 2 || baseMs === 0) return 0;
      // factor ** n overflows to Infinity for large n, which the cap absorbs.
      return Math.min(capMs, baseMs * factor ** (attempt - 2));
    }
    default: {
      const unknown: never = schedule;
      throw new RangeError(
        `Cannot use the retry schedule: unknown kind in ${JSON.stringify(unknown)}`,
      );
    }
  }
}

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const MONTH = `(?<month>${MONTHS.join("|")})`;
const TIME = "(?<hour>\\d{2}):(?<minute>\\d{2}):(?<second>\\d{2})";
const DAY_NAME = "(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)";
const LONG_DAY_NAME = "(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)";
/** The three forms of RFC 9110 §5.6.7, in the order a sender should prefer them. */
const HTTP_DATES: readonly RegExp[] = [
  new RegExp(`^${DAY_NAME}, (?<day>\\d{2}) ${MONTH} (?<year>\\d{4}) ${TIME} GMT$`),
  new RegExp(`^${LONG_DAY_NAME}, (?<day>\\d{2})-${MONTH}-(?<year2>\\d{2}) ${TIME} GMT$`),
  new RegExp(`^${DAY_NAME} ${MONTH} (?<day>[ \\d]\\d) ${TIME} (?<year>\\d{4})$`),
];

/**
 * Parses an HTTP-date strictly, in UTC: `Date.parse` would also take local-time
 * and free-form text, which makes the result depend on the machine.
 */
function parseHttpDate(text: string, nowMs: number): number | undefined {
  let groups: Record<string, string> | undefined;
  for (const pattern of HTTP_DATES) {
    groups = pattern.exec(text)?.groups;
    if (groups !== undefined) break;
  }
  if (groups === undefined) return undefined;
  const field = (name: string): number => Number((groups[name] ?? "").trim());
  const month = MONTHS.indexOf(groups["month"] ?? "");
  const day = field("day");
  const hour = field("hour");
  const minute = field("minute");
  const second = field("second");
  let year = field("year");
  if (groups["year2"] !== undefined) {
    // RFC 9110 §5.6.7: a two-digit year that looks more than 50 years ahead is in the past.
    const nowYear = new Date(nowMs).getUTCFullYear();
    year = Math.floor(nowYear / 100) * 100 + field("year2");
    if (year > nowYear + 50) year -= 100;
  }
  if (hour > 23 || minute > 59 || second > 60) return undefined;
  const date = new Date(0);
  // setUTCFullYear, unlike Date.UTC, does not read years 0 to 99 as 1900 to 1999.
  date.setUTCFullYear(year, month, day);
  // A rolled-over day (31 Feb becomes 3 Mar) means the text named no such date.
  if (date.getUTCMonth() !== month || date.getUTCDate() !== day) return undefined;
  date.setUTCHours(hour, minute, second, 0);
  return date.getTime();
}
