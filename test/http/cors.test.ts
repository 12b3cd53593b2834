import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { type Handler, HttpError, type HttpResponse, withCors } from "../../lib/http/mod.ts";
import { callHandler, makeRequest } from "../_helpers/http.ts";

const ALLOWED = "https://app.example.org";
const OTHER = "https://evil.example.com";

const INNER: HttpResponse = { status: 200, headers: { "x-inner": "1" }, body: "ok" };

function counting(): { handler: Handler; calls: () => number } {
  let calls = 0;
  return {
    handler: () => {
      calls++;
      return INNER;
    },
    calls: () => calls,
  };
}

function preflight(origin: string, method: string): ReturnType<typeof makeRequest> {
  return makeRequest({
    method: "OPTIONS",
    headers: { origin, "access-control-request-method": method },
  });
}

function errorCode(response: HttpResponse): unknown {
  return (JSON.parse(String(response.body)) as { error: { code: unknown } }).error.code;
}

describe("withCors()", () => {
  it("answers a preflight from an allowed origin with 204 and the CORS headers", async () => {
    const inner = counting();
    const handler = withCors(inner.handler, { origins: [ALLOWED] });
    const response = await handler(preflight(ALLOWED, "GET"));
    assert.deepEqual(response, {
      status: 204,
      headers: {
        "access-control-allow-origin": ALLOWED,
        "access-control-allow-methods": "GET, HEAD",
        "access-control-allow-headers": "x-api-key, authorization, content-type",
        "access-control-max-age": "600",
        vary: "Origin",
      },
    });
    assert.equal(inner.calls(), 0);
  });

  it("uses the configured methods, headers and max age in a preflight answer", async () => {
    const handler = withCors(counting().handler, {
      origins: [ALLOWED],
      methods: ["get", "post"],
      allowHeaders: ["X-Custom"],
      maxAgeSeconds: 60,
    });
    const response = await handler(preflight(ALLOWED, "post"));
    assert.equal(response.status, 204);
    assert.equal(response.headers?.["access-control-allow-methods"], "GET, POST");
    assert.equal(response.headers?.["access-control-allow-headers"], "x-custom");
    assert.equal(response.headers?.["access-control-max-age"], "60");
  });

  it("refuses a preflight from another origin with 403 ERR_HTTP_ORIGIN_NOT_ALLOWED", async () => {
    const inner = counting();
    const response = await withCors(inner.handler, { origins: [ALLOWED] })(preflight(OTHER, "GET"));
    assert.equal(response.status, 403);
    assert.equal(errorCode(response), "ERR_HTTP_ORIGIN_NOT_ALLOWED");
    assert.equal(response.headers?.["access-control-allow-origin"], undefined);
    assert.equal(inner.calls(), 0);
  });

  it("refuses a preflight for a method that is not allowed with 403", async () => {
    const handler = withCors(counting().handler, { origins: [ALLOWED] });
    const response = await handler(preflight(ALLOWED, "DELETE"));
    assert.equal(response.status, 403);
    assert.equal(errorCode(response), "ERR_HTTP_ORIGIN_NOT_ALLOWED");
    assert.equal(response.headers?.["access-control-allow-origin"], undefined);
  });

  it("passes OPTIONS without access-control-request-method to the handler", async () => {
    const inner = counting();
    const request = makeRequest({ method: "OPTIONS", headers: { origin: ALLOWED } });
    const response = await withCors(inner.handler, { origins: [ALLOWED] })(request);
    assert.equal(inner.calls(), 1);
    assert.equal(response.status, 200);
    assert.equal(response.headers?.["access-control-allow-origin"], ALLOWED);
  });

  it("marks a response to an allowed origin with allow-origin, expose and vary", async () => {
    const request = makeRequest({ headers: { origin: ALLOWED } });
    const response = await withCors(counting().handler, { origins: [ALLOWED] })(request);
    assert.deepEqual(response, {
      status: 200,
      headers: {
        "x-inner": "1",
        "access-control-allow-origin": ALLOWED,
        "access-control-expose-headers": "link, retry-after",
        vary: "Origin",
      },
      body: "ok",
    });
  });

  it("uses the configured expose-headers", async () => {
    const handler = withCors(counting().handler, {
      origins: [ALLOWED],
      exposeHeaders: ["x-total"],
    });
    const response = await handler(makeRequest({ headers: { origin: ALLOWED } }));
    assert.equal(response.headers?.["access-control-expose-headers"], "x-total");
  });

  it("marks an error thrown by the handler for an allowed origin", async () => {
    const failing: Handler = () => {
      throw new HttpError("ERR_HTTP_RATE_LIMITED", "slow", { headers: { "retry-after": "2" } });
    };
    const handler = withCors(failing, { origins: [ALLOWED] });
    const response = await handler(makeRequest({ headers: { origin: ALLOWED } }));
    assert.equal(response.status, 429);
    assert.equal(errorCode(response), "ERR_HTTP_RATE_LIMITED");
    assert.equal(response.headers?.["retry-after"], "2");
    assert.equal(response.headers?.["access-control-allow-origin"], ALLOWED);
    assert.equal(response.headers?.["access-control-expose-headers"], "link, retry-after");
  });

  it("adds no CORS headers for another origin", async () => {
    const response = await withCors(counting().handler, { origins: [ALLOWED] })(
      makeRequest({ headers: { origin: OTHER } }),
    );
    assert.deepEqual(response, INNER);
  });

  it("turns an error for another origin into a response without CORS headers", async () => {
    const failing: Handler = () => {
      throw new HttpError("ERR_HTTP_NOT_FOUND", "gone");
    };
    const handler = withCors(failing, { origins: [ALLOWED] });
    const response = await handler(makeRequest({ headers: { origin: OTHER } }));
    assert.equal(response.status, 404);
    assert.equal(response.headers?.["access-control-allow-origin"], undefined);
  });

  it("passes a request without Origin through untouched", async () => {
    const inner = counting();
    const response = await withCors(inner.handler, { origins: [ALLOWED] })(makeRequest());
    assert.equal(response, INNER);
    assert.equal(inner.calls(), 1);
  });

  it("passes an OPTIONS request without Origin to the handler", async () => {
    const inner = counting();
    const request = makeRequest({
      method: "OPTIONS",
      headers: { "access-control-request-method": "GET" },
    });
    const response = await withCors(inner.handler, { origins: [ALLOWED] })(request);
    assert.equal(response, INNER);
  });

  it("lets errors of a request without Origin propagate", async () => {
    const failing: Handler = () => {
      throw new HttpError("ERR_HTTP_NOT_FOUND", "gone");
    };
    await assert.rejects(callHandler(withCors(failing, { origins: [ALLOWED] }), makeRequest()), {
      name: "HttpError",
      code: "ERR_HTTP_NOT_FOUND",
    });
  });
});
