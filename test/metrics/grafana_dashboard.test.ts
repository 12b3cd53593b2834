import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { describe, it } from "node:test";

interface Target {
  readonly expr: string;
  readonly refId: string;
  readonly datasource?: { readonly uid?: string };
}

interface Panel {
  readonly id: number;
  readonly type: string;
  readonly title: string;
  readonly datasource?: { readonly type?: string; readonly uid?: string };
  readonly targets?: readonly Target[];
}

interface Dashboard {
  readonly schemaVersion: number;
  readonly uid: string;
  readonly __inputs: readonly { readonly name: string; readonly pluginId: string }[];
  readonly templating: {
    readonly list: readonly { readonly name: string; readonly type: string }[];
  };
  readonly panels: readonly Panel[];
}

const dashboard = JSON.parse(
  await readFile(new URL("../../data/grafana_dashboard.json", import.meta.url), "utf8"),
) as Dashboard;
const queryPanels = dashboard.panels.filter((panel) => panel.type !== "row");
const expressions = queryPanels.flatMap((panel) =>
  (panel.targets ?? []).map((target) => target.expr)
);

describe("data/grafana_dashboard.json", () => {
  it("is a dashboard of schema version 39 with a uid", () => {
    assert.equal(dashboard.schemaVersion, 39);
    assert.equal(dashboard.uid, "tributary-overview");
  });

  it("asks for a Prometheus data source on import and templates it", () => {
    assert.deepEqual(dashboard.__inputs.map((input) => [input.name, input.pluginId]), [
      ["DS_PROMETHEUS", "prometheus"],
    ]);
    const variables = dashboard.templating.list;
    assert.ok(variables.some((v) => v.name === "datasource" && v.type === "datasource"));
    for (const panel of queryPanels) {
      assert.deepEqual(panel.datasource, { type: "prometheus", uid: "${datasource}" }, panel.title);
    }
  });

  const wanted = [
    "rate(tributary_http_requests_total",
    "tributary_http_request_duration_seconds_bucket",
    "rate(tributary_relay_messages_accepted_total[1m])",
    'tributary_relay_delivery_attempts_total{outcome="success"}',
    "tributary_relay_delivery_duration_seconds_bucket",
    "tributary_relay_messages_dead_total",
    "tributary_relay_queue_depth",
  ] as const;
  for (const fragment of wanted) {
    it(`queries ${fragment}`, () => {
      assert.ok(expressions.some((expr) => expr.includes(fragment)), fragment);
    });
  }

  it("shows request duration p50, p95 and p99", () => {
    for (const quantile of ["0.5", "0.95", "0.99"]) {
      const found = expressions.some((expr) =>
        expr.startsWith(`histogram_quantile(${quantile},`) &&
        expr.includes("tributary_http_request_duration_seconds_bucket")
      );
      assert.ok(found, quantile);
    }
  });

  it("gives every panel a unique id and every target a refId", () => {
    const ids = dashboard.panels.map((panel) => panel.id);
    assert.equal(new Set(ids).size, ids.length);
    for (const panel of queryPanels) {
      for (const target of panel.targets ?? []) {
        assert.match(target.refId, /^[A-Z]$/);
      }
    }
  });
});
