import assert from "node:assert/strict";
import { before, describe, it } from "node:test";
import type { WaterStore } from "../../lib/water/mod.ts";
import { call, demoStore, waterHandler } from "../_helpers/water.ts";

const BASE = "/v1/odata/v4";
let store: WaterStore;

before(async () => {
  store = (await demoStore()).store;
});

function codeOf(text: string): unknown {
  return (JSON.parse(text) as { error: { code: string } }).error.code;
}

describe("water service: authentication", () => {
  it("answers 401 without a key", async () => {
    const result = await call(waterHandler(store), `${BASE}/Locations`, { headers: {} });
    assert.equal(result.status, 401);
    assert.equal(codeOf(result.text), "ERR_HTTP_UNAUTHORIZED");
  });

  it("answers 403 for an unknown key", async () => {
    const result = await call(waterHandler(store), `${BASE}/Locations`, {
      headers: { "x-api-key": "nope" },
    });
    assert.equal(result.status, 403);
  });

  it("lets a browser on an allowed origin GET without a key, with CORS headers", async () => {
    const handler = waterHandler(store, { corsOrigins: ["https://app.example.org"] });
    const allowed = await call(handler, `${BASE}/Locations?$top=1`, {
      headers: { origin: "https://app.example.org" },
    });
    assert.equal(allowed.status, 200);
    assert.equal(allowed.headers["access-control-allow-origin"], "https://app.example.org");
    assert.match(allowed.headers["access-control-expose-headers"]!, /link/);
    const other = await call(handler, `${BASE}/Locations?$top=1`, {
      headers: { origin: "https://evil.example.org" },
    });
    assert.equal(other.status, 401);
    const preflight = await call(handler, `${BASE}/Locations`, {
      method: "OPTIONS",
      headers: { origin: "https://app.example.org", "access-control-request-method": "GET" },
    });
    assert.equal(preflight.status, 204);
  });
});

describe("water service: rate limits", () => {
  it("answers 429 with Retry-After above 2 requests per second once the burst is spent, and accepts again later", async () => {
    let t = 0;
    const handler = waterHandler(store, {
      ratePerSecond: 2,
      burst: 2,
      maxConcurrent: 1,
      now: () => t,
    });
    assert.equal((await call(handler, `${BASE}/Locations?$top=1`)).status, 200);
    assert.equal((await call(handler, `${BASE}/Locations?$top=1`)).status, 200);
    const refused = await call(handler, `${BASE}/Locations?$top=1`);
    assert.equal(refused.status, 429);
    assert.equal(refused.headers["retry-after"], "1");
    assert.equal(codeOf(refused.text), "ERR_HTTP_RATE_LIMITED");
    t += 500;
    assert.equal((await call(handler, `${BASE}/Locations?$top=1`)).status, 200);
  });

  it("lets the default burst of 250 through at once, then 2 a second, telling the quota on every answer", async () => {
    let t = 0;
    const handler = waterHandler(store, { ratePerSecond: 2, maxConcurrent: 1, now: () => t });
    for (let i = 0; i < 250; i++) {
      const answer = await call(handler, `${BASE}/Locations?$top=1`);
      assert.equal(answer.status, 200, `request ${i + 1}`);
      assert.equal(answer.headers["ratelimit-remaining"], String(249 - i));
    }
    const refused = await call(handler, `${BASE}/Locations?$top=1`);
    assert.equal(refused.status, 429);
    assert.deepEqual(
      [
        refused.headers["ratelimit-policy"],
        refused.headers["ratelimit-limit"],
        refused.headers["ratelimit-remaining"],
        refused.headers["ratelimit-reset"],
      ],
      ["250;w=125", "250", "0", "125"],
    );
    const unknown = await call(handler, `${BASE}/Nowhere`);
    assert.equal(unknown.status, 429, "a refusal comes before the handler");
    t += 500;
    const bad = await call(handler, `${BASE}/Locations?$filter=Nope eq 1`);
    assert.equal(bad.status, 400);
    assert.equal(bad.headers["ratelimit-remaining"], "0", "an error answer tells the quota too");
  });

  it("lets a client that keeps to 2 per second through", async () => {
    let t = 0;
    const handler = waterHandler(store, { ratePerSecond: 2, maxConcurrent: 1, now: () => t });
    for (let i = 0; i < 20; i++) {
      assert.equal((await call(handler, `${BASE}/Locations?$top=1`)).status, 200, `request ${i}`);
      t += 500;
    }
  });

  it("answers 429 to a second request while the first is still streaming", async () => {
    const handler = waterHandler(store, { ratePerSecond: 0, maxConcurrent: 1 });
    const request = (target: string) => ({
      method: "GET",
      path: target.split("?")[0]!,
      query: target.split("?")[1] ?? "",
      headers: { "x-api-key": "test-key" },
      remoteAddress: "127.0.0.1",
      origin: "http://localhost:8000",
      signal: new AbortController().signal,
      body: { bytes: () => Promise.resolve(new Uint8Array(0)) },
    });
    const streaming = await handler(request(`${BASE}/Observations?$format=csv`));
    const body = streaming.body as AsyncIterable<string>;
    const iterator = body[Symbol.asyncIterator]();
    await iterator.next();
    await assert.rejects(async () => handler(request(`${BASE}/Locations?$top=1`)), {
      code: "ERR_HTTP_RATE_LIMITED",
    });
    await iterator.return?.();
    assert.equal((await handler(request(`${BASE}/Locations?$top=1`))).status, 200);
  });
});

