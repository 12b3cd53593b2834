import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { DEFAULT_BUCKETS } from "../../lib/metrics/histogram.ts";
import { MetricsRegistry } from "../../lib/metrics/mod.ts";
import { createPrng } from "../_helpers/prng.ts";

describe("Histogram", () => {
  it("uses the Prometheus default buckets when none are given", () => {
    const histogram = new MetricsRegistry().histogram({ name: "h", help: "h" });
    assert.deepEqual(histogram.buckets, [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]);
    assert.deepEqual(histogram.buckets, DEFAULT_BUCKETS);
  });

  it("counts a value equal to a bound in that bound's bucket", () => {
    const histogram = new MetricsRegistry().histogram({ name: "h", help: "h", buckets: [1, 2] });
    histogram.observe({}, 1);
    histogram.observe({}, 2);
    histogram.observe({}, 2.0001);
    assert.deepEqual(histogram.snapshot().series, [
      { labelValues: [], bucketCounts: [1, 2], sum: 5.0001, count: 3 },
    ]);
  });

  it("keeps bucket counts cumulative and never above the count", () => {
    const seed = 20240627;
    const prng = createPrng(seed);
    const histogram = new MetricsRegistry().histogram({ name: "h", help: "h", labelNames: ["k"] });
    const child = histogram.labels({ k: "a" });
    const values: number[] = [];
    for (let i = 0; i < 500; i++) {
      const value = prng.next() * 12;
      values.push(value);
      child.observe(value);
    }
    const [series] = histogram.snapshot().series;
    assert.ok(series, `seed ${seed}`);
    histogram.buckets.forEach((bound, i) => {
      assert.equal(series.bucketCounts[i], values.filter((v) => v <= bound).length, `seed ${seed}`);
      if (i > 0) assert.ok(series.bucketCounts[i]! >= series.bucketCounts[i - 1]!, `seed ${seed}`);
    });
    assert.equal(series.count, 500);
    assert.ok(series.bucketCounts.at(-1)! <= series.count);
  });

  it("gives the same child for the same label values", () => {
    const histogram = new MetricsRegistry().histogram({ name: "h", help: "h", labelNames: ["r"] });
    assert.equal(histogram.labels({ r: "a" }), histogram.labels({ r: "a" }));
    assert.notEqual(histogram.labels({ r: "a" }), histogram.labels({ r: "b" }));
  });

  it("shows an empty series for a histogram without labels before any observation", () => {
    const histogram = new MetricsRegistry().histogram({ name: "h", help: "h", buckets: [1] });
    assert.deepEqual(histogram.snapshot().series, [
      { labelValues: [], bucketCounts: [0], sum: 0, count: 0 },
    ]);
  });

  it("refuses a label set that does not match", () => {
    const histogram = new MetricsRegistry().histogram({ name: "h", help: "h", labelNames: ["r"] });
    assert.throws(() => histogram.observe({}, 1), { code: "ERR_METRICS_INVALID_LABELS" });
  });

  for (const value of [Number.NaN, Infinity, -Infinity]) {
    it(`refuses to observe ${value}`, () => {
      const histogram = new MetricsRegistry().histogram({ name: "h", help: "h" });
      assert.throws(() => histogram.observe({}, value), RangeError);
      assert.equal(histogram.snapshot().series[0]?.count, 0);
    });
  }

  const bucketCases: readonly { name: string; buckets: readonly number[] }[] = [
    { name: "refuses empty buckets", buckets: [] },
    { name: "refuses descending buckets", buckets: [1, 0.5] },
    { name: "refuses a repeated bound", buckets: [1, 1] },
    { name: "refuses an infinite bound", buckets: [1, Infinity] },
    { name: "refuses a NaN bound", buckets: [Number.NaN] },
    { name: "refuses a bound that is not a number", buckets: ["1"] as unknown as number[] },
  ];
  for (const c of bucketCases) {
    it(c.name, () => {
      const registry = new MetricsRegistry();
      assert.throws(() => registry.histogram({ name: "h", help: "h", buckets: c.buckets }), {
        name: "MetricsError",
        code: "ERR_METRICS_INVALID_BUCKETS",
      });
    });
  }

  it("copies the buckets it is given", () => {
    const buckets = [1, 2];
    const histogram = new MetricsRegistry().histogram({ name: "h", help: "h", buckets });
    buckets.push(3);
    assert.deepEqual(histogram.buckets, [1, 2]);
  });
});
