import assert from "node:assert/strict";
import { before, describe, it } from "node:test";
import type { Handler } from "../../lib/http/mod.ts";
// Each official DataStream client builds its query string its own way
// (reference/datastream.md §2); test/_helpers/datastream_clients.ts has them.
import { encodeJs, encodePython, encodeR, encodeShell } from "../_helpers/datastream_clients.ts";
import { call, demoStore, waterHandler } from "../_helpers/water.ts";

const BASE = "/v1/odata/v4";
let handler: Handler;

before(async () => {
  handler = waterHandler((await demoStore()).store);
});

async function body(collection: string, query: string): Promise<string> {
  const result = await call(handler, `${BASE}/${collection}?${query}`, {
    headers: {
      "x-api-key": "test-key",
      accept: "application/vnd.api+json",
      "accept-encoding": "br",
    },
  });
  assert.equal(result.status, 200, `${query}: ${result.text.slice(0, 300)}`);
  return result.text;
}

function withoutLinks(text: string): unknown {
  const parsed = JSON.parse(text) as Record<string, unknown>;
  delete parsed["@odata.nextLink"];
  return parsed;
}

const FILTER =
  "CharacteristicName in ('Temperature, water', 'Dissolved oxygen (DO)') and ActivityStartYear gte '2016'";

describe("requests as the official clients encode them", () => {
  it("answers the JS client's %20/%24/%27 encoding like the plain form", async () => {
    const qs = { $top: 50, $select: "Id,CharacteristicName,ResultValue", $filter: FILTER };
    const encoded = encodeJs(qs);
    assert.match(encoded, /%24filter=.*%20in%20%28%27Temperature%2C%20water%27/);
    assert.deepEqual(
      JSON.parse(await body("Observations", encoded)),
      JSON.parse(
        await body(
          "Observations",
          `$top=50&$select=Id,CharacteristicName,ResultValue&$filter=${
            FILTER.replaceAll(" ", "%20")
          }`,
        ),
      ),
    );
  });

  it("answers the Python client's + for spaces", async () => {
    const qs = { $top: 50, $select: "Id,CharacteristicName,ResultValue", $filter: FILTER };
    const encoded = encodePython(qs);
    assert.match(encoded, /CharacteristicName\+in\+%28%27Temperature%2C\+water%27/);
    assert.deepEqual(
      JSON.parse(await body("Observations", encoded)),
      JSON.parse(await body("Observations", encodeJs(qs))),
    );
  });

  it("answers the R client's spaces after commas in $select and quoted LocationId", async () => {
    const r = encodeR({
      $top: 50,
      $select: "Id, CharacteristicName, ResultValue",
      $filter: `LocationId eq '5' and ${FILTER}`,
    });
    const js = encodeJs({
      $top: 50,
      $select: "Id,CharacteristicName,ResultValue",
      $filter: `LocationId eq 5 and ${FILTER}`,
    });
    assert.match(r, /%24select=Id%2C%20CharacteristicName/);
    assert.deepEqual(
      withoutLinks(await body("Observations", r)),
      withoutLinks(await body("Observations", js)),
    );
  });

  it("answers the shell client's full percent-encoding", async () => {
    const qs = { $top: 50, $select: "Id,CharacteristicName,ResultValue", $filter: FILTER };
    const encoded = encodeShell(qs);
    assert.match(encoded, /^%24top=50&%24select=Id%2CCharacteristicName/);
    assert.deepEqual(
      JSON.parse(await body("Observations", encoded)),
      JSON.parse(await body("Observations", encodeJs(qs))),
    );
  });

  it("answers each client's metadata request (top 100) with the same body", async () => {
    const qs = { $top: 100, $filter: "CreateTimestamp gt '2019-03-23'" };
    const bodies = await Promise.all(
      [encodeJs, encodePython, encodeR, encodeShell].map((encode) => body("Metadata", encode(qs))),
    );
    for (const other of bodies.slice(1)) assert.equal(other, bodies[0]);
  });

  it("follows a next link the same way whatever the first request's encoding", async () => {
    const qs = { $top: 20, $select: "Id", $filter: FILTER };
    const links = await Promise.all(
      [encodeJs, encodePython, encodeR, encodeShell].map(async (encode) =>
        (JSON.parse(await body("Observations", encode(qs))) as { "@odata.nextLink": string })[
          "@odata.nextLink"
        ]
      ),
    );
    for (const link of links) assert.equal(link, links[0]);
    const next = new URL(links[0]!);
    assert.ok(JSON.parse(await body("Observations", next.search.slice(1))).value.length > 0);
  });
});
