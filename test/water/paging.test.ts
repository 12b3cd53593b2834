import assert from "node:assert/strict";
import { before, describe, it } from "node:test";
import type { Handler } from "../../lib/http/mod.ts";
import { evaluateFilter, type Scalar } from "../../lib/odata/mod.ts";
import { COLLECTIONS, loadDatasets, prepareFilter, type WaterStore } from "../../lib/water/mod.ts";
import { createPrng } from "../_helpers/prng.ts";
import { call, DEMO_DIR, demoStore, type Page, waterHandler } from "../_helpers/water.ts";

const BASE = "/v1/odata/v4";
const ORIGIN = "http://localhost:8000";
let store: WaterStore;
let handler: Handler;

before(async () => {
  store = (await demoStore()).store;
  handler = waterHandler(store);
});

/** Follows @odata.nextLink (or the Link header) from a first target; returns every page. */
async function follow(
  first: string,
  via: "body" | "header",
  h: Handler = handler,
): Promise<{ pages: Page[]; links: string[] }> {
  const pages: Page[] = [];
  const links: string[] = [];
  let target: string | undefined = first;
  for (let guard = 0; target !== undefined && guard < 10_000; guard++) {
    const result = await call(h, target);
    assert.equal(result.status, 200, `${target}: ${result.text.slice(0, 200)}`);
    const body = result.json() as Page;
    pages.push(body);
    const header = result.headers["link"];
    const fromHeader = header === undefined ? undefined : /<(.*?)>; rel="next"/.exec(header)?.[1];
    assert.equal(fromHeader, body["@odata.nextLink"], "Link header and @odata.nextLink agree");
    const next = via === "body" ? body["@odata.nextLink"] : fromHeader;
    if (next === undefined) break;
    links.push(next);
    assert.ok(next.startsWith(`${ORIGIN}${BASE}/`), `absolute, same origin: ${next}`);
    target = next.slice(ORIGIN.length);
  }
  return { pages, links };
}

/** The Ids of observations matching a filter, from the reference evaluator over plain values. */
function referenceIds(filterText: string): number[] {
  const collection = COLLECTIONS.get("Observations")!;
  const bound = prepareFilter(collection, filterText);
  const columns = new Map<
    string,
    (row: number, location: number, dataset: number) => Scalar | readonly Scalar[]
  >();
  for (const [name, field] of collection.filter) {
    const key = field.source.key;
    const column = store.column(key);
    if (column === undefined) throw new Error(key);
    const pick = field.source.level === "observation"
      ? (row: number) => row
      : field.source.level === "location"
      ? (_row: number, location: number) => location
      : (_row: number, _location: number, dataset: number) => dataset;
    columns.set(name, (row, location, dataset) => {
      const at = pick(row, location, dataset);
      switch (column.kind) {
        case "dict":
          return column.values[column.codes[at]!]!;
        case "number":
          return Number.isNaN(column.values[at]!) ? null : column.values[at]!;
        case "rownumber":
          return at + column.offset;
        case "values":
          return column.values[at]!;
        case "group":
          throw new Error("own-level columns are never grouped");
      }
    });
  }
  const out: number[] = [];
  for (let location = 0; location < store.locationCount; location++) {
    const dataset = store.datasetOfLocation(location);
    for (
      let row = store.locationRowStarts[location]!;
      row < store.locationRowStarts[location + 1]!;
      row++
    ) {
      if (evaluateFilter(bound, (name) => columns.get(name)!(row, location, dataset))) {
        out.push(row + 1);
      }
    }
  }
  return out;
}

const FILTER = "CharacteristicName in ('pH', 'Temperature, water') and ActivityStartYear ge 2015";

describe("paging", () => {
  for (const via of ["body", "header"] as const) {
    it(`visits every matching row once, in ascending Id, following the ${via === "body" ? "@odata.nextLink" : "Link header"}`, async () => {
      const { pages } = await follow(
        `${BASE}/Observations?$top=997&$select=Id,CharacteristicName&$filter=${
          encodeURIComponent(FILTER)
        }`,
        via,
      );
      const seen = pages.flatMap((p) => p.value.map((row) => row["Id"] as number));
      assert.ok(pages.length > 3, `pages ${pages.length}`);
      assert.deepEqual(seen, referenceIds(FILTER));
      assert.ok(
        pages.every((p) =>
          p.value.every((row) => Object.keys(row).join() === "Id,CharacteristicName")
        ),
      );
    });
  }

  it("keeps $filter, $select and $top in links without a raw space, and ends without a link", async () => {
    const { pages, links } = await follow(
      `${BASE}/Observations?$top=2500&$select=Id,%20ResultValue&$filter=${
        encodeURIComponent(FILTER)
      }`,
      "body",
    );
    assert.ok(links.length > 1);
    for (const link of links) {
      assert.doesNotMatch(link, / /);
      const params = new URL(link).searchParams;
      assert.equal(params.get("$filter"), FILTER);
      assert.equal(params.get("$select"), "Id,ResultValue");
      assert.equal(params.get("$top"), "2500");
      assert.match(params.get("$skiptoken")!, /^Id:\d+$/);
    }
    const last = pages.at(-1)!;
    assert.equal(last["@odata.nextLink"], undefined);
    assert.ok(!("@odata.nextLink" in last));
  });

  it("pages /Locations and /Metadata, whose ids are integers and UUIDs", async () => {
    const locations = (await follow(`${BASE}/Locations?$top=17&$select=Id`, "body")).pages.flatMap((
      p,
    ) => p.value.map((r) => r["Id"]));
    assert.deepEqual(locations, Array.from({ length: store.locationCount }, (_, i) => i + 1));
    const { pages, links } = await follow(`${BASE}/Metadata?$top=2&$select=Id,DOI`, "header");
    const datasetIds = pages.flatMap((p) => p.value.map((r) => r["Id"] as string));
    assert.deepEqual(datasetIds, store.datasets.map((d) => d.id).sort());
    assert.match(links[0]!, /\$skiptoken=Id:[0-9a-f-]{36}/);
  });

  it("uses the request's origin for links", async () => {
    const result = await call(handler, `${BASE}/Locations?$top=1`, {
      origin: "https://water.example.org:8443",
    });
    assert.match(
      result.headers["link"]!,
      /^<https:\/\/water\.example\.org:8443\/v1\/odata\/v4\/Locations\?/,
    );
  });

  it("keeps every Id and outstanding next link valid after a restart", async () => {
    const first = await call(
      handler,
      `${BASE}/Observations?$top=500&$select=Id,CharacteristicName,ResultValue&$filter=${
        encodeURIComponent(FILTER)
      }`,
    );
    const next = (first.json() as Page)["@odata.nextLink"]!;
    const restarted = waterHandler((await loadDatasets(DEMO_DIR)).store);
    const before = await call(handler, next.slice(ORIGIN.length));
    const after = await call(restarted, next.slice(ORIGIN.length));
    assert.equal(after.text, before.text);
    const everything = `${BASE}/Records?$top=10000&$filter=LocationId lt 4`;
    assert.equal((await call(restarted, everything)).text, (await call(handler, everything)).text);
  });
});

