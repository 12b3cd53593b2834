import assert from "node:assert/strict";
import { before, describe, it } from "node:test";
import { COLLECTIONS, type WaterStore } from "../../lib/water/mod.ts";
import {
  ENTRY_OVERHEAD,
  RenderCache,
  type RenderedRow,
  renderKey,
  RowWriterCache,
} from "../../lib/water/render/render_cache.ts";
import { createPrng } from "../_helpers/prng.ts";
import { makeRequest } from "../_helpers/http.ts";
import { call, demoStore, TEST_KEY, waterHandler } from "../_helpers/water.ts";

const bytes = (n: number, fill = 1): RenderedRow => ({
  block: new Uint8Array(n).fill(fill),
  start: 0,
  end: n,
});

describe("RenderCache", () => {
  it("returns what it kept", () => {
    const cache = new RenderCache(1000);
    cache.set(1, bytes(10));
    assert.deepEqual(cache.get(1)?.block, bytes(10).block);
    assert.equal(cache.get(2), undefined);
  });

  it("drops the oldest entries beyond its budget", () => {
    const cache = new RenderCache(3 * (10 + ENTRY_OVERHEAD));
    cache.set(1, bytes(10));
    cache.set(2, bytes(10));
    cache.set(3, bytes(10));
    cache.set(4, bytes(10));
    assert.equal(cache.get(1), undefined);
    assert.ok(
      cache.get(2) !== undefined && cache.get(3) !== undefined && cache.get(4) !== undefined,
    );
    assert.equal(cache.bytes, 3 * (10 + ENTRY_OVERHEAD));
  });

  it("replaces an entry without counting it twice", () => {
    const cache = new RenderCache(1000);
    cache.set(1, bytes(10));
    cache.set(1, bytes(20, 2));
    assert.equal(cache.bytes, 20 + ENTRY_OVERHEAD);
    assert.equal(cache.get(1)!.block[0], 2);
  });

  it("counts each entry's overhead, so tiny rows cannot fill memory with entries", () => {
    const cache = new RenderCache(10 * ENTRY_OVERHEAD);
    for (let key = 0; key < 100; key++) cache.set(key, bytes(1));
    assert.ok(cache.bytes <= 10 * ENTRY_OVERHEAD);
    assert.equal(cache.get(0), undefined);
    assert.ok(cache.get(99) !== undefined);
  });

  it("keeps nothing with a budget of 0 and nothing larger than its budget", () => {
    const off = new RenderCache(0);
    off.set(1, bytes(1));
    assert.equal(off.get(1), undefined);
    const small = new RenderCache(5 + ENTRY_OVERHEAD);
    small.set(1, bytes(6));
    assert.equal(small.get(1), undefined);
  });

  it("drops the oldest first through many sets, replacements and clears, as a plain first-in first-out list", () => {
    const seed = Date.now() >>> 0;
    const prng = createPrng(seed);
    const budget = 40 * (10 + ENTRY_OVERHEAD);
    const cache = new RenderCache(budget);
    // The model: entries oldest first, dropped from the front.
    let model: { key: number; size: number }[] = [];
    for (let step = 0; step < 20_000; step++) {
      const choice = prng.int(100);
      if (choice === 0) {
        cache.clear();
        model = [];
        continue;
      }
      // New keys mostly (pages of new rows), some again (a page seen before).
      const key = choice < 80 ? 1_000 + step : prng.int(1_000 + step);
      const size = 1 + prng.int(30);
      cache.set(key, bytes(size));
      model = model.filter((entry) => entry.key !== key);
      model.push({ key, size: size + ENTRY_OVERHEAD });
      let total = model.reduce((sum, entry) => sum + entry.size, 0);
      while (total > budget) total -= model.shift()!.size;
      if (step % 97 === 0 || step > 19_900) {
        assert.equal(cache.bytes, total, `seed ${seed}, step ${step}`);
        for (const entry of model) {
          assert.equal(
            cache.get(entry.key)?.end,
            entry.size - ENTRY_OVERHEAD,
            `seed ${seed}, step ${step}`,
          );
        }
      }
    }
  });

  it("clears", () => {
    const cache = new RenderCache(1000);
    cache.set(1, bytes(10));
    cache.clear();
    assert.equal(cache.get(1), undefined);
    assert.equal(cache.bytes, 0);
  });

  it("refuses a negative budget", () => {
    assert.throws(() => new RenderCache(-1), RangeError);
  });
});

describe("renderKey()", () => {
  it("keeps rows of different selections apart, exactly", () => {
    assert.notEqual(renderKey(0, 5), renderKey(1, 5));
    assert.ok(Number.isSafeInteger(renderKey(2 ** 20 - 1, 2 ** 32 - 1)));
  });
});

