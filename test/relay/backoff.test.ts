import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  DEFAULT_RETRY_SCHEDULE,
  parseRetrySchedule,
  retryAfterDelay,
  retryDelay,
  type RetrySchedule,
} from "../../lib/relay/backoff.ts";
import { createPrng } from "../_helpers/prng.ts";

const SEED = Number(process.env["RELAY_SEED"] ?? 0x0b0ff);
const DRAWS = 2_000;

/** A random source that always returns the same number. */
function constant(value: number): () => number {
  return () => value;
}

const FIXED: RetrySchedule = {
  kind: "fixed",
  delaysMs: [100, 200, 300],
  jitter: 0,
  maxAttempts: 6,
};
const EXPONENTIAL: RetrySchedule = {
  kind: "exponential",
  baseMs: 1000,
  factor: 2,
  capMs: 10_000,
  jitter: 0,
  maxAttempts: 10,
};

describe("DEFAULT_RETRY_SCHEDULE", () => {
  it("is Standard Webhooks' schedule: 8 attempts, ±20 %", () => {
    assert.equal(DEFAULT_RETRY_SCHEDULE.maxAttempts, 8);
    assert.equal(DEFAULT_RETRY_SCHEDULE.jitter, 0.2);
    assert.deepEqual(DEFAULT_RETRY_SCHEDULE.delaysMs, [
      5_000,
      5 * 60_000,
      30 * 60_000,
      2 * 3_600_000,
      5 * 3_600_000,
      10 * 3_600_000,
      10 * 3_600_000,
    ]);
  });

  it("cannot be changed by a caller", () => {
    assert.ok(Object.isFrozen(DEFAULT_RETRY_SCHEDULE));
    assert.ok(Object.isFrozen(DEFAULT_RETRY_SCHEDULE.delaysMs));
  });
});

/** One row of the retryDelay() table. */
interface DelayCase {
  readonly name: string;
  readonly attempt: number;
  readonly schedule: RetrySchedule;
  readonly expected: number | undefined;
}

