import assert from "node:assert/strict";
import { before, describe, it } from "node:test";
import { brotliDecompressSync, gunzipSync } from "node:zlib";
import type { WaterStore } from "../../lib/water/mod.ts";
import { bodyBytes, makeRequest } from "../_helpers/http.ts";
import { demoStore, TEST_KEY, waterHandler } from "../_helpers/water.ts";

let store: WaterStore;
before(async () => {
  store = (await demoStore()).store;
});

const PAGE = { path: "/v1/odata/v4/Observations", query: "$top=2000" };


describe("compressed pages of the water API", () => {
  it("compresses a big JSON page once per coding and URL, and answers it again from what it kept", async () => {
    const handler = waterHandler(store);
    const ask = async (encoding?: string) =>
      await handler(makeRequest({ ...PAGE, headers: { "x-api-key": TEST_KEY, ...(encoding === undefined ? {} : { "accept-encoding": encoding }) } }));
    const plain = await bodyBytes(await ask());
    assert.ok(plain.length > 64 * 1024, `${plain.length} bytes: a big page`);
    const first = await ask("br");
    const second = await ask("br");
    assert.equal(first.headers?.["content-encoding"], "br");
    assert.equal(first.headers?.["vary"], "Accept-Encoding");
    assert.ok(first.headers?.["link"]?.includes("$skiptoken"), "the next link is kept with the page");
    assert.deepEqual(brotliDecompressSync(await bodyBytes(first)), plain);
    assert.equal(second.body, first.body, "the second answer is the kept bytes");
    const gzip = await ask("gzip");
    assert.equal(gzip.headers?.["content-encoding"], "gzip");
    assert.deepEqual(gunzipSync(await bodyBytes(gzip)), plain);
    const other = await handler(makeRequest({ path: PAGE.path, query: "$top=1999", headers: { "x-api-key": TEST_KEY, "accept-encoding": "br" } }));
    assert.notEqual(other.body, first.body, "another URL is another page");
  });

  it("leaves small pages, identity and a render cache of 0 alone", async () => {
    const small = await waterHandler(store)(makeRequest({ path: PAGE.path, query: "$top=2", headers: { "x-api-key": TEST_KEY, "accept-encoding": "br" } }));
    assert.equal(small.headers?.["content-encoding"], undefined);
    const off = await waterHandler(store, { renderCacheBytes: 0 })(makeRequest({ ...PAGE, headers: { "x-api-key": TEST_KEY, "accept-encoding": "br" } }));
    assert.equal(off.headers?.["content-encoding"], undefined);
  });
});
