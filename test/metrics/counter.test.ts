import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { type Labels, MetricsRegistry } from "../../lib/metrics/mod.ts";

function requestsCounter() {
  return new MetricsRegistry().counter({
    name: "requests_total",
    help: "Requests",
    labelNames: ["route", "status"],
  });
}

describe("Counter", () => {
  it("starts a counter without labels at 0", () => {
    const counter = new MetricsRegistry().counter({ name: "a_total", help: "a" });
    assert.deepEqual(counter.snapshot().samples, [{ labelValues: [], value: 0 }]);
  });

  it("adds 1 by default and the given value otherwise", () => {
    const counter = new MetricsRegistry().counter({ name: "a_total", help: "a" });
    counter.inc();
    counter.inc(undefined, 2.5);
    counter.inc({}, 1);
    assert.equal(counter.snapshot().samples[0]?.value, 4.5);
  });

  it("keeps one series per label set, in first-use order and declared label order", () => {
    const counter = requestsCounter();
    counter.inc({ status: "200", route: "/a" });
    counter.inc({ route: "/b", status: "404" });
    counter.inc({ route: "/a", status: "200" });
    assert.deepEqual(counter.snapshot().samples, [
      { labelValues: ["/a", "200"], value: 2 },
      { labelValues: ["/b", "404"], value: 1 },
    ]);
  });

  it("gives the same child for the same label values", () => {
    const counter = requestsCounter();
    const child = counter.labels({ route: "/a", status: "200" });
    assert.equal(counter.labels({ status: "200", route: "/a" }), child);
    child.inc();
    child.inc(2);
    assert.equal(child.value, 3);
    assert.deepEqual(child.labelValues, ["/a", "200"]);
  });

  it("keeps label values apart that a naive join would confuse", () => {
    const counter = requestsCounter();
    counter.inc({ route: "a,b", status: "c" });
    counter.inc({ route: "a", status: "b,c" });
    assert.equal(counter.snapshot().samples.length, 2);
  });

  const labelCases: readonly { name: string; labels: unknown }[] = [
    { name: "refuses a missing label", labels: { route: "/a" } },
    { name: "refuses an extra label", labels: { route: "/a", status: "200", method: "GET" } },
    { name: "refuses a misspelt label", labels: { route: "/a", state: "200" } },
    { name: "refuses a number as a label value", labels: { route: "/a", status: 200 } },
    { name: "refuses undefined as a label value", labels: { route: "/a", status: undefined } },
    { name: "refuses no labels on a labelled counter", labels: undefined },
    { name: "refuses a string instead of a label set", labels: "route" },
  ];
  for (const c of labelCases) {
    it(c.name, () => {
      const counter = requestsCounter();
      const labels = c.labels as Labels;
      assert.throws(() => counter.inc(labels), {
        name: "MetricsError",
        code: "ERR_METRICS_INVALID_LABELS",
      });
      assert.throws(() => counter.labels(labels), { code: "ERR_METRICS_INVALID_LABELS" });
    });
  }

  it("refuses labels on a counter declared without any", () => {
    const counter = new MetricsRegistry().counter({ name: "a_total", help: "a" });
    assert.throws(() => counter.inc({ route: "/a" }), { code: "ERR_METRICS_INVALID_LABELS" });
  });

  const valueCases = [
    { name: "refuses a negative increment", value: -1 },
    { name: "refuses NaN as an increment", value: Number.NaN },
    { name: "refuses an infinite increment", value: Infinity },
  ] as const;
  for (const c of valueCases) {
    it(c.name, () => {
      const counter = new MetricsRegistry().counter({ name: "a_total", help: "a" });
      assert.throws(() => counter.inc(undefined, c.value), RangeError);
      assert.equal(counter.snapshot().samples[0]?.value, 0);
    });
  }

  it("takes its samples from collect at each snapshot", () => {
    let cpu = 1.5;
    const counter = new MetricsRegistry().counter({
      name: "cpu_seconds_total",
      help: "cpu",
      labelNames: ["mode"],
      collect: () => [{ labels: { mode: "user" }, value: cpu }],
    });
    assert.deepEqual(counter.snapshot().samples, [{ labelValues: ["user"], value: 1.5 }]);
    cpu = 2;
    assert.deepEqual(counter.snapshot().samples, [{ labelValues: ["user"], value: 2 }]);
  });

  it("refuses direct updates when it has a collect callback", () => {
    const registry = new MetricsRegistry();
    const counter = registry.counter({ name: "a_total", help: "a", collect: () => [] });
    assert.throws(() => counter.inc(), { name: "MetricsError", code: "ERR_METRICS_COLLECTED" });
    assert.throws(() => counter.labels({}), { code: "ERR_METRICS_COLLECTED" });
  });
});
