// What the shared request path allocates per request where it matters: the
// key check, the route lookup, the rate limit and the metrics, measured by
// bytesPerCall (test/_helpers/allocation.ts): a per-request record or closure
// coming back shows as tens of bytes a call.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  authenticateApiKey,
  createRouter,
  type HttpRequest,
  type HttpResponse,
  indexApiKeys,
  parseApiKey,
  RateLimiter,
} from "../../lib/http/mod.ts";
import { createHttpMetrics, MetricsRegistry, withMetrics } from "../../lib/metrics/mod.ts";
import { bytesPerCall, COVERED } from "../_helpers/allocation.ts";

const KEY = "hot-path-key-0123456789";
const request = {
  method: "GET",
  path: "/v1/odata/v4/Observations",
  query: "",
  headers: { "x-api-key": KEY, host: "127.0.0.1" },
  remoteAddress: "127.0.0.1",
  origin: "http://127.0.0.1",
} as unknown as HttpRequest;
const fixed: HttpResponse = { status: 200, headers: { "content-type": "application/json" } };

describe("the shared request path's allocations", () => {
  it("measures: a record a call shows as tens of bytes a call", () => {
    // The check of the check: what the others must stay below is visible.
    let kept: unknown;
    assert.ok(bytesPerCall(() => (kept = { a: kept === undefined ? 1 : 2, b: 3 })) >= 24);
  });

  it("checks a valid API key without allocating (one identity record per key)", () => {
    const keys = indexApiKeys([parseApiKey("bench", KEY)]);
    const options = { keys };
    const first = authenticateApiKey(request, options);
    assert.equal(authenticateApiKey(request, options), first, "the same record each time");
    const bytes = bytesPerCall(() => authenticateApiKey(request, options));
    assert.ok(bytes < 8);
  });

  it("finds a literal route without allocating", () => {
    const router = createRouter([
      { method: "GET", path: "/v1/odata/v4/Locations", handler: () => fixed },
      { method: "GET", path: "/v1/odata/v4/Observations", handler: () => fixed },
    ]);
    assert.equal(router.routeOf(request), "/v1/odata/v4/Observations");
    assert.ok(bytesPerCall(() => router.routeOf(request)) < 8);
    assert.ok(bytesPerCall(() => router(request)) < 8);
  });

  it("grants a rate-limited request with one small record at most (no quota record, no closure)", () => {
    const limiter = new RateLimiter({
      ratePerSecond: 1e12,
      burst: 1e9,
      maxConcurrent: 10,
      now: () => 0,
    });
    const bytes = bytesPerCall(() => {
      const decision = limiter.acquire("key:bench");
      if (decision.ok) decision.release();
    });
    assert.ok(bytes <= 96, `${bytes} bytes a request`);
  });

  it("counts and times a request answered at once without a promise or a label lookup", () => {
    const measured = withMetrics(() => fixed, {
      metrics: createHttpMetrics(new MetricsRegistry()),
      service: "water",
      route: () => "/v1/odata/v4/Observations",
      now: () => 0,
    });
    assert.equal(measured(request), fixed, "the answer itself, not a promise of it");
    const bytes = bytesPerCall(() => measured(request));
    // Under coverage (c8 sets NODE_V8_COVERAGE) V8 leaves the clock's number boxed: one small record.
    assert.ok(bytes < (COVERED ? 64 : 8), `${bytes} bytes a request`);
  });
});
