import assert from "node:assert/strict";
import { before, describe, it } from "node:test";
import { createDeadline, type Handler } from "../../lib/http/mod.ts";
import { parseQuery } from "../../lib/http/_internal.ts";
import { readQueryOptions } from "../../lib/odata/mod.ts";
import { COLLECTIONS, type WaterStore } from "../../lib/water/mod.ts";
import { type AggregatedResult, aggregatedRows } from "../../lib/water/http/_answer_apply.ts";
import { cellOf } from "../../lib/water/query/grouped_columns.ts";
import { serveStore } from "../../lib/water/http/_served_store.ts";
import { prepareApply } from "../../lib/water/query/query_apply.ts";
import { createPrng } from "../_helpers/prng.ts";
import {
  buildStore,
  call,
  demoStore,
  FIXTURE_HEADER,
  fixtureRow,
  waterHandler,
} from "../_helpers/water.ts";

const BASE = "/v1/odata/v4";
const ORIGIN = "http://localhost:8000";
let store: WaterStore;
let handler: Handler;

before(async () => {
  store = (await demoStore()).store;
  handler = waterHandler(store);
});

type Row = Record<string, unknown>;

interface AggregatePage {
  "@odata.context": string;
  value: Row[];
  "@odata.nextLink"?: string;
}

function target(collection: string, options: Record<string, string>): string {
  const query = Object.entries(options)
    .map(([name, value]) => `${name}=${encodeURIComponent(value)}`)
    .join("&");
  return `${BASE}/${collection}?${query}`;
}

async function get(collection: string, options: Record<string, string>): Promise<AggregatePage> {
  const url = target(collection, options);
  const result = await call(handler, url);
  assert.equal(result.status, 200, `${url}: ${result.text.slice(0, 300)}`);
  return result.json() as AggregatePage;
}

/** Every row of a result, following @odata.nextLink (and checking the Link header agrees). */
async function all(collection: string, options: Record<string, string>): Promise<Row[]> {
  const rows: Row[] = [];
  let next: string | undefined = target(collection, options);
  for (let guard = 0; next !== undefined && guard < 1000; guard++) {
    const result = await call(handler, next);
    assert.equal(result.status, 200, `${next}: ${result.text.slice(0, 300)}`);
    const page = result.json() as AggregatePage;
    rows.push(...page.value);
    const header = result.headers["link"];
    const link = page["@odata.nextLink"];
    assert.equal(header === undefined ? undefined : /<(.*?)>; rel="next"/.exec(header)?.[1], link);
    if (link !== undefined) assert.ok(link.startsWith(`${ORIGIN}${BASE}/${collection}?$apply=`));
    next = link?.slice(ORIGIN.length);
  }
  return rows;
}

async function count(collection: string, options: Record<string, string>): Promise<number> {
  const page = await get(collection, { ...options, $count: "true" }) as unknown as {
    value: number;
  };
  return page.value;
}

async function refused(
  collection: string,
  options: Record<string, string>,
  h: Handler = handler,
): Promise<{ status: number; error: { code: string; target?: string; message: string } }> {
  const result = await call(h, target(collection, options));
  const body = result.json() as { error: { code: string; target?: string; message: string } };
  return { status: result.status, error: body.error };
}

