import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { type Labels, MetricsRegistry, type Sample } from "../../lib/metrics/mod.ts";

describe("Gauge", () => {
  it("sets, increments and decrements a series", () => {
    const gauge = new MetricsRegistry().gauge({ name: "g", help: "g", labelNames: ["pool"] });
    gauge.set({ pool: "a" }, 10);
    gauge.inc({ pool: "a" });
    gauge.inc({ pool: "a" }, 4);
    gauge.dec({ pool: "a" });
    gauge.dec({ pool: "a" }, 20);
    assert.deepEqual(gauge.snapshot().samples, [{ labelValues: ["a"], value: -6 }]);
  });

  it("updates through a child as through the gauge", () => {
    const gauge = new MetricsRegistry().gauge({ name: "g", help: "g" });
    const child = gauge.labels({});
    child.set(3);
    child.inc();
    child.dec(2);
    assert.equal(child.value, 2);
    assert.equal(gauge.snapshot().samples[0]?.value, 2);
  });

  it("refuses a label set that does not match", () => {
    const gauge = new MetricsRegistry().gauge({ name: "g", help: "g", labelNames: ["pool"] });
    assert.throws(() => gauge.set({ pol: "a" }, 1), { code: "ERR_METRICS_INVALID_LABELS" });
    assert.throws(() => gauge.inc(), { code: "ERR_METRICS_INVALID_LABELS" });
  });

  it("takes its samples from collect at each snapshot", () => {
    const depth = { ready: 3, delayed: 1 };
    const gauge = new MetricsRegistry().gauge({
      name: "queue_depth",
      help: "q",
      labelNames: ["state"],
      collect: () => Object.entries(depth).map(([state, value]) => ({ labels: { state }, value })),
    });
    assert.deepEqual(gauge.snapshot().samples, [
      { labelValues: ["ready"], value: 3 },
      { labelValues: ["delayed"], value: 1 },
    ]);
    depth.ready = 0;
    assert.equal(gauge.snapshot().samples[0]?.value, 0);
  });

  it("refuses direct updates when it has a collect callback", () => {
    const gauge = new MetricsRegistry().gauge({ name: "g", help: "g", collect: () => [] });
    for (const update of [() => gauge.set({}, 1), () => gauge.inc(), () => gauge.dec()]) {
      assert.throws(update, { name: "MetricsError", code: "ERR_METRICS_COLLECTED" });
    }
  });

  const collectCases: readonly { name: string; samples: readonly Sample[]; code: string }[] = [
    {
      name: "refuses collected samples with the wrong labels",
      samples: [{ labels: { status: "ready" }, value: 1 }],
      code: "ERR_METRICS_INVALID_LABELS",
    },
    {
      name: "refuses collected samples without labels on a labelled gauge",
      samples: [{ value: 1 }],
      code: "ERR_METRICS_INVALID_LABELS",
    },
    {
      name: "refuses two collected samples with the same labels",
      samples: [{ labels: { state: "ready" }, value: 1 }, { labels: { state: "ready" }, value: 2 }],
      code: "ERR_METRICS_DUPLICATE",
    },
  ];
  for (const c of collectCases) {
    it(c.name, () => {
      const gauge = new MetricsRegistry().gauge({
        name: "g",
        help: "g",
        labelNames: ["state"],
        collect: () => c.samples,
      });
      assert.throws(() => gauge.snapshot(), { name: "MetricsError", code: c.code });
    });
  }

  it("refuses a collected value that is not a number", () => {
    const gauge = new MetricsRegistry().gauge({
      name: "g",
      help: "g",
      collect: () => [{ labels: {} as Labels, value: "3" as unknown as number }],
    });
    assert.throws(() => gauge.snapshot(), TypeError);
  });
});
