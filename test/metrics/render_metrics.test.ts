import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  createHttpMetrics,
  MetricsRegistry,
  registerProcessMetrics,
  renderMetrics,
} from "../../lib/metrics/mod.ts";
import { METRICS_CONTENT_TYPE } from "../../lib/metrics/render_metrics.ts";
import { promtoolCheck, promtoolFound, promtoolSkip } from "../_helpers/promtool.ts";

/** The lines joined as the exposition text, ending in a newline. */
function lines(...text: string[]): string {
  return `${text.join("\n")}\n`;
}

describe("renderMetrics()", () => {
  it("renders an empty registry as an empty string", () => {
    assert.equal(renderMetrics(new MetricsRegistry()), "");
  });

  it("renders a counter without labels, at 0 before its first increment", () => {
    const registry = new MetricsRegistry();
    registry.counter({ name: "jobs_total", help: "Jobs done" });
    assert.equal(
      renderMetrics(registry),
      lines(
        "# HELP jobs_total Jobs done",
        "# TYPE jobs_total counter",
        "jobs_total 0",
      ),
    );
  });

  it("renders a counter with labels in declared label order", () => {
    const registry = new MetricsRegistry();
    const counter = registry.counter({
      name: "http_requests_total",
      help: "Requests",
      labelNames: ["route", "status"],
    });
    counter.inc({ status: "200", route: "/a" }, 3);
    counter.inc({ route: "/b", status: "500" });
    assert.equal(
      renderMetrics(registry),
      lines(
        "# HELP http_requests_total Requests",
        "# TYPE http_requests_total counter",
        'http_requests_total{route="/a",status="200"} 3',
        'http_requests_total{route="/b",status="500"} 1',
      ),
    );
  });

  it("renders a labelled metric without series as its HELP and TYPE lines only", () => {
    const registry = new MetricsRegistry();
    registry.counter({ name: "a_total", help: "a", labelNames: ["k"] });
    assert.equal(renderMetrics(registry), lines("# HELP a_total a", "# TYPE a_total counter"));
  });

  it("renders gauges, with special values as +Inf, -Inf and NaN", () => {
    const registry = new MetricsRegistry();
    const gauge = registry.gauge({ name: "temperature", help: "Degrees", labelNames: ["room"] });
    gauge.set({ room: "a" }, -1.5);
    gauge.set({ room: "b" }, Infinity);
    gauge.set({ room: "c" }, -Infinity);
    gauge.set({ room: "d" }, Number.NaN);
    gauge.set({ room: "e" }, 1e21);
    assert.equal(
      renderMetrics(registry),
      lines(
        "# HELP temperature Degrees",
        "# TYPE temperature gauge",
        'temperature{room="a"} -1.5',
        'temperature{room="b"} +Inf',
        'temperature{room="c"} -Inf',
        'temperature{room="d"} NaN',
        'temperature{room="e"} 1e+21',
      ),
    );
  });

  it("renders a gauge from its collect callback", () => {
    const registry = new MetricsRegistry();
    registry.gauge({
      name: "queue_depth",
      help: "Jobs by state",
      labelNames: ["state"],
      collect: () => [
        { labels: { state: "ready" }, value: 4 },
        { labels: { state: "dead" }, value: 0 },
      ],
    });
    assert.equal(
      renderMetrics(registry),
      lines(
        "# HELP queue_depth Jobs by state",
        "# TYPE queue_depth gauge",
        'queue_depth{state="ready"} 4',
        'queue_depth{state="dead"} 0',
      ),
    );
  });

  it("renders a histogram without labels with cumulative buckets, +Inf, _sum and _count", () => {
    const registry = new MetricsRegistry();
    const histogram = registry.histogram({
      name: "latency_seconds",
      help: "Latency",
      buckets: [0.1, 0.5, 1],
    });
    for (const value of [0.05, 0.1, 0.3, 0.7, 2]) histogram.observe({}, value);
    assert.equal(
      renderMetrics(registry),
      lines(
        "# HELP latency_seconds Latency",
        "# TYPE latency_seconds histogram",
        'latency_seconds_bucket{le="0.1"} 2',
        'latency_seconds_bucket{le="0.5"} 3',
        'latency_seconds_bucket{le="1"} 4',
        'latency_seconds_bucket{le="+Inf"} 5',
        "latency_seconds_sum 3.15",
        "latency_seconds_count 5",
      ),
    );
  });

  it("renders a histogram with labels, le last", () => {
    const registry = new MetricsRegistry();
    const histogram = registry.histogram({
      name: "d_seconds",
      help: "D",
      labelNames: ["service", "route"],
      buckets: [0.005, 2.5],
    });
    histogram.observe({ service: "sync", route: "/x" }, 0.004);
    histogram.observe({ service: "sync", route: "/x" }, 3);
    histogram.observe({ service: "water", route: "/y" }, 1);
    assert.equal(
      renderMetrics(registry),
      lines(
        "# HELP d_seconds D",
        "# TYPE d_seconds histogram",
        'd_seconds_bucket{service="sync",route="/x",le="0.005"} 1',
        'd_seconds_bucket{service="sync",route="/x",le="2.5"} 1',
        'd_seconds_bucket{service="sync",route="/x",le="+Inf"} 2',
        'd_seconds_sum{service="sync",route="/x"} 3.004',
        'd_seconds_count{service="sync",route="/x"} 2',
        'd_seconds_bucket{service="water",route="/y",le="0.005"} 0',
        'd_seconds_bucket{service="water",route="/y",le="2.5"} 1',
        'd_seconds_bucket{service="water",route="/y",le="+Inf"} 1',
        'd_seconds_sum{service="water",route="/y"} 1',
        'd_seconds_count{service="water",route="/y"} 1',
      ),
    );
  });

  it("renders an empty histogram without labels as zero buckets", () => {
    const registry = new MetricsRegistry();
    registry.histogram({ name: "h", help: "H", buckets: [1] });
    assert.equal(
      renderMetrics(registry),
      lines(
        "# HELP h H",
        "# TYPE h histogram",
        'h_bucket{le="1"} 0',
        'h_bucket{le="+Inf"} 0',
        "h_sum 0",
        "h_count 0",
      ),
    );
  });

  const helpCases = [
    { name: "escapes a backslash in HELP", help: "a\\b", expected: "a\\\\b" },
    { name: "escapes a newline in HELP", help: "a\nb", expected: "a\\nb" },
    { name: "keeps a double quote in HELP as is", help: 'a"b', expected: 'a"b' },
  ] as const;
  for (const c of helpCases) {
    it(c.name, () => {
      const registry = new MetricsRegistry();
      registry.gauge({ name: "g", help: c.help });
      const expected = lines(`# HELP g ${c.expected}`, "# TYPE g gauge", "g 0");
      assert.equal(renderMetrics(registry), expected);
    });
  }

  const valueCases = [
    { name: "escapes a backslash in a label value", value: "C:\\x", expected: "C:\\\\x" },
    { name: "escapes a double quote in a label value", value: 'a "b"', expected: 'a \\"b\\"' },
    { name: "escapes a newline in a label value", value: "a\nb", expected: "a\\nb" },
    { name: "keeps UTF-8 in a label value as is", value: "Zürich ☔", expected: "Zürich ☔" },
    { name: "escapes each special character", value: '\\"\n\\', expected: '\\\\\\"\\n\\\\' },
  ] as const;
  for (const c of valueCases) {
    it(c.name, () => {
      const registry = new MetricsRegistry();
      registry.gauge({ name: "g", help: "h", labelNames: ["v"] }).set({ v: c.value }, 1);
      const expected = lines("# HELP g h", "# TYPE g gauge", `g{v="${c.expected}"} 1`);
      assert.equal(renderMetrics(registry), expected);
    });
  }

  it("renders metrics in registration order", () => {
    const registry = new MetricsRegistry();
    registry.gauge({ name: "z", help: "z" });
    registry.gauge({ name: "a", help: "a" });
    const names = renderMetrics(registry).split("\n").filter((line) => line.startsWith("# TYPE"));
    assert.deepEqual(names, ["# TYPE z gauge", "# TYPE a gauge"]);
  });

  it("exports the 0.0.4 content type", () => {
    assert.equal(METRICS_CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8");
  });
});

/** A registry like the server's: HTTP, relay and process metrics, with awkward label values. */
function realisticRegistry(): MetricsRegistry {
  const registry = new MetricsRegistry();
  const http = createHttpMetrics(registry);
  const routes = [
    { service: "water", route: "/v1/odata/v4/Observations" },
    { service: "sync", route: "/oauth2/token" },
    { service: "relay", route: "/webhook" },
  ];
  for (const labels of routes) {
    for (const status of ["200", "202", "400", "429", "500"]) {
      http.requests.inc({ ...labels, method: "GET", status });
    }
    for (const seconds of [0.001, 0.02, 0.4, 3, 12]) http.duration.observe(labels, seconds);
  }
  const odd = 'other "odd" \\ path\nx';
  http.requests.inc({ service: "relay", route: odd, method: "OTHER", status: "404" });
  registry.counter({
    name: "tributary_relay_messages_accepted_total",
    help: "Messages accepted at intake",
  }).inc(undefined, 42);
  const attempts = registry.counter({
    name: "tributary_relay_delivery_attempts_total",
    help: "Delivery attempts by outcome",
    labelNames: ["outcome"],
  });
  for (const outcome of ["success", "failure", "timeout", "blocked", "gone", "throttled"]) {
    attempts.inc({ outcome });
  }
  registry.histogram({
    name: "tributary_relay_delivery_duration_seconds",
    help: "Seconds per delivery attempt",
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30],
  }).observe({}, 0.3);
  registry.counter({ name: "tributary_relay_messages_dead_total", help: "Messages dead-lettered" });
  registry.gauge({
    name: "tributary_relay_queue_depth",
    help: "Jobs in the queue by state",
    labelNames: ["state"],
    collect: () =>
      ["ready", "delayed", "leased", "dead"].map((state, i) => ({ labels: { state }, value: i })),
  });
  registerProcessMetrics(registry);
  return registry;
}

describe("renderMetrics() with promtool", () => {
  it(
    "renders a realistic registry that promtool check metrics accepts",
    { skip: promtoolSkip },
    async () => {
      assert.ok(promtoolFound, "REQUIRE_SERVICES=1 but promtool is not on PATH");
      const text = renderMetrics(realisticRegistry());
      const { code, output } = await promtoolCheck(text);
      assert.equal(code, 0, output);
    },
  );

  it("is checked by a promtool that does refuse bad text", { skip: promtoolSkip }, async () => {
    assert.ok(promtoolFound, "REQUIRE_SERVICES=1 but promtool is not on PATH");
    const { code } = await promtoolCheck('x{a="b} 1\n');
    assert.notEqual(code, 0);
  });
});
