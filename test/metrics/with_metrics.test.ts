import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  answeredBy,
  createRouter,
  type Handler,
  HttpError,
  type HttpRequest,
  keepRoutes,
} from "../../lib/http/mod.ts";
import {
  createHttpMetrics,
  type HttpMetrics,
  MetricsRegistry,
  renderMetrics,
  withMetrics,
} from "../../lib/metrics/mod.ts";
import { bodyText, callHandler, makeRequest } from "../_helpers/http.ts";

/** A clock the test moves by assigning `clock.t` (milliseconds). */
function setup(): { registry: MetricsRegistry; metrics: HttpMetrics; clock: { t: number } } {
  const registry = new MetricsRegistry();
  return { registry, metrics: createHttpMetrics(registry), clock: { t: 1000 } };
}

/** The value of each request counter series, keyed by `route method status`. */
function counts(metrics: HttpMetrics): Record<string, number> {
  const out: Record<string, number> = {};
  for (const sample of metrics.requests.snapshot().samples) {
    const [service, route, method, status] = sample.labelValues;
    out[`${service} ${route} ${method} ${status}`] = sample.value;
  }
  return out;
}

const byPath = (request: HttpRequest): string => (request.path === "/known" ? "/known" : "other");

describe("withMetrics()", () => {
  const statusCases: readonly { name: string; handler: Handler; status: string }[] = [
    { name: "counts a 200 response", handler: () => ({ status: 200 }), status: "200" },
    {
      name: "counts a 204 from an async handler",
      handler: async () => ({ status: 204 }),
      status: "204",
    },
    {
      name: "counts an error response the handler returns",
      handler: () => ({ status: 503 }),
      status: "503",
    },
    {
      name: "counts a thrown HttpError with its mapped status",
      handler: () => {
        throw new HttpError("ERR_HTTP_RATE_LIMITED", "Cannot accept the request now: too fast");
      },
      status: "429",
    },
    {
      name: "counts a rejected promise with its mapped status",
      handler: () =>
        Promise.reject(new HttpError("ERR_HTTP_NOT_FOUND", "Cannot find /x: no such resource")),
      status: "404",
    },
    {
      name: "counts an unknown thrown error as 500",
      handler: () => {
        throw new Error("boom");
      },
      status: "500",
    },
  ];
  for (const c of statusCases) {
    it(c.name, async () => {
      const { metrics, clock } = setup();
      const options = { metrics, service: "water", route: byPath, now: () => clock.t };
      const handler = withMetrics(c.handler, options);
      await callHandler(handler, makeRequest({ path: "/known" })).catch(() => undefined);
      assert.deepEqual(counts(metrics), { [`water /known GET ${c.status}`]: 1 });
    });
  }

  it("rethrows the handler's error unchanged", async () => {
    const { metrics, clock } = setup();
    const error = new HttpError("ERR_HTTP_FORBIDDEN", "Cannot read: forbidden");
    const handler = withMetrics(() => {
      throw error;
    }, { metrics, service: "water", route: byPath, now: () => clock.t });
    await assert.rejects(callHandler(handler, makeRequest()), (thrown) => thrown === error);
  });

  it("returns the handler's response unchanged", async () => {
    const { metrics, clock } = setup();
    const response = { status: 200, body: "ok" };
    const options = { metrics, service: "s", route: byPath, now: () => clock.t };
    const handler = withMetrics(() => response, options);
    assert.equal(await handler(makeRequest()), response);
  });

  it("names the route with the route option, never the raw path", async () => {
    const { metrics, clock } = setup();
    const handler = withMetrics(() => ({ status: 404 }), {
      metrics,
      service: "relay",
      route: byPath,
      now: () => clock.t,
    });
    for (const path of ["/a/1", "/a/2", "/b", "/known"]) await handler(makeRequest({ path }));
    assert.deepEqual(counts(metrics), { "relay other GET 404": 3, "relay /known GET 404": 1 });
  });

  it("notes the service and route on each request it answers or that throws, one shared note a route", async () => {
    const { metrics, clock } = setup();
    const handler = withMetrics((request) => {
      if (request.method === "DELETE") {
        throw new HttpError("ERR_HTTP_FORBIDDEN", "Cannot delete: forbidden");
      }
      return { status: 200 };
    }, { metrics, service: "relay", route: byPath, now: () => clock.t });
    const first = makeRequest({ path: "/known" });
    const second = makeRequest({ path: "/known" });
    const thrown = makeRequest({ method: "DELETE", path: "/known" });
    const unknown = makeRequest({ path: "/a/1" });
    await handler(first);
    await handler(second);
    await assert.rejects(callHandler(handler, thrown));
    await handler(unknown);
    assert.deepEqual(answeredBy(first), { service: "relay", route: "/known" });
    assert.equal(answeredBy(second), answeredBy(first));
    assert.equal(answeredBy(thrown), answeredBy(first));
    assert.deepEqual(answeredBy(unknown), { service: "relay", route: "other" });
  });

  it("counts methods outside the standard set as OTHER", async () => {
    const { metrics, clock } = setup();
    const options = { metrics, service: "s", route: byPath, now: () => clock.t };
    const handler = withMetrics(() => ({ status: 405 }), options);
    for (const method of ["POST", "BREW", "PROPFIND"]) {
      await handler(makeRequest({ method, path: "/known" }));
    }
    assert.deepEqual(counts(metrics), { "s /known POST 405": 1, "s /known OTHER 405": 2 });
  });

  it("observes the time the handler took, in seconds, by service and route", async () => {
    const { metrics, clock } = setup();
    const handler = withMetrics(async () => {
      clock.t += 250;
      return { status: 200 };
    }, { metrics, service: "sync", route: byPath, now: () => clock.t });
    await handler(makeRequest({ path: "/known" }));
    const [series] = metrics.duration.snapshot().series;
    assert.deepEqual(series?.labelValues, ["sync", "/known"]);
    assert.equal(series?.sum, 0.25);
    assert.equal(series?.count, 1);
  });

  it("observes the time up to a thrown error", async () => {
    const { metrics, clock } = setup();
    const handler = withMetrics(() => {
      clock.t += 40;
      throw new Error("boom");
    }, { metrics, service: "sync", route: byPath, now: () => clock.t });
    await assert.rejects(callHandler(handler, makeRequest()));
    assert.equal(metrics.duration.snapshot().series[0]?.sum, 0.04);
  });

  it("counts a streamed response when it starts and leaves the stream intact", async () => {
    const { metrics, clock } = setup();
    const handler = withMetrics(() => ({
      status: 200,
      body: (async function* (): AsyncGenerator<string> {
        yield "a";
        yield "b";
      })(),
    }), { metrics, service: "water", route: byPath, now: () => clock.t });
    const response = await handler(makeRequest({ path: "/known" }));
    assert.deepEqual(counts(metrics), { "water /known GET 200": 1 });
    assert.equal(await bodyText(response), "ab");
  });

  it("lets several services share one set of metrics", async () => {
    const { registry, metrics, clock } = setup();
    const options = { metrics, route: byPath, now: () => clock.t };
    await withMetrics(() => ({ status: 200 }), { ...options, service: "water" })(makeRequest());
    await withMetrics(() => ({ status: 200 }), { ...options, service: "sync" })(makeRequest());
    const text = renderMetrics(registry);
    for (const service of ["water", "sync"]) {
      const line = `tributary_http_requests_total{service="${service}",route="other",` +
        'method="GET",status="200"} 1\n';
      assert.ok(text.includes(line), line);
    }
  });
});

