import assert from "node:assert/strict";
import { before, describe, it } from "node:test";
import { brotliDecompressSync, gunzipSync } from "node:zlib";
import type { WaterStore } from "../../lib/water/mod.ts";
import { type Handler } from "../../lib/http/mod.ts";
import { withCompression } from "../../lib/http/compression.ts";
import { CompressedPages, IDENTITY_MIN_BYTES } from "../../lib/water/render/compressed_pages.ts";
import { bodyBytes, makeRequest } from "../_helpers/http.ts";
import { call, demoStore, TEST_KEY, waterHandler } from "../_helpers/water.ts";

let store: WaterStore;
before(async () => {
  store = (await demoStore()).store;
});

const PAGE = { path: "/v1/odata/v4/Observations", query: "$top=2000" };

/** What a client that decodes `coding` sends: br as browsers ask for it (br named alone is answered uncompressed). */
function asked(coding: string): string {
  return coding === "br" ? "gzip, deflate, br" : coding;
}

describe("compressed pages of the water API", () => {
  it("compresses a big JSON page once per coding and URL, and answers it again from what it kept", async () => {
    const handler = waterHandler(store);
    const ask = async (encoding?: string) =>
      await handler(
        makeRequest({
          ...PAGE,
          headers: {
            "x-api-key": TEST_KEY,
            ...(encoding === undefined ? {} : { "accept-encoding": asked(encoding) }),
          },
        }),
      );
    const plain = await bodyBytes(await ask());
    assert.ok(plain.length > 64 * 1024, `${plain.length} bytes: a big page`);
    const first = await ask("br");
    const second = await ask("br");
    assert.equal(first.headers?.["content-encoding"], "br");
    assert.equal(first.headers?.["vary"], "Accept-Encoding");
    assert.ok(
      first.headers?.["link"]?.includes("$skiptoken"),
      "the next link is kept with the page",
    );
    assert.deepEqual(brotliDecompressSync(await bodyBytes(first)), plain);
    assert.equal(second.body, first.body, "the second answer is the kept bytes");
    const gzip = await ask("gzip");
    assert.equal(gzip.headers?.["content-encoding"], "gzip");
    assert.deepEqual(gunzipSync(await bodyBytes(gzip)), plain);
    const other = await handler(
      makeRequest({
        path: PAGE.path,
        query: "$top=1999",
        headers: { "x-api-key": TEST_KEY, "accept-encoding": asked("br") },
      }),
    );
    assert.notEqual(other.body, first.body, "another URL is another page");
  });

  it("leaves small pages and identity alone", async () => {
    const small = await waterHandler(store)(
      makeRequest({
        path: PAGE.path,
        query: "$top=2",
        headers: { "x-api-key": TEST_KEY, "accept-encoding": asked("br") },
      }),
    );
    assert.equal(small.headers?.["content-encoding"], undefined);
    const identity = await waterHandler(store)(
      makeRequest({ ...PAGE, headers: { "x-api-key": TEST_KEY, "accept-encoding": "identity" } }),
    );
    assert.equal(identity.headers?.["content-encoding"], undefined);
  });

  it("keeps a page taken as it is as one block, by URL and Accept, and answers it again at once", async () => {
    const handler = waterHandler(store);
    const ask = (query: string, accept?: string) =>
      handler(
        makeRequest({
          path: PAGE.path,
          query,
          headers: { "x-api-key": TEST_KEY, ...(accept === undefined ? {} : { accept }) },
        }),
      );
    const first = await ask("$top=100");
    const firstBytes = await bodyBytes(first);
    assert.ok(firstBytes.length >= IDENTITY_MIN_BYTES, `${firstBytes.length} bytes: kept as it is`);
    const second = await ask("$top=100");
    assert.ok(second.body instanceof Uint8Array, "one block");
    assert.deepEqual(await bodyBytes(second), firstBytes);
    assert.deepEqual(second.headers, first.headers, "the next link and types kept with it");
    assert.equal((await ask("$top=100")).body, second.body, "the same kept bytes");
    // The same URL asked with Accept: text/csv is another page, never the kept JSON.
    const csv = await ask("$top=100", "text/csv");
    assert.match(String(csv.headers?.["content-type"]), /^text\/csv/);
    assert.notEqual(csv.body, second.body);
    // A small page is not kept: each answer is made anew.
    const small = await ask("$top=2");
    assert.ok((await bodyBytes(small)).length < IDENTITY_MIN_BYTES);
    assert.notEqual((await ask("$top=2")).body, small.body);
  });

  it("counts a page kept twice by misses at once as one, so later pages are still kept", async () => {
    // Kept pages get a quarter of the render cache's budget: 1 MiB here, pages up to 128 KiB.
    const handler = waterHandler(store, { renderCacheBytes: 4 << 20 });
    const ask = (query: string) =>
      handler(makeRequest({ path: PAGE.path, query, headers: { "x-api-key": TEST_KEY } }));
    // Twenty misses of one 100-row page at once: each keeps it, each replacing the one before.
    await Promise.all(Array.from({ length: 20 }, () => ask("$top=100")));
    const other = await ask("$top=101");
    assert.ok((await bodyBytes(other)).length >= IDENTITY_MIN_BYTES);
    assert.equal((await ask("$top=101")).body, other.body, "kept: the budget counts what is kept");
  });

  it("keeps $apply pages apart: aggregated ones made anew, filter-only ones by their own URL", async () => {
    const handler = waterHandler(store);
    const ask = async (query: string, headers: Record<string, string> = {}) =>
      await handler(
        makeRequest({ path: PAGE.path, query, headers: { "x-api-key": TEST_KEY, ...headers } }),
      );
    // A plain page and the same rows through `$apply=identity`: both kept, each with its own next link.
    await ask("$top=100");
    const plain = await ask("$top=100");
    assert.ok(plain.body instanceof Uint8Array, "the plain page is kept");
    assert.doesNotMatch(String(plain.headers?.["link"]), /\$apply/);
    const applied = await ask("$apply=identity&$top=100");
    assert.match(String(applied.headers?.["link"]), /\?\$apply=identity&/);
    const appliedAgain = await ask("$apply=identity&$top=100");
    assert.ok(appliedAgain.body instanceof Uint8Array, "the filter-only $apply page is kept");
    assert.notEqual(appliedAgain.body, plain.body);
    assert.deepEqual(await bodyBytes(appliedAgain), await bodyBytes(applied));
    assert.match((await bodyBytes(appliedAgain)).toString(), /"@odata\.nextLink":"[^"]*\$apply=/);
    assert.equal((await ask("$top=100")).body, plain.body, "the plain page is still its own");

    // An aggregated page (over 200 KB, so above both keeping thresholds) is made anew each time: never kept.
    const query =
      "$apply=groupby((LocationId,CharacteristicName),aggregate($count as N))&$top=10000";
    const json = await ask(query);
    assert.ok(json.body instanceof Uint8Array);
    const text = (await bodyBytes(json)).toString();
    assert.ok(text.length > 64 * 1024, `${text.length} bytes`);
    assert.match(text, /"@odata\.context":"[^"]*#Observations\(LocationId,CharacteristicName,N\)"/);
    for (const headers of [{}, { "accept-encoding": "gzip" }, { "accept-encoding": asked("br") }]) {
      for (let round = 0; round < 2; round++) {
        const again = await ask(query, headers);
        assert.notEqual(again.body, json.body, `made anew: ${JSON.stringify(headers)}`);
        assert.equal((await bodyBytes(again)).toString(), text);
        assert.equal(again.headers?.["content-encoding"], undefined, "left to the app's layer");
      }
    }
    // The same URL taken as CSV, then as JSON again: each its own answer.
    const csv = await ask(query, { accept: "text/csv" });
    assert.match(String(csv.headers?.["content-type"]), /^text\/csv/);
    assert.match(String(csv.body), /^LocationId,CharacteristicName,N\r?\n/);
    assert.equal((await bodyBytes(await ask(query))).toString(), text);
    // Asked after the aggregated pages, the kept pages are unchanged.
    assert.equal((await ask("$top=100")).body, plain.body);
    assert.equal((await ask("$apply=identity&$top=100")).body, appliedAgain.body);
  });

  it("keeps no streamed answer, and makes it anew each time", async () => {
    const pages = new CompressedPages(64 * 1024 * 1024);
    let made = 0;
    const big = new Uint8Array(IDENTITY_MIN_BYTES * 4);
    async function* chunks(): AsyncGenerator<Uint8Array> {
      yield big;
    }
    for (const encoding of [undefined, "gzip"]) {
      const request = makeRequest({
        path: PAGE.path,
        query: "$apply=identity&$format=csv",
        headers: encoding === undefined ? {} : { "accept-encoding": encoding },
      });
      for (let round = 0; round < 2; round++) {
        const answer = await pages.answer(request, () => {
          made++;
          return {
            status: 200,
            headers: { "content-type": "application/json; charset=utf-8" },
            body: chunks(),
          };
        });
        assert.ok(!(answer.body instanceof Uint8Array), "streamed as it came");
        assert.equal((await bodyBytes(answer)).length, big.length);
      }
    }
    assert.equal(made, 4, "each request made its answer");
  });

  describe("a big page compressed as it renders (more rows than one slice)", () => {
    const ask = (handler: Handler, query: string, coding?: string) =>
      handler(
        makeRequest({
          path: PAGE.path,
          query,
          headers: {
            "x-api-key": TEST_KEY,
            ...(coding === undefined ? {} : { "accept-encoding": asked(coding) }),
          },
        }),
      );
    const decode = (
      bytes: Buffer,
      coding: string,
    ) => (coding === "br" ? brotliDecompressSync(bytes) : gunzipSync(bytes));

    for (const cacheBytes of [0, 64 * 1024 * 1024]) {
      for (const coding of ["gzip", "br"]) {
        it(`${coding}, render cache ${cacheBytes === 0 ? "off" : "on"}: equal once decoded to the page as sent uncompressed, with its headers`, async () => {
          const handler = waterHandler(store, { renderCacheBytes: cacheBytes });
          for (
            const query of [
              "$top=2500",
              "$top=1001&$skiptoken=Id:700",
              "$top=3000&$select=Id,ResultValue,CharacteristicName",
              "$top=1500&$orderby=ResultValue%20desc",
            ]
          ) {
            const plain = await ask(waterHandler(store, { renderCacheBytes: 0 }), query);
            const answer = await ask(handler, query, coding);
            assert.equal(answer.status, 200);
            assert.equal(answer.headers?.["content-encoding"], coding, query);
            assert.equal(answer.headers?.["vary"], "Accept-Encoding");
            assert.equal(answer.headers?.["link"], plain.headers?.["link"], "the same next link");
            assert.equal(answer.headers?.["content-length"], undefined);
            assert.deepEqual(
              decode(await bodyBytes(answer), coding),
              await bodyBytes(plain),
              query,
            );
          }
        });
      }
    }

    it("answers pages asked for at once, each equal to its own page, the slices' memory used again only once read", async () => {
      const handler = waterHandler(store, { renderCacheBytes: 0 });
      const queries = [
        "$top=2500",
        "$top=3000&$skiptoken=Id:100",
        "$top=2200&$select=Id,ResultValue",
        "$top=1800&$skiptoken=Id:2000",
        "$top=4000",
        "$top=1500&$orderby=ResultValue",
      ];
      for (let round = 0; round < 2; round++) {
        const codings = queries.map((_, i) => ((i + round) % 2 === 0 ? "gzip" : "br"));
        const answers = await Promise.all(
          queries.map((query, i) => ask(handler, query, codings[i])),
        );
        for (const [i, query] of queries.entries()) {
          const plain = await bodyBytes(await ask(handler, query));
          assert.deepEqual(
            decode(await bodyBytes(answers[i]!), codings[i]!),
            plain,
            `${codings[i]} ${query}`,
          );
        }
      }
    });

    it("puts a page some of whose rows are cached together from the cache", async () => {
      const handler = waterHandler(store);
      const plain = await bodyBytes(
        await ask(waterHandler(store, { renderCacheBytes: 0 }), "$top=2400"),
      );
      // The first 1,000 rows rendered (and cached) by a small page; then the 2,400 with some of them cached.
      await ask(handler, "$top=1000");
      assert.deepEqual(gunzipSync(await bodyBytes(await ask(handler, "$top=2400", "gzip"))), plain);
      assert.deepEqual(await bodyBytes(await ask(handler, "$top=2400")), plain);
    });

    it("follows compressAboveBytes (COMPRESS_ABOVE_BYTES): a page below it, or every page when it is above the byte limit, is left to the app", async () => {
      const plain = await bodyBytes(
        await ask(waterHandler(store, { renderCacheBytes: 0 }), "$top=2500"),
      );
      for (const cacheBytes of [0, 64 * 1024 * 1024]) {
        for (const above of [plain.length + 1, 64 * 1024 * 1024]) {
          const answer = await ask(
            waterHandler(store, { renderCacheBytes: cacheBytes, compressAboveBytes: above }),
            "$top=2500",
            "gzip",
          );
          assert.equal(
            answer.headers?.["content-encoding"],
            undefined,
            `cache ${cacheBytes}, above ${above}`,
          );
          assert.deepEqual(await bodyBytes(answer), plain);
        }
        // Above the first slice's size but below the page's: the page is compressed whole.
        const whole = await withCompression(
          waterHandler(store, {
            renderCacheBytes: cacheBytes,
            compressAboveBytes: plain.length - 1,
          }),
          { minBytes: plain.length - 1 },
        )(
          makeRequest({
            path: PAGE.path,
            query: "$top=2500",
            headers: { "x-api-key": TEST_KEY, "accept-encoding": "gzip" },
          }),
        );
        assert.equal(whole.headers?.["content-encoding"], "gzip");
        assert.deepEqual(gunzipSync(await bodyBytes(whole)), plain);
      }
    });

    it("refuses a page above MAX_RESPONSE_BYTES with 413, whichever slice passes it", async () => {
      const plain = await bodyBytes(
        await ask(waterHandler(store, { renderCacheBytes: 0 }), "$top=2500"),
      );
      for (const limit of [1000, Math.floor(plain.length * 0.6), plain.length - 1]) {
        for (const coding of ["gzip", "br"]) {
          const result = await call(
            waterHandler(store, { maxResponseBytes: limit, renderCacheBytes: 0 }),
            `${PAGE.path}?$top=2500`,
            { headers: { "x-api-key": TEST_KEY, "accept-encoding": asked(coding) } },
          );
          assert.equal(result.status, 413, `${coding} limit ${limit}`);
          assert.match(result.text, /ERR_WATER_RESPONSE_TOO_LARGE/);
        }
      }
      const exact = await ask(
        waterHandler(store, { maxResponseBytes: plain.length, renderCacheBytes: 0 }),
        "$top=2500",
        "gzip",
      );
      assert.deepEqual(gunzipSync(await bodyBytes(exact)), plain);
    });

    it("answers 408 when the deadline passes between slices", async () => {
      let t = 0;
      // Each check of the deadline moves the clock on: a page of several slices checks it more often than a small one.
      const handler = waterHandler(store, {
        queryTimeoutMs: 1000,
        now: () => (t += 1),
        renderCacheBytes: 0,
      });
      const small = await call(handler, `${PAGE.path}?$top=10`, {
        headers: { "x-api-key": TEST_KEY, "accept-encoding": "gzip" },
      });
      assert.equal(small.status, 200);
      const checks = t;
      t = 0;
      const slow = waterHandler(store, {
        queryTimeoutMs: checks + 2,
        now: () => (t += 1),
        renderCacheBytes: 0,
      });
      const result = await call(slow, `${PAGE.path}?$top=3000`, {
        headers: { "x-api-key": TEST_KEY, "accept-encoding": "gzip" },
      });
      assert.equal(result.status, 408);
    });
  });
});
