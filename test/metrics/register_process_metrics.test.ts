import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  MetricsRegistry,
  type ProcessSource,
  registerProcessMetrics,
  renderMetrics,
} from "../../lib/metrics/mod.ts";
import { nodeProcessSource } from "../../lib/metrics/register_process_metrics.ts";

/** A source with fixed numbers that counts how often it is read. */
function fixedSource(): ProcessSource & { reads: number } {
  const source = {
    reads: 0,
    cpuUsage() {
      source.reads++;
      return { user: 1_500_000, system: 250_000 };
    },
    memoryUsage: () => ({ rss: 52_428_800, heapUsed: 10_000_000, heapTotal: 16_000_000 }),
    startTimeSeconds: () => 1_700_000_000.5,
  };
  return source;
}

/** The sample lines of a rendering, by metric name. */
function samples(text: string): Map<string, string> {
  const found = new Map<string, string>();
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const [name, value] = line.split(" ");
    found.set(name!, value!);
  }
  return found;
}

describe("registerProcessMetrics()", () => {
  it("reports CPU in seconds, memory in bytes and the start time from the source", () => {
    const registry = new MetricsRegistry();
    registerProcessMetrics(registry, { source: fixedSource() });
    assert.deepEqual(Object.fromEntries(samples(renderMetrics(registry))), {
      process_cpu_user_seconds_total: "1.5",
      process_cpu_system_seconds_total: "0.25",
      process_cpu_seconds_total: "1.75",
      process_resident_memory_bytes: "52428800",
      process_start_time_seconds: "1700000000.5",
      nodejs_heap_size_used_bytes: "10000000",
      nodejs_heap_size_total_bytes: "16000000",
    });
  });

  it("types CPU totals as counters and the rest as gauges", () => {
    const registry = new MetricsRegistry();
    registerProcessMetrics(registry, { source: fixedSource() });
    const kinds = Object.fromEntries(registry.snapshot().map((m) => [m.name, m.kind]));
    assert.equal(kinds["process_cpu_user_seconds_total"], "counter");
    assert.equal(kinds["process_cpu_system_seconds_total"], "counter");
    assert.equal(kinds["process_resident_memory_bytes"], "gauge");
    assert.equal(kinds["process_start_time_seconds"], "gauge");
  });

  it("reads the source at each scrape, not at registration", () => {
    const registry = new MetricsRegistry();
    const source = fixedSource();
    registerProcessMetrics(registry, { source });
    assert.equal(source.reads, 0);
    renderMetrics(registry);
    const afterOne = source.reads;
    renderMetrics(registry);
    assert.equal(source.reads, afterOne * 2);
  });

  it("refuses to register twice on one registry", () => {
    const registry = new MetricsRegistry();
    registerProcessMetrics(registry, { source: fixedSource() });
    assert.throws(() => registerProcessMetrics(registry, { source: fixedSource() }), {
      code: "ERR_METRICS_DUPLICATE",
    });
  });

  it("reads the real process by default", () => {
    const registry = new MetricsRegistry();
    registerProcessMetrics(registry);
    const found = samples(renderMetrics(registry));
    const positive = [
      "process_cpu_user_seconds_total",
      "process_resident_memory_bytes",
      "nodejs_heap_size_used_bytes",
    ];
    for (const name of positive) {
      assert.ok(Number(found.get(name)) > 0, name);
    }
    assert.ok(Number(found.get("process_start_time_seconds")) > 1_600_000_000);
  });

  it("gives a start time that stays the same between reads", () => {
    const source = nodeProcessSource();
    assert.equal(source.startTimeSeconds(), source.startTimeSeconds());
  });
});