describe("$apply on /Observations", () => {
  it("groups and aggregates, with the aggregated shape in @odata.context and null ids", async () => {
    const page = await get("Observations", {
      $apply:
        "groupby((CharacteristicName), aggregate($count as N, ResultValue with average as Mean))",
    });
    assert.equal(
      page["@odata.context"],
      `${ORIGIN}${BASE}/$metadata#Observations(CharacteristicName,N,Mean)`,
    );
    assert.ok(page.value.length > 1);
    let total = 0;
    for (const row of page.value) {
      assert.deepEqual(Object.keys(row), ["@odata.id", "CharacteristicName", "N", "Mean"]);
      assert.equal(row["@odata.id"], null);
      total += row["N"] as number;
    }
    assert.equal(total, store.observationCount);
    // Each group's count is the count of its rows, asked the plain way.
    const first = page.value[0]!;
    const filter = `CharacteristicName eq '${
      String(first["CharacteristicName"]).replaceAll("'", "''")
    }'`;
    assert.equal(first["N"], await count("Observations", { $filter: filter }));
  });

  it("groups by the year computed from ActivityStartDate as by ActivityStartYear", async () => {
    const byCompute = await all("Observations", {
      $apply: "compute(year(ActivityStartDate) as Year)/groupby((Year), aggregate($count as N))",
    });
    const byColumn = await all("Observations", {
      $apply: "groupby((ActivityStartYear), aggregate($count as N))",
    });
    assert.deepEqual(
      byCompute.map((row) => [row["Year"], row["N"]]),
      byColumn.map((row) => [row["ActivityStartYear"], row["N"]]),
    );
  });

  it("pages with @odata.nextLink, in every order, and $count equals the rows", async () => {
    const apply =
      "filter(CharacteristicName eq 'pH')/groupby((LocationId), aggregate(ResultValue with average as Mean, $count as N))";
    const whole = (await get("Observations", { $apply: apply, $top: "10000" })).value;
    assert.ok(whole.length > 20, `${whole.length} groups`);
    assert.equal(await count("Observations", { $apply: apply }), whole.length);
    assert.deepEqual(await all("Observations", { $apply: apply, $top: "7" }), whole);
    const byMean = await all("Observations", { $apply: apply, $top: "9", $orderby: "Mean desc" });
    assert.equal(byMean.length, whole.length);
    assert.deepEqual(
      byMean.map((row) => row["Mean"]),
      whole.map((row) => row["Mean"] as number).sort((a, b) => b - a),
    );
    const result = await call(
      handler,
      target("Observations", { $apply: apply }).replace("/Observations?", "/Observations/$count?"),
    );
    assert.equal(result.text, String(whole.length));
  });

  it("answers $filter on an alias as filter inside $apply", async () => {
    const apply = "groupby((LocationId), aggregate(ResultValue with average as Mean))";
    const outside = await all("Observations", {
      $apply: `filter(CharacteristicName eq 'pH')/${apply}`,
      $filter: "Mean gt 7",
    });
    const inside = await all("Observations", {
      $apply: `filter(CharacteristicName eq 'pH')/${apply}/filter(Mean gt 7)`,
    });
    assert.ok(outside.length > 0);
    assert.deepEqual(outside, inside);
    for (const row of inside) assert.ok((row["Mean"] as number) > 7);
  });

  it("takes $select, $orderby, $skip and $top over the aggregated rows", async () => {
    const apply = "groupby((DOI), aggregate($count as N, LocationId with countdistinct as L))";
    const whole = (await get("Observations", { $apply: apply })).value;
    const page = await get("Observations", {
      $apply: apply,
      $select: "N,DOI",
      $orderby: "N desc",
      $skip: "1",
      $top: "2",
    });
    assert.equal(page["@odata.context"], `${ORIGIN}${BASE}/$metadata#Observations(N,DOI)`);
    const sorted = [...whole].sort((a, b) => (b["N"] as number) - (a["N"] as number));
    assert.deepEqual(
      page.value,
      sorted.slice(1, 3).map((row) => ({ "@odata.id": null, N: row["N"], DOI: row["DOI"] })),
    );
    assert.ok(page["@odata.nextLink"]?.includes("$skip=3"));
  });

  it("answers the orderby, top and topcount transformations", async () => {
    const ordered = await get("Observations", {
      $apply: "groupby((DOI), aggregate($count as N))/orderby(N desc)/top(3)",
    });
    const top = await get("Observations", {
      $apply: "groupby((DOI), aggregate($count as N))/topcount(3, N)",
    });
    assert.equal(ordered.value.length, 3);
    assert.deepEqual(top.value, ordered.value);
  });

  it("answers CSV, with the selected aggregated columns", async () => {
    const result = await call(
      handler,
      target("Observations", {
        $apply: "groupby((ActivityStartYear), aggregate($count as N))",
        $format: "csv",
      }),
    );
    assert.equal(result.status, 200);
    assert.match(result.headers["content-type"]!, /^text\/csv/);
    const lines = result.text.trimEnd().split("\r\n");
    assert.equal(lines[0], "ActivityStartYear,N");
    const json = (await get("Observations", {
      $apply: "groupby((ActivityStartYear), aggregate($count as N))",
    })).value;
    assert.deepEqual(lines.slice(1), json.map((row) => `${row["ActivityStartYear"]},${row["N"]}`));
  });

  it("answers an $apply of filters as the rows $filter selects, keeping it in the next link", async () => {
    const filter = "CharacteristicName eq 'pH' and ResultValue gt 7";
    const plain = await call(handler, target("Observations", { $filter: filter, $top: "5" }));
    const applied = await call(
      handler,
      target("Observations", { $apply: `filter(${filter})`, $top: "5" }),
    );
    const ids = (text: string) => (JSON.parse(text) as AggregatePage).value.map((row) => row["Id"]);
    assert.deepEqual(ids(applied.text), ids(plain.text));
    const link = (JSON.parse(applied.text) as AggregatePage)["@odata.nextLink"];
    assert.ok(link?.includes("$apply=filter("), link);
  });
});

