import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Counter, Gauge, Histogram, MetricsRegistry } from "../../lib/metrics/mod.ts";

describe("MetricsRegistry", () => {
  it("creates a counter, a gauge and a histogram and snapshots them in registration order", () => {
    const registry = new MetricsRegistry();
    assert.ok(registry.counter({ name: "a_total", help: "a" }) instanceof Counter);
    assert.ok(registry.gauge({ name: "b", help: "b" }) instanceof Gauge);
    assert.ok(registry.histogram({ name: "c", help: "c" }) instanceof Histogram);
    assert.deepEqual(registry.snapshot().map((m) => [m.kind, m.name]), [
      ["counter", "a_total"],
      ["gauge", "b"],
      ["histogram", "c"],
    ]);
  });

  it("snapshots nothing when empty", () => {
    assert.deepEqual(new MetricsRegistry().snapshot(), []);
  });

  const duplicateCases = [
    { name: "refuses a second metric with the same name", first: "x", second: "x" },
    { name: "refuses a gauge named like a histogram's _sum", first: "h", second: "h_sum" },
    { name: "refuses a gauge named like a histogram's _bucket", first: "h", second: "h_bucket" },
    { name: "refuses a gauge named like a histogram's _count", first: "h", second: "h_count" },
  ] as const;
  for (const c of duplicateCases) {
    it(c.name, () => {
      const registry = new MetricsRegistry();
      registry.histogram({ name: c.first, help: "first" });
      assert.throws(() => registry.gauge({ name: c.second, help: "second" }), {
        name: "MetricsError",
        code: "ERR_METRICS_DUPLICATE",
      });
    });
  }

  it("refuses a histogram whose _count series a gauge already uses", () => {
    const registry = new MetricsRegistry();
    registry.gauge({ name: "h_count", help: "taken" });
    assert.throws(() => registry.histogram({ name: "h", help: "h" }), {
      code: "ERR_METRICS_DUPLICATE",
    });
  });

  it("keeps the registry unchanged after a refused registration", () => {
    const registry = new MetricsRegistry();
    registry.gauge({ name: "h_count", help: "taken" });
    assert.throws(() => registry.histogram({ name: "h", help: "h" }));
    registry.gauge({ name: "h", help: "free again" });
    assert.deepEqual(registry.snapshot().map((m) => m.name), ["h_count", "h"]);
  });

  const nameCases = [
    { name: "refuses an empty metric name", metric: "", labels: [] },
    { name: "refuses a metric name starting with a digit", metric: "1abc", labels: [] },
    { name: "refuses a metric name with a dash", metric: "a-b", labels: [] },
    { name: "refuses a metric name with a dot", metric: "a.b", labels: [] },
    { name: "refuses a label name with a colon", metric: "ok", labels: ["a:b"] },
    { name: "refuses a label name starting with __", metric: "ok", labels: ["__name"] },
    { name: "refuses an empty label name", metric: "ok", labels: [""] },
    { name: "refuses a label name starting with a digit", metric: "ok", labels: ["9a"] },
  ] as const;
  for (const c of nameCases) {
    it(c.name, () => {
      const registry = new MetricsRegistry();
      assert.throws(() => registry.gauge({ name: c.metric, help: "h", labelNames: c.labels }), {
        name: "MetricsError",
        code: "ERR_METRICS_INVALID_NAME",
      });
    });
  }

  it("accepts colons and underscores where the grammar allows them", () => {
    const registry = new MetricsRegistry();
    registry.gauge({ name: "_job:rate_5m", help: "h", labelNames: ["_a", "b_2"] });
    assert.equal(registry.snapshot().length, 1);
  });

  it("refuses a counter whose name does not end in _total", () => {
    assert.throws(() => new MetricsRegistry().counter({ name: "requests", help: "h" }), {
      code: "ERR_METRICS_INVALID_NAME",
    });
  });

  it("refuses le as a histogram label name", () => {
    const registry = new MetricsRegistry();
    assert.throws(() => registry.histogram({ name: "h", help: "h", labelNames: ["le"] }), {
      code: "ERR_METRICS_INVALID_NAME",
    });
  });

  it("accepts le as a gauge label name", () => {
    const gauge = new MetricsRegistry().gauge({ name: "g", help: "h", labelNames: ["le"] });
    gauge.set({ le: "1" }, 1);
    assert.equal(gauge.labels({ le: "1" }).value, 1);
  });

  it("refuses a label name declared twice", () => {
    const registry = new MetricsRegistry();
    assert.throws(() => registry.gauge({ name: "g", help: "h", labelNames: ["a", "a"] }), {
      code: "ERR_METRICS_DUPLICATE",
    });
  });
});
