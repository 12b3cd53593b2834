import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { type Handler, mountHandlers } from "../../lib/http/mod.ts";
import { statusOf } from "../../lib/http/error_response.ts";
import { callHandler, makeRequest } from "../_helpers/http.ts";

function named(name: string): Handler {
  return () => ({ status: 200, body: name });
}

describe("mountHandlers()", () => {
  const handler = mountHandlers([
    { prefix: "/v1", handler: named("v1") },
    { prefix: "/v1/odata/v4", handler: named("odata") },
    { prefix: "/v1/odata", handler: named("odata-root") },
  ]);

  const cases = [
    {
      name: "lets the longest matching prefix win",
      path: "/v1/odata/v4/Records",
      expected: "odata",
    },
    { name: "matches a path equal to the prefix", path: "/v1/odata/v4", expected: "odata" },
    { name: "matches the prefix followed by a slash", path: "/v1/odata/v4/", expected: "odata" },
    {
      name: "does not match a segment that merely starts with the prefix",
      path: "/v1/odata/v4x",
      expected: "odata-root",
    },
    { name: "falls back to a shorter prefix", path: "/v1/other", expected: "v1" },
  ] as const;
  for (const c of cases) {
    it(c.name, async () => {
      const response = await callHandler(handler, makeRequest({ path: c.path }));
      assert.equal(response.body, c.expected);
    });
  }

  it("does not match '/v1/odata/v4x' to '/v1/odata/v4' when nothing else matches", async () => {
    const only = mountHandlers([{ prefix: "/v1/odata/v4", handler: named("odata") }]);
    await assert.rejects(callHandler(only, makeRequest({ path: "/v1/odata/v4x" })), {
      name: "HttpError",
      code: "ERR_HTTP_NOT_FOUND",
    });
  });

  it("answers a path under no prefix with ERR_HTTP_NOT_FOUND (404)", async () => {
    let caught: unknown;
    try {
      await callHandler(handler, makeRequest({ path: "/v2/items" }));
    } catch (error) {
      caught = error;
    }
    assert.equal((caught as { code?: unknown } | undefined)?.code, "ERR_HTTP_NOT_FOUND");
    assert.equal(statusOf(caught), 404);
  });

  it("lets the prefix '/' match every path", async () => {
    const catchAll = mountHandlers([
      { prefix: "/", handler: named("root") },
      { prefix: "/api", handler: named("api") },
    ]);
    const response = await callHandler(catchAll, makeRequest({ path: "/anything/else" }));
    assert.equal(response.body, "root");
    assert.equal((await callHandler(catchAll, makeRequest({ path: "/api/x" }))).body, "api");
  });

  it("passes the request on unchanged", async () => {
    const request = makeRequest({ path: "/v1/x" });
    let seen: unknown;
    const recording: Handler = (r) => {
      seen = r;
      return { status: 204 };
    };
    const mounted = mountHandlers([{ prefix: "/v1", handler: recording }]);
    await callHandler(mounted, request);
    assert.equal(seen, request);
  });
});