describe("$apply on a characteristic in two units", () => {
  it("answers a row a unit when grouped by ResultUnit, and counts the units when not", async () => {
    const readings = [[0.02, "mg/L"], [0.04, "mg/L"], [25, "µg/L"], [35, "µg/L"], [
      0.03,
      "mg/L",
    ]] as const;
    const csv = [
      FIXTURE_HEADER.join(","),
      ...readings.map(([value, unit]) =>
        fixtureRow({
          CharacteristicName: "Phosphorus, total",
          ResultValue: value,
          ResultUnit: unit,
        })
      ),
    ].join("\n") + "\n";
    const { store: units } = buildStore([{
      folder: "units",
      metadata: { DOI: "10.25976/unit-s003", DatasetName: "Units", RegionIds: ["hub.atlantic"] },
      csv,
    }]);
    const h = waterHandler(units);
    const rows = async (apply: string): Promise<Row[]> => {
      const result = await call(h, target("Observations", { $apply: apply }));
      assert.equal(result.status, 200, result.text);
      return (result.json() as AggregatePage).value;
    };
    const byUnit = await rows(
      "groupby((CharacteristicName,ResultUnit), aggregate($count as N, ResultValue with average as Mean, ResultValue with max as High))",
    );
    assert.deepEqual(byUnit.map((row) => [row["ResultUnit"], row["N"], row["High"]]), [
      ["mg/L", 3, 0.04],
      ["µg/L", 2, 35],
    ]);
    assert.ok(Math.abs((byUnit[0]!["Mean"] as number) - 0.03) < 1e-17);
    assert.equal(byUnit[1]!["Mean"], 30);
    // Grouped without the unit, the units are counted, so that a mean over both is seen for what it is.
    const [whole] = await rows(
      "groupby((CharacteristicName), aggregate(ResultUnit with countdistinct as Units, ResultUnit with min as Unit))",
    );
    assert.deepEqual([whole!["Units"], whole!["Unit"]], [2, "mg/L"]);
  });
});

describe("$apply on /Records", () => {
  it("groups by dataset-level fields", async () => {
    const rows = await all("Records", {
      $apply: "groupby((DOI, DatasetName), aggregate($count as N, ResultValue with max as Max))",
    });
    assert.equal(rows.length, store.datasetCount);
    assert.equal(rows.reduce((sum, row) => sum + (row["N"] as number), 0), store.observationCount);
  });
});

