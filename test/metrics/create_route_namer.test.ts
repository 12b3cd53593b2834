import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createRouteNamer } from "../../lib/metrics/mod.ts";
import { makeRequest } from "../_helpers/http.ts";

const patterns = [
  "/",
  "/webhook",
  "/api/v2/sync/user",
  "/api/v2/sync/user/since/:revision",
  "/api/v2/sync/user/ticket/:uuid",
  "/oauth2/*",
  "/tenants/:id/endpoints/:endpoint",
];

describe("createRouteNamer()", () => {
  const cases = [
    { name: "names the root", path: "/", expected: "/" },
    { name: "names a literal path", path: "/webhook", expected: "/webhook" },
    { name: "ignores a trailing slash", path: "/webhook/", expected: "/webhook" },
    {
      name: "names a path with a parameter by its pattern",
      path: "/api/v2/sync/user/since/42",
      expected: "/api/v2/sync/user/since/:revision",
    },
    {
      name: "names a path with two parameters",
      path: "/tenants/t1/endpoints/e9",
      expected: "/tenants/:id/endpoints/:endpoint",
    },
    {
      name: "names any deeper path under a * pattern",
      path: "/oauth2/token",
      expected: "/oauth2/*",
    },
    {
      name: "names a path two levels under a * pattern",
      path: "/oauth2/a/b",
      expected: "/oauth2/*",
    },
    { name: "does not match the * pattern's own prefix", path: "/oauth2", expected: "other" },
    {
      name: "does not let a parameter match an empty segment",
      path: "/api/v2/sync/user/since//",
      expected: "other",
    },
    {
      name: "names a path with too many segments as other",
      path: "/webhook/extra",
      expected: "other",
    },
    { name: "names an unknown path as other", path: "/admin/secret/123", expected: "other" },
  ] as const;
  const route = createRouteNamer(patterns);
  for (const c of cases) {
    it(c.name, () => assert.equal(route(makeRequest({ path: c.path })), c.expected));
  }

  it("uses the fallback given", () => {
    const named = createRouteNamer(["/a"], { fallback: "unmatched" });
    assert.equal(named(makeRequest({ path: "/b" })), "unmatched");
  });

  it("lets the first matching pattern win", () => {
    const named = createRouteNamer(["/items/:id", "/items/new", "/items/*"]);
    assert.equal(named(makeRequest({ path: "/items/new" })), "/items/:id");
    assert.equal(named(makeRequest({ path: "/items/new/x" })), "/items/*");
  });

  it("lets a literal pattern listed first win over a parameter", () => {
    const named = createRouteNamer(["/items/new", "/items/:id"]);
    assert.equal(named(makeRequest({ path: "/items/new" })), "/items/new");
    assert.equal(named(makeRequest({ path: "/items/7" })), "/items/:id");
  });

  it("refuses a pattern that does not start with a slash", () => {
    assert.throws(() => createRouteNamer(["webhook"]), TypeError);
  });
});