describe("createHttpMetrics()", () => {
  it("registers the request counter and duration histogram with their label names", () => {
    const { metrics } = setup();
    assert.equal(metrics.requests.name, "tributary_http_requests_total");
    assert.deepEqual(metrics.requests.labelNames, ["service", "route", "method", "status"]);
    assert.equal(metrics.duration.name, "tributary_http_request_duration_seconds");
    assert.deepEqual(metrics.duration.labelNames, ["service", "route"]);
  });

  it("takes custom duration buckets", () => {
    const metrics = createHttpMetrics(new MetricsRegistry(), { buckets: [0.1, 1, 30] });
    assert.deepEqual(metrics.duration.buckets, [0.1, 1, 30]);
  });

  it("refuses to register twice on one registry", () => {
    const { registry } = setup();
    assert.throws(() => createHttpMetrics(registry), { code: "ERR_METRICS_DUPLICATE" });
  });
});

describe("withMetrics() over a router", () => {
  it("labels each request with the pattern of the route that answered, refused or not, and others as other", async () => {
    const { metrics, clock } = setup();
    const router = createRouter([
      {
        method: "GET",
        path: "/items/:id",
        handler: (_request, params) => ({ status: params["id"] === "0" ? 404 : 200 }),
      },
      { method: "POST", path: "/items", handler: () => ({ status: 201 }) },
    ]);
    const limited = keepRoutes((request) => {
      if (request.headers["x-slow"] === "1") {
        throw new HttpError("ERR_HTTP_RATE_LIMITED", "Cannot answer now: too fast");
      }
      return router(request);
    }, router);
    const measured = withMetrics(limited, {
      metrics,
      service: "items",
      route: limited.routeOf,
      now: () => clock.t,
    });
    await callHandler(measured, makeRequest({ method: "GET", path: "/items/1" }));
    await callHandler(measured, makeRequest({ method: "GET", path: "/items/2" }));
    await callHandler(measured, makeRequest({ method: "GET", path: "/items/0" }));
    await callHandler(
      measured,
      makeRequest({ method: "GET", path: "/items/3", headers: { "x-slow": "1" } }),
    ).catch(() => {});
    await callHandler(measured, makeRequest({ method: "POST", path: "/items" }));
    await callHandler(measured, makeRequest({ method: "GET", path: "/elsewhere" })).catch(() => {});
    assert.deepEqual(counts(metrics), {
      "items /items/:id GET 200": 2,
      "items /items/:id GET 404": 1,
      "items /items/:id GET 429": 1,
      "items /items POST 201": 1,
      "items other GET 404": 1,
    });
  });
});