describe("$apply errors", () => {
  const cases = [
    {
      name: "a 5,000-deep filter",
      options: { $apply: `filter(${"(".repeat(5000)}ResultValue gt 1${")".repeat(5000)})` },
      status: 400,
      code: "ERR_ODATA_SYNTAX",
      target: "$apply",
    },
    {
      name: "a huge $apply",
      options: { $apply: `aggregate(${"ResultValue with sum as S, ".repeat(1000)}$count as N)` },
      status: 400,
      code: "ERR_ODATA_SYNTAX",
      target: "$apply",
    },
    {
      name: "an unknown property",
      options: { $apply: "groupby((Colour))" },
      status: 400,
      code: "ERR_ODATA_UNKNOWN_FIELD",
      target: "Colour",
    },
    {
      name: "averaging text",
      options: { $apply: "aggregate(CharacteristicName with average as A)" },
      status: 400,
      code: "ERR_ODATA_TYPE",
      target: "CharacteristicName",
    },
    {
      name: "grouping by RegionId",
      options: { $apply: "groupby((RegionId))" },
      status: 400,
      code: "ERR_ODATA_UNSUPPORTED",
      target: "RegionId",
    },
    {
      name: "a transformation out of scope",
      options: { $apply: "concat(identity, aggregate($count as N))" },
      status: 400,
      code: "ERR_ODATA_UNSUPPORTED",
      target: "$apply",
    },
    {
      name: "$skiptoken on aggregated rows",
      options: { $apply: "groupby((DOI))", $skiptoken: "Id:3" },
      status: 400,
      code: "ERR_ODATA_QUERY_OPTION",
      target: "$skiptoken",
    },
    {
      name: "$orderby on a property the aggregation dropped",
      options: { $apply: "groupby((DOI))", $orderby: "ResultValue" },
      status: 400,
      code: "ERR_ODATA_UNKNOWN_FIELD",
      target: "ResultValue",
    },
    {
      name: "$select of a property the aggregation dropped",
      options: { $apply: "groupby((DOI))", $select: "Id" },
      status: 400,
      code: "ERR_ODATA_UNKNOWN_FIELD",
      target: "Id",
    },
  ] as const;
  for (const c of cases) {
    it(`answers ${c.status} ${c.code} for ${c.name}`, async () => {
      const { status, error } = await refused("Observations", c.options);
      assert.equal(status, c.status, error.message);
      assert.equal(error.code, c.code);
      assert.equal(error.target, c.target);
    });
  }

  it("says to filter by region when grouping by RegionId", async () => {
    const { error } = await refused("Observations", { $apply: "groupby((RegionId))" });
    assert.match(error.message, /filter by region/);
  });

  it("answers 408 ERR_HTTP_TIMEOUT when an aggregation passes the deadline, on each collection", async () => {
    for (
      const [collection, apply] of [
        ["Observations", "groupby((LocationId,CharacteristicName), aggregate($count as N))"],
        ["Locations", "filter(ResultValue gt 1)/groupby((DOI), aggregate($count as N))"],
      ] as const
    ) {
      // Every clock reading is 100 ms later, so the first checkpoint is past the deadline.
      let t = 0;
      const slow = waterHandler(store, { queryTimeoutMs: 50, now: () => (t += 100) });
      const { status, error } = await refused(collection, { $apply: apply }, slow);
      assert.deepEqual([status, error.code], [408, "ERR_HTTP_TIMEOUT"], collection);
    }
  });

  it("answers 400 ERR_WATER_TOO_MANY_GROUPS above maxGroups", async () => {
    const small = waterHandler(store, { maxGroups: 10 });
    const { status, error } = await refused(
      "Observations",
      { $apply: "groupby((LocationId))" },
      small,
    );
    assert.equal(status, 400);
    assert.equal(error.code, "ERR_WATER_TOO_MANY_GROUPS");
  });

  it("answers 413 above the response limit, counted in UTF-8 bytes, for JSON and CSV", async () => {
    // Units with non-ASCII characters: the answer's bytes exceed its UTF-16 length.
    const csv = [
      FIXTURE_HEADER.join(","),
      ...["µS/cm", "°C", "mg/L"].map((unit, i) =>
        fixtureRow({ ResultValue: i + 1, ResultUnit: unit })
      ),
    ].join("\n") + "\n";
    const { store: units } = buildStore([{
      folder: "units",
      metadata: { DOI: "10.25976/unit-s001", DatasetName: "Units", RegionIds: ["hub.atlantic"] },
      csv,
    }]);
    for (const format of ["json", "csv"]) {
      const options = { $apply: "groupby((ResultUnit))", $format: format };
      const text = (await call(waterHandler(units), target("Observations", options))).text;
      const bytes = Buffer.byteLength(text);
      assert.ok(bytes > text.length, `${format}: non-ASCII in ${text}`);
      const exact = waterHandler(units, { maxResponseBytes: bytes });
      assert.equal((await call(exact, target("Observations", options))).status, 200, format);
      const under = waterHandler(units, { maxResponseBytes: text.length });
      const { status, error } = await refused("Observations", options, under);
      assert.deepEqual([status, error.code], [413, "ERR_WATER_RESPONSE_TOO_LARGE"], format);
    }
  });

  it("refuses $apply on /Metadata and on one entity", async () => {
    const datasets = await refused("Metadata", { $apply: "aggregate($count as N)" });
    assert.deepEqual([datasets.status, datasets.error.code], [400, "ERR_ODATA_UNSUPPORTED"]);
    assert.match(datasets.error.message, /\/Locations or the observations on \/Observations/);
    for (const path of ["Observations(1)", "Locations(1)"]) {
      const entity = await call(handler, `${BASE}/${path}?$apply=identity`);
      assert.equal(entity.status, 400, path);
    }
  });
});

