// @odata/client, a generic OData v4 client nobody here wrote, against the
// water API over HTTP on loopback: an entity by key, an order, $skip and
// paging with $skip and $top, for each collection.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { OData } from "@odata/client";
import { type App, createApp, readConfig } from "../../lib/app/mod.ts";

const KEY = "tributary-demo-key";
let app: App;
let url: string;

before(async () => {
  app = createApp(
    readConfig({
      SERVICES: "water",
      STATE_DIR: "",
      RATE_LIMIT_PER_SECOND: "0",
      RATE_LIMIT_CONCURRENCY: "0",
    }),
    { log: { info: () => {}, error: () => {} } },
  );
  await app.start();
  url = (await app.listen({ port: 0, host: "127.0.0.1" })).url;
});

after(() => app.close());

type Row = Record<string, unknown>;

/** Our own answer for a query, to compare with what the client reads. */
async function direct(path: string): Promise<Row[]> {
  const response = await fetch(`${url}/v1/odata/v4/${path}`, { headers: { "x-api-key": KEY } });
  assert.equal(response.status, 200, path);
  return ((await response.json()) as { value: Row[] }).value;
}

describe("@odata/client", () => {
  const client = () =>
    OData.New4({ serviceEndpoint: `${url}/v1/odata/v4/`, commonHeaders: { "x-api-key": KEY } });

  for (
    const [collection, field] of [["Locations", "Name"], ["Observations", "ResultValue"], [
      "Records",
      "CharacteristicName",
    ], ["Metadata", "DatasetName"]] as const
  ) {
    it(`reads ${collection} by key, ordered by ${field}, skipped and paged`, async () => {
      const set = client().getEntitySet<Row>(collection);
      const firsts = await set.query(set.newParam().top(3));
      assert.equal(firsts.length, 3);
      const key = firsts[2]!["Id"] as string | number;
      const entity = await set.retrieve(key);
      const { "@odata.context": _context, ...fields } = entity as Row;
      assert.deepEqual(fields, firsts[2], `${collection}(${key})`);
      const ordered = await set.query(set.newParam().orderby(field, "desc").top(20));
      assert.deepEqual(
        ordered,
        await direct(`${collection}?$orderby=${encodeURIComponent(`${field} desc`)}&$top=20`),
      );
      assert.notDeepEqual(
        ordered.map((row) => row["Id"]),
        (await direct(`${collection}?$top=20`)).map((row) => row["Id"]),
        `${collection}: the order was asked for, not the default`,
      );
      // Paging with $skip and $top, as the client does: each row once, in order.
      const pages: Row[] = [];
      for (let skip = 0; skip < 60; skip += 20) {
        pages.push(...await set.query(set.newParam().orderby(field, "asc").skip(skip).top(20)));
      }
      assert.deepEqual(
        pages,
        await direct(`${collection}?$orderby=${encodeURIComponent(field)}&$top=60`),
      );
    });
  }
});