describe("RowWriterCache", () => {
  let store: WaterStore;
  before(async () => {
    store = (await demoStore()).store;
  });
  const observations = COLLECTIONS.get("Observations")!;

  it("gives one writer and number per selection", () => {
    const writers = new RowWriterCache(store, new RenderCache(1000));
    const a = writers.get(observations, ["Id"]);
    assert.equal(writers.get(observations, ["Id"]), a);
    assert.notEqual(writers.get(observations, ["Id", "DOI"]).id, a.id);
    assert.notEqual(writers.get(COLLECTIONS.get("Records")!, ["Id"]).id, a.id);
  });

  it("clears the render cache instead of giving a number twice", () => {
    const cache = new RenderCache(1000);
    const writers = new RowWriterCache(store, cache, { maxSelections: 2 });
    const first = writers.get(observations, ["Id"]);
    cache.set(renderKey(first.id, 7), bytes(3));
    writers.get(observations, ["DOI"]);
    const third = writers.get(observations, ["LocationId"]);
    assert.equal(third.id, first.id);
    assert.equal(cache.get(renderKey(first.id, 7)), undefined);
  });
});

describe("water service with the render cache", () => {
  it("answers byte for byte what it answers without it, first and second time", async () => {
    const { store } = await demoStore();
    const cached = waterHandler(store, { renderCacheBytes: 1 << 20 });
    const uncached = waterHandler(store, { renderCacheBytes: 0 });
    for (
      const target of [
        "/v1/odata/v4/Observations?$top=250&$filter=LocationId%20eq%205",
        "/v1/odata/v4/Observations?$top=250&$filter=LocationId%20eq%205&$select=Id,ResultValue",
        "/v1/odata/v4/Records?$top=40&$skiptoken=Id:100",
        "/v1/odata/v4/Locations?$top=30",
        "/v1/odata/v4/Metadata",
      ]
    ) {
      const expected = (await call(uncached, target)).text;
      assert.equal((await call(cached, target)).text, expected, target);
      assert.equal((await call(cached, target)).text, expected, `${target}, again`);
    }
  });

  it("answers a page partly in the cache byte for byte as without it", async () => {
    const { store } = await demoStore();
    const cached = waterHandler(store, { renderCacheBytes: 1 << 20 });
    const uncached = waterHandler(store, { renderCacheBytes: 0 });
    for (const select of ["", "&$select=ResultValue,Id,DOI"]) {
      // Rows 51 to 150 cached first, then pages that begin before them, end after them, or hold them.
      await call(cached, `/v1/odata/v4/Observations?$top=100&$skiptoken=Id:50${select}`);
      for (
        const target of [
          `/v1/odata/v4/Observations?$top=300${select}`,
          `/v1/odata/v4/Observations?$top=120&$skiptoken=Id:100${select}`,
          `/v1/odata/v4/Observations?$top=80&$skiptoken=Id:20${select}`,
        ]
      ) {
        assert.equal(
          (await call(cached, target)).text,
          (await call(uncached, target)).text,
          target,
        );
      }
    }
  });
});

describe("water service render cache and big pages", () => {
  it("keeps the rows of pages up to 1,000 rows, and only reads it for bigger ones (downloads do not push out hot rows)", async () => {
    const { store } = await demoStore();
    const handler = waterHandler(store, { renderCacheBytes: 64 << 20 });
    // HEAD, which renders the page as GET does but never answers a kept page (GET's second answer would be one).
    const page = (query: string) =>
      handler(
        makeRequest({
          method: "HEAD",
          path: "/v1/odata/v4/Observations",
          query,
          headers: { "x-api-key": TEST_KEY },
        }),
      );
    // A page rendered anew is one block; a page of cached rows is put together from them, in parts.
    assert.ok((await page("$top=1000")).body instanceof Uint8Array);
    assert.ok(
      Array.isArray((await page("$top=1000")).body),
      "the second time, from the cache",
    );
    assert.ok((await page("$top=1500&$skiptoken=Id:3000")).body instanceof Uint8Array);
    assert.ok(
      (await page("$top=1500&$skiptoken=Id:3000")).body instanceof Uint8Array,
      "a big page's rows were not kept",
    );
    assert.ok(
      (await page("$top=500&$skiptoken=Id:3000")).body instanceof Uint8Array,
      "nor are they there for a small page",
    );
    // A big page over cached rows reads them.
    assert.ok(Array.isArray((await page("$top=1500")).body));
  });
});

describe("water service plan reuse", () => {
  it("answers a repeated filter the same way, whether its plan was kept or not", async () => {
    const { store } = await demoStore();
    const handler = waterHandler(store);
    // A wide candidate list (two common names) and a narrow one (one location).
    for (
      const filter of [
        "CharacteristicName in ('pH', 'Temperature, water')",
        "LocationId eq 9 and CharacteristicName eq 'pH'",
      ]
    ) {
      const target = `/v1/odata/v4/Observations?$top=5000&$select=Id&$filter=${
        encodeURIComponent(filter)
      }`;
      const first = (await call(handler, target)).text;
      assert.equal((await call(handler, target)).text, first, filter);
      assert.equal((await call(waterHandler(store), target)).text, first, filter);
    }
  });
});