describe("$apply on /Locations", () => {
  /** Every location, as /Locations lists them, with a filter when given. */
  async function locations(filter?: string): Promise<Row[]> {
    const page = await get("Locations", {
      $top: "10000",
      ...(filter === undefined ? {} : { $filter: filter }),
    });
    assert.equal(page["@odata.nextLink"], undefined);
    return page.value;
  }

  it("groups the locations by their own and their dataset's fields, paged like any result", async () => {
    const rows = await all("Locations", {
      $apply:
        "groupby((DOI,MonitoringLocationType), aggregate($count as N, Latitude with min as South, Latitude with max as North))",
      $top: "5",
    });
    const every = await locations();
    const expected = new Map<string, { n: number; south: number; north: number }>();
    for (const l of every) {
      const key = `${l["DOI"]}|${l["MonitoringLocationType"]}`;
      const group = expected.get(key) ?? { n: 0, south: Infinity, north: -Infinity };
      group.n++;
      group.south = Math.min(group.south, l["Latitude"] as number);
      group.north = Math.max(group.north, l["Latitude"] as number);
      expected.set(key, group);
    }
    assert.equal(rows.length, expected.size);
    for (const row of rows) {
      assert.deepEqual(Object.keys(row), [
        "@odata.id",
        "DOI",
        "MonitoringLocationType",
        "N",
        "South",
        "North",
      ]);
      const group = expected.get(`${row["DOI"]}|${row["MonitoringLocationType"]}`);
      assert.deepEqual([row["N"], row["South"], row["North"]], [
        group?.n,
        group?.south,
        group?.north,
      ]);
    }
  });

  it("keeps a location when one of its observations passes the filter, as $filter does", async () => {
    const filter = "CharacteristicName eq 'pH' and ResultValue gt 8";
    const kept = await locations(filter);
    assert.ok(kept.length > 0 && kept.length < store.locationCount, `${kept.length} locations`);
    const [row] = (await get("Locations", {
      $apply: `filter(${filter})/aggregate($count as N, Longitude with average as West)`,
    })).value;
    assert.equal(row!["N"], kept.length);
    const mean = kept.reduce((sum, l) => sum + (l["Longitude"] as number), 0) / kept.length;
    assert.ok(Math.abs((row!["West"] as number) - mean) < 1e-9, `${row!["West"]} vs ${mean}`);
    // A region is a filter on /Locations too.
    const atlantic = await all("Locations", {
      $apply: "filter(RegionId eq 'hub.atlantic')/groupby((DOI), aggregate($count as N))",
    });
    const inRegion = await locations("RegionId eq 'hub.atlantic'");
    assert.equal(atlantic.reduce((sum, r) => sum + (r["N"] as number), 0), inRegion.length);
  });

  it("equals the plain locations on random filters, groupings and aggregates", async () => {
    const seed = 3001;
    console.log(`# seed ${seed}`);
    const prng = createPrng(seed);
    const filters = [
      undefined,
      "Latitude gt 47",
      "CharacteristicName eq 'Temperature, water'",
      "RegionId eq 'hub.pacific' or MonitoringLocationType eq 'Lake/Pond'",
      "ActivityStartYear le 2016",
    ];
    const keys = ["DOI", "MonitoringLocationType", "HorizontalCoordinateReferenceSystem"];
    for (let trial = 0; trial < 12; trial++) {
      const filter = prng.pick(filters);
      const groups = keys.filter(() => prng.next() < 0.5);
      const aggregate =
        "aggregate($count as N, Latitude with sum as S, Longitude with min as Lo, ID with countdistinct as D)";
      const apply = `${filter === undefined ? "" : `filter(${filter})/`}${
        groups.length === 0 ? aggregate : `groupby((${groups.join(",")}), ${aggregate})`
      }`;
      const got = await all("Locations", { $apply: apply, $top: String(1 + prng.int(6)) });
      const reference = new Map<string, Row[]>();
      for (const l of await locations(filter)) {
        const key = JSON.stringify(groups.map((g) => l[g]));
        reference.set(key, [...(reference.get(key) ?? []), l]);
      }
      if (groups.length === 0 && reference.size === 0) reference.set("[]", []);
      assert.equal(got.length, reference.size, apply);
      for (const row of got) {
        const members = reference.get(JSON.stringify(groups.map((g) => row[g])));
        assert.ok(members !== undefined, `${apply}: ${JSON.stringify(row)}`);
        assert.equal(row["N"], members.length, apply);
        assert.equal(row["D"], new Set(members.map((l) => l["ID"])).size, apply);
        const lows = members.map((l) => l["Longitude"] as number);
        assert.equal(row["Lo"], lows.length === 0 ? null : Math.min(...lows), apply);
        const sum = members.reduce((total, l) => total + (l["Latitude"] as number), 0);
        const bound = 4 * Number.EPSILON * members.length * Math.max(1, Math.abs(sum));
        if (members.length === 0) assert.equal(row["S"], null, apply);
        else {assert.ok(
            Math.abs((row["S"] as number) - sum) <= bound,
            `${apply}: ${row["S"]} vs ${sum}`,
          );}
      }
    }
  });

  const refusals = [
    {
      name: "grouping by an observation's field",
      apply: "groupby((CharacteristicName))",
      target: "CharacteristicName",
      message: /a location has many observations/,
    },
    {
      name: "averaging an observation's value",
      apply: "aggregate(ResultValue with average as M)",
      target: "ResultValue",
      message: /aggregate the observations on \/Observations/,
    },
    {
      name: "grouping by RegionId",
      apply: "groupby((RegionId))",
      target: "RegionId",
      message: /filter by region/,
    },
    {
      name: "filters alone",
      apply: "filter(Latitude gt 45)",
      target: "$apply",
      message: /select locations with \$filter/,
    },
    {
      name: "identity alone",
      apply: "identity",
      target: "$apply",
      message: /neither groups nor aggregates/,
    },
    {
      name: "two filters that test observations",
      apply: "filter(CharacteristicName eq 'pH')/filter(ResultValue gt 8)/aggregate($count as N)",
      target: "$apply",
      message: /at position 35 .*join them with and in one filter/,
    },
  ] as const;
  for (const c of refusals) {
    it(`refuses ${c.name} with 400 ERR_ODATA_UNSUPPORTED`, async () => {
      const { status, error } = await refused("Locations", { $apply: c.apply });
      assert.deepEqual([status, error.code, error.target], [
        400,
        "ERR_ODATA_UNSUPPORTED",
        c.target,
      ]);
      assert.match(error.message, c.message);
    });
  }

  it("chains filters on the locations' own fields", async () => {
    const [row] = (await get("Locations", {
      $apply:
        "filter(Latitude gt 45)/filter(MonitoringLocationType eq 'Lake/Pond')/aggregate($count as N)",
    })).value;
    assert.equal(
      row!["N"],
      (await locations("Latitude gt 45 and MonitoringLocationType eq 'Lake/Pond'")).length,
    );
  });
});

