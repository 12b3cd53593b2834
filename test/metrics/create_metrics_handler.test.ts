import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { HttpResponse } from "../../lib/http/mod.ts";
import {
  createMetricsHandler,
  type MetricsHandlerOptions,
  MetricsRegistry,
} from "../../lib/metrics/mod.ts";
import { METRICS_CONTENT_TYPE } from "../../lib/metrics/render_metrics.ts";
import { bodyText, callHandler, makeRequest, rawRequest, startServer } from "../_helpers/http.ts";

function registryWithOne(): MetricsRegistry {
  const registry = new MetricsRegistry();
  registry.counter({ name: "a_total", help: "A" }).inc();
  return registry;
}

const EXPECTED = "# HELP a_total A\n# TYPE a_total counter\na_total 1\n";

/** Calls a fresh metrics handler over {@linkcode registryWithOne} with one request. */
function scrape(
  method: string,
  path: string,
  options: MetricsHandlerOptions = {},
): Promise<HttpResponse> {
  const handler = createMetricsHandler(registryWithOne(), options);
  return callHandler(handler, makeRequest({ method, path }));
}

describe("createMetricsHandler()", () => {
  it("answers GET /metrics with the exposition text, its content type and no-store", async () => {
    const response = await scrape("GET", "/metrics");
    assert.equal(response.status, 200);
    assert.deepEqual(response.headers, {
      "content-type": METRICS_CONTENT_TYPE,
      "cache-control": "no-store",
    });
    assert.equal(await bodyText(response), EXPECTED);
  });

  it("renders the registry afresh on every request", async () => {
    const registry = new MetricsRegistry();
    const counter = registry.counter({ name: "a_total", help: "A" });
    const handler = createMetricsHandler(registry);
    const text = async (): Promise<string> =>
      await bodyText(await callHandler(handler, makeRequest({ path: "/metrics" })));
    counter.inc();
    assert.match(await text(), /a_total 1/);
    counter.inc();
    assert.match(await text(), /a_total 2/);
  });

  it("accepts a trailing slash", async () => {
    assert.equal((await scrape("GET", "/metrics/")).status, 200);
  });

  it("answers another configured path", async () => {
    const options = { path: "/internal/metrics" };
    assert.equal((await scrape("GET", "/internal/metrics", options)).status, 200);
    await assert.rejects(scrape("GET", "/metrics", options), { code: "ERR_HTTP_NOT_FOUND" });
  });

  const refusedMethods = ["POST", "PUT", "DELETE", "OPTIONS"] as const;
  for (const method of refusedMethods) {
    it(`refuses ${method} with ERR_HTTP_METHOD_NOT_ALLOWED and allow: GET, HEAD`, async () => {
      await assert.rejects(scrape(method, "/metrics"), {
        name: "HttpError",
        code: "ERR_HTTP_METHOD_NOT_ALLOWED",
        headers: { allow: "GET, HEAD" },
      });
    });
  }

  it("refuses another path with ERR_HTTP_NOT_FOUND", async () => {
    await assert.rejects(scrape("GET", "/metrics/x"), { code: "ERR_HTTP_NOT_FOUND" });
  });

  it("serves GET with a body and HEAD without one through the node adapter", async () => {
    const server = await startServer(createMetricsHandler(registryWithOne()));
    try {
      const get = await rawRequest(server.port, { path: "/metrics" });
      assert.equal(get.status, 200);
      assert.equal(get.headers["content-type"], METRICS_CONTENT_TYPE);
      assert.equal(get.body.toString("utf8"), EXPECTED);
      const head = await rawRequest(server.port, { method: "HEAD", path: "/metrics" });
      assert.equal(head.status, 200);
      assert.equal(head.headers["content-length"], String(Buffer.byteLength(EXPECTED)));
      assert.equal(head.body.byteLength, 0);
    } finally {
      await server.close();
    }
  });
});