describe("retryDelay()", () => {
  const cases = [
    { name: "waits nothing before the first attempt", attempt: 1, schedule: FIXED, expected: 0 },
    { name: "takes the first delay before attempt 2", attempt: 2, schedule: FIXED, expected: 100 },
    { name: "takes the last listed delay", attempt: 4, schedule: FIXED, expected: 300 },
    {
      name: "repeats the last delay when the list is short",
      attempt: 5,
      schedule: FIXED,
      expected: 300,
    },
    { name: "repeats it up to the last attempt", attempt: 6, schedule: FIXED, expected: 300 },
    { name: "is exhausted after maxAttempts", attempt: 7, schedule: FIXED, expected: undefined },
    {
      name: "is exhausted long after maxAttempts",
      attempt: 100,
      schedule: FIXED,
      expected: undefined,
    },
    {
      name: "starts an exponential schedule at base",
      attempt: 2,
      schedule: EXPONENTIAL,
      expected: 1000,
    },
    { name: "multiplies by factor per retry", attempt: 4, schedule: EXPONENTIAL, expected: 4000 },
    { name: "grows until the cap", attempt: 5, schedule: EXPONENTIAL, expected: 8000 },
    { name: "stops at the cap", attempt: 6, schedule: EXPONENTIAL, expected: 10_000 },
    { name: "stays at the cap", attempt: 10, schedule: EXPONENTIAL, expected: 10_000 },
    {
      name: "exhausts an exponential schedule",
      attempt: 11,
      schedule: EXPONENTIAL,
      expected: undefined,
    },
    {
      name: "caps a power that overflows",
      attempt: 2000,
      schedule: { ...EXPONENTIAL, maxAttempts: 5000 },
      expected: 10_000,
    },
    {
      name: "keeps a zero base at zero",
      attempt: 2000,
      schedule: { ...EXPONENTIAL, baseMs: 0, maxAttempts: 5000 },
      expected: 0,
    },
    {
      name: "allows a single attempt with no delays",
      attempt: 2,
      schedule: { kind: "fixed", delaysMs: [], maxAttempts: 1 },
      expected: undefined,
    },
    {
      name: "follows the default schedule",
      attempt: 8,
      schedule: DEFAULT_RETRY_SCHEDULE,
      expected: 36_000_000,
    },
    {
      name: "exhausts the default schedule",
      attempt: 9,
      schedule: DEFAULT_RETRY_SCHEDULE,
      expected: undefined,
    },
  ] satisfies readonly DelayCase[];
  for (const c of cases) {
    // The default schedule has jitter; a draw of 0.5 lands on the nominal delay.
    it(c.name, () => assert.equal(retryDelay(c.attempt, c.schedule, constant(0.5)), c.expected));
  }

  it("reaches both ends of the jitter range", () => {
    const schedule: RetrySchedule = {
      kind: "fixed",
      delaysMs: [1000],
      jitter: 0.5,
      maxAttempts: 2,
    };
    assert.equal(retryDelay(2, schedule, constant(0)), 500);
    assert.equal(retryDelay(2, schedule, constant(0.999_999_999)), 1500);
  });

  it("defaults the jitter to ±20 %", () => {
    const schedule: RetrySchedule = { kind: "fixed", delaysMs: [1000], maxAttempts: 2 };
    assert.equal(retryDelay(2, schedule, constant(0)), 800);
  });

  it("keeps every jittered delay within ±jitter of the nominal delay", () => {
    const prng = createPrng(SEED);
    const schedules: readonly RetrySchedule[] = [
      DEFAULT_RETRY_SCHEDULE,
      { ...EXPONENTIAL, jitter: 0.5 },
      { kind: "fixed", delaysMs: [0, 1, 3, 7], jitter: 1, maxAttempts: 6 },
    ];
    for (let i = 0; i < DRAWS; i++) {
      const schedule = prng.pick(schedules);
      const attempt = 2 + prng.int(schedule.maxAttempts - 1);
      const nominal = retryDelay(attempt, { ...schedule, jitter: 0 }, constant(0));
      const jitter = schedule.jitter ?? 0.2;
      const delay = retryDelay(attempt, schedule, () => prng.next());
      assert.ok(nominal !== undefined && delay !== undefined, `seed ${prng.seed}, draw ${i}`);
      assert.ok(Number.isInteger(delay) && delay >= 0, `seed ${prng.seed}: ${delay} is not whole`);
      assert.ok(
        delay >= Math.floor(nominal * (1 - jitter)) && delay <= Math.ceil(nominal * (1 + jitter)),
        `seed ${prng.seed}, draw ${i}: ${delay} outside ${nominal} ±${jitter}`,
      );
    }
  });

  it("spreads jittered delays over the whole range", () => {
    const prng = createPrng(SEED);
    const schedule: RetrySchedule = { kind: "fixed", delaysMs: [10_000], maxAttempts: 2 };
    const draw = () => retryDelay(2, schedule, () => prng.next()) ?? NaN;
    const delays = Array.from({ length: DRAWS }, draw);
    assert.ok(Math.min(...delays) < 8_100, `seed ${prng.seed}: minimum ${Math.min(...delays)}`);
    assert.ok(Math.max(...delays) > 11_900, `seed ${prng.seed}: maximum ${Math.max(...delays)}`);
  });

  it("draws no randomness when it answers without a delay", () => {
    const random = () => assert.fail("random() called");
    assert.equal(retryDelay(1, DEFAULT_RETRY_SCHEDULE, random), 0);
    assert.equal(retryDelay(9, DEFAULT_RETRY_SCHEDULE, random), undefined);
  });

  const invalid = [
    { name: "attempt 0", attempt: 0, schedule: FIXED },
    { name: "a fractional attempt", attempt: 2.5, schedule: FIXED },
    { name: "maxAttempts 0", attempt: 1, schedule: { ...FIXED, maxAttempts: 0 } },
    { name: "a negative delay", attempt: 2, schedule: { ...FIXED, delaysMs: [100, -1] } },
    { name: "an infinite delay", attempt: 2, schedule: { ...FIXED, delaysMs: [Infinity] } },
    { name: "no delays for its retries", attempt: 1, schedule: { ...FIXED, delaysMs: [] } },
    { name: "a jitter above 1", attempt: 2, schedule: { ...FIXED, jitter: 1.5 } },
    { name: "a NaN jitter", attempt: 2, schedule: { ...FIXED, jitter: NaN } },
    { name: "a factor below 1", attempt: 2, schedule: { ...EXPONENTIAL, factor: 0.5 } },
    { name: "a negative cap", attempt: 2, schedule: { ...EXPONENTIAL, capMs: -1 } },
    { name: "a NaN base", attempt: 2, schedule: { ...EXPONENTIAL, baseMs: NaN } },
  ] satisfies readonly { name: string; attempt: number; schedule: RetrySchedule }[];
  for (const c of invalid) {
    it(`refuses ${c.name}`, () => {
      assert.throws(() => retryDelay(c.attempt, c.schedule, constant(0.5)), { name: "RangeError" });
    });
  }

  it("refuses a random source that leaves [0, 1]", () => {
    assert.throws(() => retryDelay(2, FIXED, constant(2)), { name: "RangeError" });
    assert.throws(() => retryDelay(2, FIXED, constant(NaN)), { name: "RangeError" });
  });
});