describe("aggregatedRows()", () => {
  it("cuts every page of a result from rows aggregated and sorted once", () => {
    const { settings } = serveStore(store, {
      timeout: 60_000,
      compressAbove: Infinity,
      maxBytes: 1 << 24,
      defaultTop: 1000,
      renderCacheBytes: 0,
      maxGroups: 100_000,
    }, { filters: new Map(), applies: new Map() });
    const collection = COLLECTIONS.get("Observations")!;
    const text = "groupby((LocationId), aggregate(ResultValue with average as Mean))";
    const apply = prepareApply(collection, text);
    const deadline = createDeadline(60_000, () => 0);
    const rowsOf = (query: string) =>
      aggregatedRows(
        store,
        collection,
        apply,
        readQueryOptions(parseQuery(query.replaceAll(" ", "%20"))),
        deadline,
        settings,
      );
    const first = rowsOf(`$apply=${text}&$orderby=Mean desc&$top=10`);
    assert.equal(rowsOf(`$apply=${text}&$orderby=Mean desc&$top=10&$skip=10`).order, first.order);
    assert.equal(
      rowsOf(`$apply=${text}&$orderby=Mean desc&$skip=190&$format=csv`).order,
      first.order,
    );
    const ascending = rowsOf(`$apply=${text}&$orderby=Mean`);
    assert.notEqual(ascending.order, first.order);
    const ids = (result: AggregatedResult) =>
      Array.from(result.order, (g) => cellOf(result.columns[0]!, g));
    assert.deepEqual(ids(ascending), ids(first).reverse());
    assert.notEqual(
      rowsOf(`$apply=${text}&$filter=Mean gt 7&$orderby=Mean desc`).order,
      first.order,
    );
    // Without $filter or $orderby, every page is cut from the groups' kept order.
    const plain = rowsOf(`$apply=${text}&$top=10`);
    assert.equal(rowsOf(`$apply=${text}&$top=10&$skip=10`).order, plain.order);
  });
});

