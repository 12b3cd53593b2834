import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  createRouter,
  HttpError,
  keepRoutes,
  type RouteHandler,
  type RouteParams,
} from "../../lib/http/mod.ts";
import { statusOf } from "../../lib/http/error_response.ts";
import { callHandler, makeRequest } from "../_helpers/http.ts";

/** A route handler that answers with its name and the parameters it got. */
function echo(name: string): RouteHandler {
  return (_request, params) => ({ status: 200, body: JSON.stringify({ name, params }) });
}

async function dispatch(
  method: string,
  path: string,
): Promise<{ name: string; params: RouteParams }> {
  const response = await callHandler(router, makeRequest({ method, path }));
  assert.equal(typeof response.body, "string");
  return JSON.parse(response.body as string) as { name: string; params: RouteParams };
}

const router = createRouter([
  { method: "GET", path: "/", handler: echo("root") },
  { method: "GET", path: "/items", handler: echo("list") },
  { method: "POST", path: "/items", handler: echo("create") },
  { method: "GET", path: "/items/new", handler: echo("new") },
  { method: "GET", path: "/items/:id", handler: echo("item") },
  { method: "delete", path: "/items/:id", handler: echo("delete") },
  { method: "GET", path: "/items/:id/parts/:part", handler: echo("part") },
  { method: "GET", path: "/$metadata", handler: echo("metadata") },
  { method: "PUT", path: "/only-put", handler: echo("put") },
]);