/** Random filters over data-level fields the clients use, with real values. */
function randomFilter(prng: ReturnType<typeof createPrng>): string {
  const values = (key: string): string[] => {
    const column = store.column(key);
    if (column?.kind !== "dict") return [];
    return column.values.filter((v): v is string => typeof v === "string");
  };
  const quote = (text: string): string => `'${text.replaceAll("'", "''")}'`;
  const atoms: (() => string)[] = [
    () => `CharacteristicName eq ${quote(prng.pick(values("observation.CharacteristicName")))}`,
    () =>
      `CharacteristicName in (${
        [0, 1, 2].map(() => quote(prng.pick(values("observation.CharacteristicName")))).join(", ")
      })`,
    () =>
      `ActivityStartYear ${prng.pick(["gt", "ge", "gte", "lt", "le", "lte", "eq", "ne"])} ${
        prng.pick(["", "'"]).replace(/^(.*)$/, (q) => `${q}${2012 + prng.int(13)}${q}`)
      }`,
    () => `ActivityMediaName eq ${quote(prng.pick(values("observation.ActivityMediaName")))}`,
    () =>
      `ActivityGroupType eq ${
        quote(
          prng.pick([
            "Field Measure",
            "Lab Sample",
            "Quality Control - Field Measure",
            "Continuous Data",
          ]),
        )
      }`,
    () =>
      `MonitoringLocationType eq ${quote(prng.pick(values("location.MonitoringLocationType")))}`,
    () =>
      `RegionId eq ${
        quote(
          prng.pick([
            "hub.atlantic",
            "hub.pacific",
            "hub.greatlakes",
            "hub.mackenzie",
            "hub.lakewinnipeg",
            "admin.2.ca",
            "admin.4.ca.on",
            "admin.4.ca.bc",
          ]),
        )
      }`,
    () => `DOI eq ${quote(prng.pick(store.datasets).doi)}`,
    () => `endswith(DOI, ${quote(prng.pick(store.datasets).doi.slice(-4))})`,
    () =>
      `ResultValue ${prng.pick(["gt", "lt", "ge"])} ${
        prng.pick(["0", "7", "'7.5'", "20", "0.01"])
      }`,
    () => `LatitudeNormalized ${prng.pick(["gt", "lt"])} '${40 + prng.int(30)}'`,
    () => `ResultDetectionCondition ${prng.pick(["eq", "ne"])} null`,
  ];
  const build = (depth: number): string => {
    const roll = prng.next();
    if (depth > 2 || roll < 0.5) return prng.pick(atoms)();
    if (roll < 0.75) return `${build(depth + 1)} and ${build(depth + 1)}`;
    if (roll < 0.9) return `(${build(depth + 1)} or ${build(depth + 1)})`;
    return `not (${build(depth + 1)})`;
  };
  return build(0);
}

describe("partitioned download", () => {
  it("returns exactly the rows of the direct query, for many random filters", async () => {
    const seed = 4242;
    const prng = createPrng(seed);
    for (let round = 0; round < 80; round++) {
      const filter = randomFilter(prng);
      const q = encodeURIComponent(filter);
      const direct =
        (await follow(`${BASE}/Observations?$top=10000&$select=Id&$filter=${q}`, "body")).pages
          .flatMap((p) => p.value.map((r) => r["Id"] as number));
      const locations =
        (await follow(`${BASE}/Locations?$top=10000&$select=Id&$filter=${q}`, "body")).pages
          .flatMap((p) => p.value.map((r) => r["Id"] as number));
      const partitioned: number[] = [];
      for (const id of locations) {
        const part = encodeURIComponent(`LocationId eq ${id} and ${filter}`);
        const rows =
          (await follow(`${BASE}/Observations?$top=10000&$select=Id&$filter=${part}`, "body")).pages
            .flatMap((p) => p.value.map((r) => r["Id"] as number));
        assert.ok(
          rows.length > 0,
          `seed ${seed} round ${round}: location ${id} listed but has no rows for ${filter}`,
        );
        partitioned.push(...rows);
      }
      assert.deepEqual(partitioned, direct, `seed ${seed} round ${round}: ${filter}`);
      if (round % 8 === 0) {
        assert.deepEqual(direct, referenceIds(filter), `reference, round ${round}: ${filter}`);
      }
    }
  });
});