describe("water service: deadlines and sizes", () => {
  it("answers 408 when a query passes QUERY_TIMEOUT_MS", async () => {
    // Every clock reading is 100 ms later, so the first checkpoint is past the deadline.
    let t = 0;
    const handler = waterHandler(store, {
      queryTimeoutMs: 50,
      now: () => (t += 100),
    });
    const result = await call(
      handler,
      `${BASE}/Observations?$count=true&$filter=${encodeURIComponent("ResultValue gt 1000000")}`,
    );
    assert.equal(result.status, 408);
    assert.equal(codeOf(result.text), "ERR_HTTP_TIMEOUT");
  });

  it("answers 408 before a CSV stream starts when the search for its first rows passes the deadline", async () => {
    let t = 0;
    const handler = waterHandler(store, { queryTimeoutMs: 50, now: () => (t += 10) });
    const result = await call(
      handler,
      `${BASE}/Observations?$format=csv&$filter=${encodeURIComponent("ResultValue gt 1000000")}`,
    );
    assert.equal(result.status, 408);
  });

  it("answers 413 above MAX_RESPONSE_BYTES", async () => {
    const handler = waterHandler(store, { maxResponseBytes: 4096 });
    const result = await call(handler, `${BASE}/Records?$top=100`);
    assert.equal(result.status, 413);
    assert.equal(codeOf(result.text), "ERR_WATER_RESPONSE_TOO_LARGE");
    assert.equal((await call(handler, `${BASE}/Records?$top=1&$select=Id`)).status, 200);
  });

  for (const top of ["0", "10001", "-1", "1.5", "ten"]) {
    it(`answers 400 for $top=${top}`, async () => {
      const result = await call(waterHandler(store), `${BASE}/Observations?$top=${top}`);
      assert.equal(result.status, 400);
      assert.equal((JSON.parse(result.text) as { error: { target: string } }).error.target, "$top");
    });
  }

  it("accepts $top=10000", async () => {
    const result = await call(waterHandler(store), `${BASE}/Observations?$top=10000&$select=Id`);
    assert.equal((JSON.parse(result.text) as { value: unknown[] }).value.length, 10000);
  });
});