describe("createRouter()", () => {
  const matches = [
    { name: "matches a literal path", method: "GET", path: "/items", route: "list", params: {} },
    { name: "matches the root path", method: "GET", path: "/", route: "root", params: {} },
    {
      name: "dispatches on the method",
      method: "POST",
      path: "/items",
      route: "create",
      params: {},
    },
    {
      name: "captures a ':param' segment",
      method: "GET",
      path: "/items/42",
      route: "item",
      params: { id: "42" },
    },
    {
      name: "captures several parameters",
      method: "GET",
      path: "/items/7/parts/wheel",
      route: "part",
      params: { id: "7", part: "wheel" },
    },
    {
      name: "percent-decodes parameters",
      method: "GET",
      path: "/items/a%20b%C3%A9",
      route: "item",
      params: { id: "a bé" },
    },
    {
      name: "keeps an encoded slash inside one parameter",
      method: "GET",
      path: "/items/a%2Fb",
      route: "item",
      params: { id: "a/b" },
    },
    {
      name: "keeps '+' in a path parameter literally",
      method: "GET",
      path: "/items/a+b",
      route: "item",
      params: { id: "a+b" },
    },
    {
      name: "keeps '+' literally next to an escape",
      method: "GET",
      path: "/items/a+b%20c",
      route: "item",
      params: { id: "a+b c" },
    },
    {
      name: "matches '%24metadata' to a '/$metadata' route",
      method: "GET",
      path: "/%24metadata",
      route: "metadata",
      params: {},
    },
    {
      name: "matches '/$metadata' literally",
      method: "GET",
      path: "/$metadata",
      route: "metadata",
      params: {},
    },
    { name: "ignores a trailing slash", method: "GET", path: "/items/", route: "list", params: {} },
    {
      name: "ignores a trailing slash after a parameter",
      method: "GET",
      path: "/items/9/",
      route: "item",
      params: { id: "9" },
    },
    { name: "tries routes in order", method: "GET", path: "/items/new", route: "new", params: {} },
    {
      name: "lets a GET route answer HEAD",
      method: "HEAD",
      path: "/items/5",
      route: "item",
      params: { id: "5" },
    },
    {
      name: "upper-cases the method of a route",
      method: "DELETE",
      path: "/items/5",
      route: "delete",
      params: { id: "5" },
    },
  ] as const;
  for (const c of matches) {
    it(c.name, async () => {
      assert.deepEqual(await dispatch(c.method, c.path), { name: c.route, params: c.params });
    });
  }

  it("ignores a trailing slash in a route's path", async () => {
    const slashed = createRouter([{ method: "GET", path: "/things/", handler: echo("things") }]);
    const response = await callHandler(slashed, makeRequest({ path: "/things" }));
    assert.equal(response.status, 200);
  });

  it("passes the request record to the handler", async () => {
    const request = makeRequest({ path: "/x" });
    let seen: unknown;
    const single = createRouter([{
      method: "GET",
      path: "/x",
      handler: (r) => {
        seen = r;
        return { status: 204 };
      },
    }]);
    await callHandler(single, request);
    assert.equal(seen, request);
  });

  const notFound = [
    { name: "answers an unknown path with ERR_HTTP_NOT_FOUND", path: "/nothing" },
    { name: "answers a path with extra segments with ERR_HTTP_NOT_FOUND", path: "/items/1/2" },
    { name: "does not treat '%2F' as a separator", path: "/items%2F1" },
  ] as const;
  for (const c of notFound) {
    it(c.name, async () => {
      await assert.rejects(callHandler(router, makeRequest({ path: c.path })), {
        name: "HttpError",
        code: "ERR_HTTP_NOT_FOUND",
      });
    });
  }

  it("maps a not-found error to status 404", async () => {
    const error = await callHandler(router, makeRequest({ path: "/nothing" }))
      .catch((e: unknown) => e);
    assert.equal(statusOf(error), 404);
  });

  it("answers a known path with another method with ERR_HTTP_METHOD_NOT_ALLOWED", async () => {
    await assert.rejects(callHandler(router, makeRequest({ method: "PATCH", path: "/items" })), {
      name: "HttpError",
      code: "ERR_HTTP_METHOD_NOT_ALLOWED",
    });
  });

  it("lists the path's methods in the allow header of a 405", async () => {
    const error = await callHandler(router, makeRequest({ method: "PATCH", path: "/items" }))
      .catch((e: unknown) => e);
    assert.equal(statusOf(error), 405);
    const allow = (error as { headers: Record<string, string> }).headers["allow"] ?? "";
    assert.deepEqual(allow.split(", ").sort(), ["GET", "HEAD", "OPTIONS", "POST"]);
  });

  it("does not let a non-GET route answer HEAD", async () => {
    const error = await callHandler(router, makeRequest({ method: "HEAD", path: "/only-put" }))
      .catch((e: unknown) => e);
    assert.equal((error as { code?: unknown }).code, "ERR_HTTP_METHOD_NOT_ALLOWED");
    const allow = (error as { headers: Record<string, string> }).headers["allow"] ?? "";
    assert.deepEqual(allow.split(", ").sort(), ["OPTIONS", "PUT"]);
  });

  it("answers OPTIONS on a known path with 204 and allow", async () => {
    const request = makeRequest({ method: "OPTIONS", path: "/items/3" });
    const response = await callHandler(router, request);
    assert.equal(response.status, 204);
    assert.equal(response.body, undefined);
    const allow = response.headers?.["allow"] ?? "";
    assert.deepEqual(allow.split(", ").sort(), ["DELETE", "GET", "HEAD", "OPTIONS"]);
  });

  it("answers OPTIONS on an unknown path with ERR_HTTP_NOT_FOUND", async () => {
    const request = makeRequest({ method: "OPTIONS", path: "/nothing" });
    await assert.rejects(callHandler(router, request), {
      code: "ERR_HTTP_NOT_FOUND",
    });
  });

  it("lets an explicit OPTIONS route answer OPTIONS", async () => {
    const custom = createRouter([
      { method: "OPTIONS", path: "/x", handler: () => ({ status: 200, body: "mine" }) },
    ]);
    const response = await callHandler(custom, makeRequest({ method: "OPTIONS", path: "/x" }));
    assert.deepEqual(response, { status: 200, body: "mine" });
  });

  it("refuses a broken escape in the path with ERR_HTTP_MALFORMED_URL", async () => {
    await assert.rejects(callHandler(router, makeRequest({ path: "/items/%zz" })), {
      name: "HttpError",
      code: "ERR_HTTP_MALFORMED_URL",
      target: "%zz",
    });
  });

  it("throws TypeError for a route path without a leading slash", () => {
    assert.throws(() => createRouter([{ method: "GET", path: "items", handler: echo("x") }]), {
      name: "TypeError",
    });
  });
});