describe("$metadata", () => {
  it("announces ApplySupported on the observation sets, with their groupable and aggregatable properties", async () => {
    const xml = (await call(handler, `${BASE}/$metadata`)).text;
    assert.match(
      xml,
      /<edmx:Include Namespace="Org\.OData\.Aggregation\.V1" Alias="Aggregation"\/>/,
    );
    const sets = [...xml.matchAll(/<EntitySet Name="(\w+)"[^/]*?>([\s\S]*?)<\/EntitySet>/g)];
    assert.deepEqual(sets.map((set) => set[1]), ["Locations", "Observations", "Records"]);
    assert.match(xml, /<EntitySet Name="Metadata" EntityType="DataStream\.Metadata"\/>/);
    const locations = sets[0]![2]!;
    assert.match(locations, /<PropertyPath>MonitoringLocationType<\/PropertyPath>/);
    assert.match(locations, /<PropertyPath>DOI<\/PropertyPath>/);
    assert.match(locations, /<PropertyValue Property="Property" PropertyPath="Latitude"\/>/);
    assert.doesNotMatch(locations, /CharacteristicName|ResultValue|RegionId/);
    for (const set of sets.slice(1)) {
      const body = set[2]!;
      assert.match(body, /<Annotation Term="Aggregation\.ApplySupported">/);
      assert.match(body, /<String>groupby<\/String>/);
      assert.match(body, /<PropertyPath>CharacteristicName<\/PropertyPath>/);
      assert.match(body, /<PropertyValue Property="Property" PropertyPath="ResultValue"\/>/);
      assert.doesNotMatch(body, /PropertyPath="CharacteristicName"/);
    }
  });
});

