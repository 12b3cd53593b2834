import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  type RateDecision,
  RateLimiter,
  type RateLimiterOptions,
  type RateQuota,
} from "../../lib/http/mod.ts";

/** A limiter on a clock the test moves by assigning `clock.t`. */
function limiterAt(
  options: Omit<RateLimiterOptions, "now">,
): { limiter: RateLimiter; clock: { t: number } } {
  const clock = { t: 0 };
  return { limiter: new RateLimiter({ ...options, now: () => clock.t }), clock };
}

/** Acquires and at once releases, as a request that finished instantly would. */
function quick(limiter: RateLimiter, key: string): RateDecision {
  const decision = limiter.acquire(key);
  if (decision.ok) decision.release();
  return decision;
}

function assertRefused(
  decision: RateDecision,
  reason: "rate" | "concurrency",
  retryAfterSeconds: number,
): void {
  assert.equal(decision.ok, false);
  if (decision.ok) return;
  assert.equal(decision.reason, reason);
  assert.equal(decision.retryAfterSeconds, retryAfterSeconds);
}

describe("RateLimiter", () => {
  it("allows a burst of ratePerSecond requests, then refuses with reason 'rate'", () => {
    const { limiter } = limiterAt({ ratePerSecond: 2, maxConcurrent: 0 });
    assert.equal(quick(limiter, "a").ok, true);
    assert.equal(quick(limiter, "a").ok, true);
    assertRefused(quick(limiter, "a"), "rate", 1);
  });

  const retryCases = [
    { name: "asks to retry after 1 s at rate 2", rate: 2, expected: 1 },
    { name: "asks to retry after 1 s at rate 1", rate: 1, expected: 1 },
    { name: "asks to retry after 2 s at rate 0.5", rate: 0.5, expected: 2 },
    { name: "asks to retry after 4 s at rate 0.25", rate: 0.25, expected: 4 },
  ] as const;
  for (const c of retryCases) {
    it(c.name, () => {
      const { limiter } = limiterAt({ ratePerSecond: c.rate, burst: 1, maxConcurrent: 0 });
      assert.equal(quick(limiter, "a").ok, true);
      assertRefused(quick(limiter, "a"), "rate", c.expected);
    });
  }

  it("rounds a partial wait up to whole seconds", () => {
    const { limiter, clock } = limiterAt({ ratePerSecond: 0.5, burst: 1, maxConcurrent: 0 });
    quick(limiter, "a");
    clock.t = 1500; // 0.75 token: 0.25 missing, 0.5 s at rate 0.5
    assertRefused(quick(limiter, "a"), "rate", 1);
  });

  it("refills the bucket over time", () => {
    const { limiter, clock } = limiterAt({ ratePerSecond: 2, maxConcurrent: 0 });
    quick(limiter, "a");
    quick(limiter, "a");
    assert.equal(quick(limiter, "a").ok, false);
    clock.t = 499;
    assert.equal(quick(limiter, "a").ok, false);
    clock.t = 500;
    assert.equal(quick(limiter, "a").ok, true);
    assert.equal(quick(limiter, "a").ok, false);
  });

  it("refills no more than the burst after a long idle time", () => {
    const { limiter, clock } = limiterAt({ ratePerSecond: 2, maxConcurrent: 0 });
    quick(limiter, "a");
    clock.t = 1_000_000;
    assert.equal(quick(limiter, "a").ok, true);
    assert.equal(quick(limiter, "a").ok, true);
    assert.equal(quick(limiter, "a").ok, false);
  });

  it("allows a configured burst above the rate", () => {
    const { limiter } = limiterAt({ ratePerSecond: 1, burst: 5, maxConcurrent: 0 });
    for (let i = 0; i < 5; i++) assert.equal(quick(limiter, "a").ok, true, `request ${i + 1}`);
    assertRefused(quick(limiter, "a"), "rate", 1);
  });

  /** A quota's four fields (a permit is its own quota, with more fields). */
  const fieldsOf = (quota: RateQuota | undefined) =>
    quota === undefined ? undefined : {
      limit: quota.limit,
      remaining: quota.remaining,
      resetSeconds: quota.resetSeconds,
      windowSeconds: quota.windowSeconds,
    };

  it("tells each decision's quota: the burst, the whole requests left, the seconds until full and the window", () => {
    const { limiter, clock } = limiterAt({ ratePerSecond: 2, burst: 5, maxConcurrent: 1 });
    const quotas = [];
    for (let i = 0; i < 6; i++) quotas.push(quick(limiter, "a").quota);
    assert.deepEqual(quotas.map((q) => q?.remaining), [4, 3, 2, 1, 0, 0]);
    assert.deepEqual(quotas.map((q) => q?.resetSeconds), [1, 1, 2, 2, 3, 3]);
    for (const quota of quotas) assert.deepEqual([quota?.limit, quota?.windowSeconds], [5, 3]);
    clock.t = 750; // 1.5 tokens back: one request, leaving 0.5, and 2.25 s until full
    const held = limiter.acquire("a");
    assert.deepEqual(fieldsOf(held.quota), {
      limit: 5,
      remaining: 0,
      resetSeconds: 3,
      windowSeconds: 3,
    });
    assert.deepEqual(fieldsOf(limiter.acquire("a").quota), {
      limit: 5,
      remaining: 0,
      resetSeconds: 3,
      windowSeconds: 3,
    }, "refused for concurrency, still told");
    clock.t = 10_000;
    assert.deepEqual(fieldsOf(quick(limiter, "b").quota), {
      limit: 5,
      remaining: 4,
      resetSeconds: 1,
      windowSeconds: 3,
    });
  });

  it("tells no quota when no rate is set", () => {
    const { limiter } = limiterAt({ ratePerSecond: 0, maxConcurrent: 1 });
    assert.equal(limiter.acquire("a").quota, undefined);
    assert.equal(limiter.acquire("a").quota, undefined);
  });

  it("allows a burst of at least one below rate 1", () => {
    const { limiter } = limiterAt({ ratePerSecond: 0.5, maxConcurrent: 0 });
    assert.equal(quick(limiter, "a").ok, true);
    assert.equal(quick(limiter, "a").ok, false);
  });

  it("refuses a request beyond maxConcurrent with reason 'concurrency'", () => {
    const { limiter } = limiterAt({ ratePerSecond: 0, maxConcurrent: 1 });
    assert.equal(limiter.acquire("a").ok, true);
    assertRefused(limiter.acquire("a"), "concurrency", 1);
  });

  it("restores the concurrency slot on release", () => {
    const { limiter } = limiterAt({ ratePerSecond: 0, maxConcurrent: 1 });
    const first = limiter.acquire("a");
    assert.ok(first.ok);
    first.release();
    assert.equal(limiter.acquire("a").ok, true);
  });

  it("counts a repeated release only once", () => {
    const { limiter } = limiterAt({ ratePerSecond: 0, maxConcurrent: 2 });
    const first = limiter.acquire("a");
    assert.ok(first.ok);
    assert.equal(limiter.acquire("a").ok, true);
    first.release();
    first.release();
    assert.equal(limiter.acquire("a").ok, true);
    assertRefused(limiter.acquire("a"), "concurrency", 1);
  });

  it("does not spend a token on a request refused for concurrency", () => {
    const { limiter } = limiterAt({ ratePerSecond: 1, burst: 2, maxConcurrent: 1 });
    const first = limiter.acquire("a");
    assert.ok(first.ok);
    assertRefused(limiter.acquire("a"), "concurrency", 1);
    first.release();
    assert.equal(quick(limiter, "a").ok, true);
  });

  it("treats rate 0 and maxConcurrent 0 as unlimited", () => {
    const { limiter } = limiterAt({ ratePerSecond: 0, maxConcurrent: 0 });
    for (let i = 0; i < 1000; i++) assert.equal(limiter.acquire("a").ok, true, `request ${i + 1}`);
  });

  it("keeps separate keys independent", () => {
    const { limiter } = limiterAt({ ratePerSecond: 1, maxConcurrent: 1 });
    assert.equal(limiter.acquire("a").ok, true);
    assert.equal(limiter.acquire("a").ok, false);
    assert.equal(limiter.acquire("b").ok, true);
  });

  const invalid = [
    { name: "refuses a negative ratePerSecond", options: { ratePerSecond: -1, maxConcurrent: 1 } },
    { name: "refuses a negative maxConcurrent", options: { ratePerSecond: 1, maxConcurrent: -1 } },
    {
      name: "refuses a negative burst",
      options: { ratePerSecond: 1, maxConcurrent: 1, burst: -1 },
    },
    {
      name: "refuses a NaN ratePerSecond",
      options: { ratePerSecond: Number.NaN, maxConcurrent: 1 },
    },
    {
      name: "refuses an infinite maxConcurrent",
      options: { ratePerSecond: 1, maxConcurrent: Infinity },
    },
  ] as const;
  for (const c of invalid) {
    it(`${c.name} with RangeError`, () => {
      assert.throws(() => new RateLimiter({ ...c.options, now: () => 0 }), { name: "RangeError" });
    });
  }

  it("gives a key seen again after being forgotten a full bucket", () => {
    const { limiter, clock } = limiterAt({
      ratePerSecond: 1,
      burst: 2,
      maxConcurrent: 0,
      maxKeys: 1,
    });
    quick(limiter, "a");
    quick(limiter, "a");
    clock.t = 2000;
    assert.equal(quick(limiter, "b").ok, true); // "a" is idle and full again: forgotten
    assert.equal(quick(limiter, "a").ok, true);
    assert.equal(quick(limiter, "a").ok, true);
    assert.equal(quick(limiter, "a").ok, false);
  });

  it("forgets idle keys of an unlimited rate", () => {
    const { limiter } = limiterAt({ ratePerSecond: 0, maxConcurrent: 1, maxKeys: 1 });
    quick(limiter, "a");
    assert.equal(limiter.acquire("b").ok, true);
    assert.equal(limiter.acquire("a").ok, true);
  });

  it("does not forget a key with a request in flight when maxKeys is exceeded", () => {
    const { limiter } = limiterAt({ ratePerSecond: 0, maxConcurrent: 1, maxKeys: 1 });
    assert.equal(limiter.acquire("a").ok, true);
    assert.equal(limiter.acquire("b").ok, true);
    assertRefused(limiter.acquire("a"), "concurrency", 1);
  });

  it("does not forget a key whose bucket is not yet full when maxKeys is exceeded", () => {
    const { limiter, clock } = limiterAt({
      ratePerSecond: 1,
      burst: 2,
      maxConcurrent: 0,
      maxKeys: 1,
    });
    quick(limiter, "a");
    quick(limiter, "a");
    clock.t = 500;
    assert.equal(quick(limiter, "b").ok, true);
    assertRefused(quick(limiter, "a"), "rate", 1);
  });
});