describe("water service: bad input", () => {
  const cases = [
    {
      name: "a filter syntax error, with its position",
      target: "$filter=Name eq 'x' and",
      status: 400,
      code: "ERR_ODATA_SYNTAX",
      on: "$filter",
    },
    {
      name: "an unknown filter field",
      target: "$filter=Foo eq 1",
      status: 400,
      code: "ERR_ODATA_UNKNOWN_FIELD",
      on: "Foo",
    },
    {
      name: "a type mismatch",
      target: "$filter=ResultValue eq 'high'",
      status: 400,
      code: "ERR_ODATA_TYPE",
      on: "ResultValue",
    },
    {
      name: "an unknown $select field",
      target: "$select=Id,Colour",
      status: 400,
      code: "ERR_ODATA_UNKNOWN_FIELD",
      on: "Colour",
    },
    {
      name: "a filter-only field in $select",
      target: "$select=RegionId",
      status: 400,
      code: "ERR_ODATA_UNKNOWN_FIELD",
      on: "RegionId",
    },
    {
      name: "an empty $select entry",
      target: "$select=Id,,DOI",
      status: 400,
      code: "ERR_ODATA_QUERY_OPTION",
      on: "$select",
    },
    {
      name: "a malformed $skiptoken",
      target: "$skiptoken=42",
      status: 400,
      code: "ERR_ODATA_QUERY_OPTION",
      on: "$skiptoken",
    },
    {
      name: "a non-integer skip id",
      target: "$skiptoken=Id:abc",
      status: 400,
      code: "ERR_ODATA_QUERY_OPTION",
      on: "$skiptoken",
    },
    {
      name: "a malformed $count",
      target: "$count=yes",
      status: 400,
      code: "ERR_ODATA_QUERY_OPTION",
      on: "$count",
    },
    {
      name: "a malformed $format",
      target: "$format=xml",
      status: 400,
      code: "ERR_ODATA_QUERY_OPTION",
      on: "$format",
    },
    {
      name: "an unknown option",
      target: "$expand=Location",
      status: 400,
      code: "ERR_ODATA_QUERY_OPTION",
      on: "$expand",
    },
    {
      name: "a repeated option",
      target: "$top=1&$top=2",
      status: 400,
      code: "ERR_ODATA_QUERY_OPTION",
      on: "$top",
    },
    {
      name: "$skip past its bound",
      target: "$skip=1000001",
      status: 400,
      code: "ERR_ODATA_QUERY_OPTION",
      on: "$skip",
    },
    {
      name: "a malformed $orderby",
      target: "$orderby=ResultValue sideways",
      status: 400,
      code: "ERR_ODATA_QUERY_OPTION",
      on: "$orderby",
    },
    {
      name: "$orderby on a field the collection does not show",
      target: "$orderby=Nope",
      status: 400,
      code: "ERR_WATER_INVALID_ORDER",
      on: "$orderby",
    },
    {
      name: "a broken percent escape",
      target: "$filter=Id%zz",
      status: 400,
      code: "ERR_HTTP_MALFORMED_URL",
      on: "$filter",
    },
    {
      name: "a deeply nested filter",
      target: `$filter=${"(".repeat(200)}Id eq 1${")".repeat(200)}`,
      status: 400,
      code: "ERR_ODATA_SYNTAX",
      on: "$filter",
    },
  ] as const;
  for (const c of cases) {
    it(`answers ${c.status} ${c.code} for ${c.name}`, async () => {
      const result = await call(waterHandler(store), `${BASE}/Observations?${c.target}`);
      assert.equal(result.status, c.status);
      const body = JSON.parse(result.text) as {
        error: { code: string; target?: string; message: string };
        errors: unknown[];
      };
      assert.equal(body.error.code, c.code);
      assert.equal(body.error.target, c.on);
      assert.ok(body.error.message.length > 10);
      assert.deepEqual(body.errors, [body.error]);
    });
  }

  it("answers 404 for an unknown collection", async () => {
    const result = await call(waterHandler(store), `${BASE}/Samples`);
    assert.equal(result.status, 404);
    assert.equal(
      (JSON.parse(result.text) as { error: { target: string } }).error.target,
      "Samples",
    );
  });

  it("answers 405 with Allow for POST", async () => {
    const result = await call(waterHandler(store), `${BASE}/Observations`, {
      method: "POST",
      headers: { "x-api-key": "test-key" },
    });
    assert.equal(result.status, 405);
    assert.match(result.headers["allow"]!, /GET/);
  });

  it("answers an empty page for a skip token past the end", async () => {
    const result = await call(waterHandler(store), `${BASE}/Observations?$skiptoken=Id:999999999`);
    assert.deepEqual(JSON.parse(result.text), {
      "@odata.context": "http://localhost:8000/v1/odata/v4/$metadata#Observations",
      value: [],
    });
  });
});