describe("$apply: the README's five questions, one request each", () => {
  const questions = [
    {
      name: "mean pH per location per year",
      apply:
        "filter(CharacteristicName eq 'pH')/groupby((LocationId,ActivityStartYear), aggregate(ResultValue with average as MeanPH, $count as N))",
      shape: ["LocationId", "ActivityStartYear", "MeanPH", "N"],
    },
    {
      name: "readings and locations per dataset",
      apply:
        "groupby((DOI), aggregate($count as Readings, LocationId with countdistinct as Locations))",
      shape: ["DOI", "Readings", "Locations"],
    },
    {
      name: "monthly temperature trend of one location",
      apply:
        "filter(CharacteristicName eq 'Temperature, water' and LocationId eq 12)/compute(year(ActivityStartDate) as Year, month(ActivityStartDate) as Month)/groupby((Year,Month), aggregate(ResultValue with average as MeanTemperature))",
      shape: ["Year", "Month", "MeanTemperature"],
    },
    {
      name: "range of a characteristic, by unit, in one region",
      apply:
        "filter(RegionId eq 'hub.atlantic' and CharacteristicName eq 'Dissolved oxygen (DO)')/groupby((ResultUnit), aggregate(ResultValue with min as Low, ResultValue with max as High))",
      shape: ["ResultUnit", "Low", "High"],
    },
    {
      name: "locations whose mean exceeds a threshold",
      apply:
        "filter(CharacteristicName eq 'pH')/groupby((LocationId), aggregate(ResultValue with average as MeanPH))/filter(MeanPH gt 8)",
      shape: ["LocationId", "MeanPH"],
    },
  ] as const;
  for (const q of questions) {
    it(`answers ${q.name}`, async () => {
      const rows = await all("Observations", { $apply: q.apply });
      assert.ok(rows.length > 0, "some rows");
      for (const row of rows) assert.deepEqual(Object.keys(row), ["@odata.id", ...q.shape]);
    });
  }

  it("counts the readings per dataset as the datasets' own $count does", async () => {
    const rows = await all("Observations", {
      $apply: "groupby((DOI), aggregate($count as Readings))",
    });
    for (const row of rows.slice(0, 3)) {
      assert.equal(
        row["Readings"],
        await count("Observations", { $filter: `DOI eq '${row["DOI"]}'` }),
      );
    }
  });
});

describe("$apply: random expressions", () => {
  const pieces = [
    "groupby((",
    "aggregate(",
    "filter(",
    "compute(",
    "topcount(2,",
    "orderby(",
    "top(3)",
    "/",
    ")",
    "(",
    ",",
    " as X",
    " as Y",
    " with sum",
    " with average",
    " with countdistinct",
    "$count",
    "ResultValue",
    "CharacteristicName",
    "LocationId",
    "RegionId",
    "Latitude",
    "DOI",
    "year(ActivityStartDate)",
    " gt 7",
    " eq 'pH'",
    " mul 2",
    " div 0",
    "X",
    "'",
    "99999999999999999999",
  ];
  it("answers 200 or a 4xx JSON error, never a 5xx", async () => {
    const prng = createPrng(30);
    for (let i = 0; i < 400; i++) {
      const text = Array.from({ length: 1 + prng.int(14) }, () => prng.pick(pieces)).join("");
      const collection = i < 300 ? "Observations" : "Locations";
      const result = await call(handler, target(collection, { $apply: text, $top: "5" }));
      assert.ok(
        result.status === 200 || result.status === 400,
        `${result.status} for $apply=${text}`,
      );
      if (result.status === 400) {
        const body = result.json() as { error: { code: string } };
        assert.match(body.error.code, /^ERR_(ODATA|WATER)_/, text);
      }
    }
  });
});