describe("Router: routes as data", () => {
  it("lists its routes, in order, as method and path", () => {
    assert.deepEqual(router.routes.slice(0, 3), [
      { method: "GET", path: "/" },
      { method: "GET", path: "/items" },
      { method: "POST", path: "/items" },
    ]);
    assert.equal(router.routes.length, 9);
    assert.deepEqual(router.routes[5], { method: "DELETE", path: "/items/:id" });
  });

  const answered = [
    { method: "GET", path: "/items", pattern: "/items" },
    { method: "GET", path: "/items/", pattern: "/items" },
    { method: "GET", path: "/items/new", pattern: "/items/new" },
    { method: "GET", path: "/items/42", pattern: "/items/:id" },
    { method: "DELETE", path: "/items/42", pattern: "/items/:id" },
    { method: "DELETE", path: "/items/new", pattern: "/items/:id" },
    { method: "HEAD", path: "/items/7/parts/a%20b", pattern: "/items/:id/parts/:part" },
  ] as const;
  for (const c of answered) {
    it(`tells that ${c.pattern} answered ${c.method} ${c.path}`, async () => {
      const request = makeRequest({ method: c.method, path: c.path });
      await callHandler(router, request);
      assert.equal(router.routeOf(request), c.pattern);
    });
  }

  it("names the pattern whose path matches a request it did not dispatch (refused in front of it, or another method)", async () => {
    assert.equal(
      router.routeOf(makeRequest({ method: "GET", path: "/items/9/parts/x" })),
      "/items/:id/parts/:part",
    );
    const wrongMethod = makeRequest({ method: "PATCH", path: "/only-put" });
    await assert.rejects(callHandler(router, wrongMethod));
    assert.equal(router.routeOf(wrongMethod), "/only-put");
  });

  it("names no pattern for a path no route has", async () => {
    const request = makeRequest({ method: "GET", path: "/nowhere/at/all" });
    await assert.rejects(callHandler(router, request));
    assert.equal(router.routeOf(request), undefined);
  });

  it("reads the route its dispatch noted, and names its own route when a router inside it dispatched", async () => {
    const inner = createRouter([
      { method: "GET", path: "/api/:name", handler: () => ({ status: 200 }) },
    ]);
    const outer = createRouter([
      { method: "GET", path: "/api/:name", handler: (request) => inner(request) },
      { method: "GET", path: "/api/:name/:more", handler: () => ({ status: 200 }) },
    ]);
    const request = makeRequest({ method: "GET", path: "/api/x" });
    await callHandler(outer, request);
    // Both dispatched it, the inner router last: each names its own route.
    assert.equal(outer.routeOf(request), "/api/:name");
    assert.equal(inner.routeOf(request), "/api/:name");
    const deeper = makeRequest({ method: "GET", path: "/api/x/y" });
    await callHandler(outer, deeper);
    assert.equal(outer.routeOf(deeper), "/api/:name/:more");
    assert.equal(inner.routeOf(deeper), undefined, "the inner router has no such route");
  });

  it("keeps its routes when wrapped with keepRoutes", async () => {
    const refusing = keepRoutes((request) => {
      if (request.headers["x-block"] === "1") {
        throw new HttpError("ERR_HTTP_RATE_LIMITED", "Cannot answer now: too fast");
      }
      return router(request);
    }, router);
    assert.equal(refusing.routes, router.routes);
    const request = makeRequest({ method: "GET", path: "/items/3", headers: { "x-block": "1" } });
    await assert.rejects(callHandler(refusing, request), { code: "ERR_HTTP_RATE_LIMITED" });
    assert.equal(refusing.routeOf(request), "/items/:id");
    assert.equal(
      (await callHandler(refusing, makeRequest({ method: "GET", path: "/items/3" }))).status,
      200,
    );
  });
});