describe("parseRetrySchedule()", () => {
  const cases = [
    {
      name: "reads seconds, minutes and hours",
      input: "5s,5m,30m,2h",
      expected: [5000, 300_000, 1_800_000, 7_200_000],
    },
    { name: "reads milliseconds and decimals", input: "250ms, 1.5s", expected: [250, 1500] },
    { name: "allows whitespace around items", input: "  1s ,\t2s  ", expected: [1000, 2000] },
    { name: "reads a single delay", input: "0ms", expected: [0] },
    { name: "reads a leading decimal point", input: ".5s", expected: [500] },
    { name: "rounds to whole milliseconds", input: "0.4ms,1.5ms", expected: [0, 2] },
    { name: "accepts exactly 7 days", input: "168h", expected: [604_800_000] },
  ] as const;
  for (const c of cases) {
    it(c.name, () => assert.deepEqual(parseRetrySchedule(c.input), c.expected));
  }

  const invalid = [
    { name: "an empty text", input: "" },
    { name: "an empty item", input: "5s,,5m" },
    { name: "a trailing comma", input: "5s," },
    { name: "a missing unit", input: "5000" },
    { name: "an unknown unit", input: "5d" },
    { name: "an upper-case unit", input: "5S" },
    { name: "a negative delay", input: "-5s" },
    { name: "NaN", input: "NaNs" },
    { name: "Infinity", input: "Infinitys" },
    { name: "an exponent", input: "1e3ms" },
    { name: "space inside an item", input: "5 s" },
    { name: "a unit alone", input: "ms" },
    { name: "more than 7 days", input: "5s,168.001h" },
  ] as const;
  for (const c of invalid) {
    it(`refuses ${c.name}`, () => {
      assert.throws(() => parseRetrySchedule(c.input), {
        name: "RelayError",
        code: "ERR_RELAY_INVALID_SCHEDULE",
      });
    });
  }

  it("names the offending item and what is accepted", () => {
    assert.throws(() => parseRetrySchedule("5s, 10x"), (error: unknown) => {
      assert.ok(error instanceof Error);
      assert.match(error.message, /"10x"/);
      assert.match(error.message, /ms, s, m or h/);
      return true;
    });
  });
});

describe("retryAfterDelay()", () => {
  const NOW = Date.UTC(2024, 5, 1, 12, 0, 0);
  const cases = [
    { name: "is undefined without a header", input: undefined, expected: undefined },
    { name: "reads delta seconds", input: "120", expected: 120_000 },
    { name: "reads zero seconds", input: "0", expected: 0 },
    { name: "trims whitespace", input: " 5 ", expected: 5000 },
    { name: "reads an IMF-fixdate", input: "Sat, 01 Jun 2024 12:00:30 GMT", expected: 30_000 },
    { name: "reads an RFC 850 date", input: "Saturday, 01-Jun-24 12:01:00 GMT", expected: 60_000 },
    { name: "reads an asctime date", input: "Sat Jun  1 12:00:10 2024", expected: 10_000 },
    { name: "clamps a past date to 0", input: "Sun, 06 Nov 1994 08:49:37 GMT", expected: 0 },
    {
      name: "reads a two-digit year more than 50 years ahead as past",
      input: "Sunday, 06-Nov-94 08:49:37 GMT",
      expected: 0,
    },
    { name: "refuses an empty value", input: "", expected: undefined },
    { name: "refuses negative seconds", input: "-5", expected: undefined },
    { name: "refuses fractional seconds", input: "1.5", expected: undefined },
    { name: "refuses free text", input: "soon", expected: undefined },
    { name: "refuses a local-time date", input: "2024-06-01 12:00:30", expected: undefined },
    { name: "refuses a date without GMT", input: "Sat, 01 Jun 2024 12:00:30", expected: undefined },
    { name: "refuses 31 February", input: "Sat, 31 Feb 2024 12:00:30 GMT", expected: undefined },
    { name: "refuses hour 24", input: "Sat, 01 Jun 2024 24:00:00 GMT", expected: undefined },
    { name: "refuses an overflowing number", input: "9".repeat(400), expected: undefined },
  ] as const;
  for (const c of cases) it(c.name, () => assert.equal(retryAfterDelay(c.input, NOW), c.expected));

  it("reads a two-digit year within 50 years as this century", () => {
    const now = Date.UTC(2070, 0, 1);
    assert.equal(retryAfterDelay("Tuesday, 01-Jan-70 00:00:05 GMT", now), 5000);
  });

  it("refuses a clock that is not a number", () => {
    assert.throws(() => retryAfterDelay("5", NaN), { name: "RangeError" });
  });
});
