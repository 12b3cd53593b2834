import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { validate } from "@readme/openapi-parser";
import {
  createRouter,
  ERROR_STATUS,
  errorStatuses,
  type Route,
  type RouteDoc,
} from "../../lib/http/mod.ts";
import { errorResponses } from "../../lib/http/error_responses.ts";
import { jsonResponse } from "../../lib/http/json_response.ts";
import { openApiDocument, openApiPath } from "../../lib/http/openapi_document.ts";
import { schemaRef } from "../../lib/http/route_doc.ts";
import { WATER_ERROR_STATUS } from "../../lib/water/mod.ts";

const ok = () => jsonResponse(200, {});
const itemDoc: RouteDoc = {
  operationId: "getItem",
  summary: "An item",
  parameters: [{
    name: "id",
    in: "path",
    description: "Its id",
    schema: { type: "string" },
    example: "a1",
  }],
  responses: {
    "200": {
      description: "The item",
      content: { "application/json": { schema: schemaRef("Item") } },
      links: { self: { operationId: "getItem", parameters: { id: "$response.body#/id" } } },
    },
    ...errorResponses(["ERR_HTTP_UNAUTHORIZED", "ERR_HTTP_NOT_FOUND"]),
  },
  security: [{ apiKey: [] }],
  schemas: { Item: { type: "object", properties: { id: { type: "string" } } } },
};
const listDoc: RouteDoc = {
  operationId: "listItems",
  summary: "Items",
  responses: { "200": { description: "The items" } },
  security: [],
};
const SCHEMES = {
  apiKey: { type: "apiKey", in: "header", name: "x-api-key" },
  unused: { type: "http", scheme: "basic" },
} as const;

function documentOf(routes: readonly Route[]) {
  return openApiDocument({
    info: { title: "Items", version: "1.0.0" },
    servers: [{ url: "http://127.0.0.1:8000" }],
    services: [{ name: "items", description: "The items", routes: createRouter(routes).routes }],
    securitySchemes: SCHEMES,
  });
}

describe("openApiDocument()", () => {
  it("writes each route as an operation of its templated path, valid OpenAPI 3.1", async () => {
    const document = documentOf([
      { method: "GET", path: "/items", handler: ok, doc: listDoc },
      { method: "GET", path: "/items/:id", handler: ok, doc: itemDoc },
    ]);
    const paths = document["paths"] as Record<
      string,
      Record<string, { operationId: string; tags: string[]; parameters?: { required: boolean }[] }>
    >;
    assert.deepEqual(Object.keys(paths), ["/items", "/items/{id}"]);
    assert.equal(paths["/items/{id}"]!["get"]!.operationId, "getItem");
    assert.deepEqual(paths["/items/{id}"]!["get"]!.tags, ["items"]);
    assert.equal(paths["/items/{id}"]!["get"]!.parameters![0]!.required, true);
    assert.deepEqual(document["tags"], [{ name: "items", description: "The items" }]);
    assert.deepEqual(await validate(structuredClone(document) as never), {
      valid: true,
      warnings: [],
      specification: "OpenAPI",
    });
  });

  it("writes only the security schemes some route names, and the shared error body once used", () => {
    const components = documentOf([{
      method: "GET",
      path: "/items/:id",
      handler: ok,
      doc: itemDoc,
    }])["components"] as {
      securitySchemes: Record<string, unknown>;
      schemas: Record<string, unknown>;
    };
    assert.deepEqual(Object.keys(components.securitySchemes), ["apiKey"]);
    assert.deepEqual(Object.keys(components.schemas).sort(), ["Error", "Item"]);
  });

  const refusals = [
    {
      name: "a route without a doc",
      routes: [{ method: "GET", path: "/items", handler: ok }],
      message: /GET \/items: the route has no doc/,
    },
    {
      name: "an operation id used twice",
      routes: [{ method: "GET", path: "/items", handler: ok, doc: listDoc }, {
        method: "POST",
        path: "/items",
        handler: ok,
        doc: listDoc,
      }],
      message: /operation id "listItems"/,
    },
    {
      name: "a path parameter without its doc",
      routes: [{ method: "GET", path: "/items/:id", handler: ok, doc: listDoc }],
      message: /path parameter "id" has no doc/,
    },
    {
      name: "a path doc without its parameter",
      routes: [{ method: "GET", path: "/items", handler: ok, doc: itemDoc }],
      message: /the path has no parameter "id"/,
    },
    {
      name: "a security scheme that does not exist",
      routes: [{
        method: "GET",
        path: "/items",
        handler: ok,
        doc: { ...listDoc, security: [{ oauth2: [] }] },
      }],
      message: /no security scheme is named "oauth2"/,
    },
    {
      name: "a link to an operation that does not exist",
      routes: [{
        method: "GET",
        path: "/items",
        handler: ok,
        doc: {
          ...listDoc,
          responses: {
            "200": {
              description: "Items",
              links: { next: { operationId: "nowhere", parameters: {} } },
            },
          },
        },
      }],
      message: /its link names no operation "nowhere"/,
    },
    {
      name: "a shared schema defined twice differently",
      routes: [
        { method: "GET", path: "/items/:id", handler: ok, doc: itemDoc },
        {
          method: "GET",
          path: "/items",
          handler: ok,
          doc: { ...listDoc, schemas: { Item: { type: "string" } } },
        },
      ],
      message: /schema "Item" is defined twice, differently/,
    },
  ] as const;
  for (const c of refusals) {
    it(`refuses ${c.name}`, () =>
      assert.throws(() => documentOf(c.routes), { name: "TypeError", message: c.message }));
  }
});

describe("errorResponses()", () => {
  it("gives one response per status of the error table, its codes as the values code may take", () => {
    // A module's table joined to lib/http's, as a module documents its routes.
    const responses = errorResponses([
      "ERR_ODATA_SYNTAX",
      "ERR_HTTP_INVALID_JSON",
      "ERR_HTTP_RATE_LIMITED",
    ], errorStatuses(WATER_ERROR_STATUS));
    assert.deepEqual(Object.keys(responses), [
      String(WATER_ERROR_STATUS.ERR_ODATA_SYNTAX),
      String(ERROR_STATUS.ERR_HTTP_RATE_LIMITED),
    ]);
    const schema = responses["400"]!.content!["application/json"]!.schema as {
      properties: { error: { properties: { code: { enum: string[] } } } };
    };
    assert.deepEqual(schema.properties.error.properties.code.enum, [
      "ERR_ODATA_SYNTAX",
      "ERR_HTTP_INVALID_JSON",
    ]);
    assert.ok(Object.hasOwn(responses["429"]!.headers!, "Retry-After"));
  });

  it("refuses a code the table answers 500, which never answers a request", () => {
    assert.throws(() => errorResponses(["ERR_CONFIG_INVALID"]), {
      name: "TypeError",
      message: /ERR_CONFIG_INVALID/,
    });
  });
});

describe("openApiPath()", () => {
  it("templates the router's :name segments", () => {
    assert.equal(
      openApiPath("/webhook/dead-letters/:job/replay"),
      "/webhook/dead-letters/{job}/replay",
    );
    assert.equal(openApiPath("/v1/odata/v4/$metadata"), "/v1/odata/v4/$metadata");
  });
});
