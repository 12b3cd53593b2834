import assert from "node:assert/strict";
import { before, describe, it } from "node:test";
import type { Handler } from "../../lib/http/mod.ts";
import type { WaterStore } from "../../lib/water/mod.ts";
import { call, demoStore, type Page, waterHandler } from "../_helpers/water.ts";

const BASE = "/v1/odata/v4";
let store: WaterStore;
let handler: Handler;

before(async () => {
  store = (await demoStore()).store;
  handler = waterHandler(store);
});

async function page(target: string, headers?: Record<string, string>): Promise<Page> {
  const result = await call(
    handler,
    target,
    headers === undefined ? {} : { headers: { "x-api-key": "test-key", ...headers } },
  );
  assert.equal(result.status, 200, `${target}: ${result.text.slice(0, 300)}`);
  return result.json() as Page;
}

async function count(collection: string, filter?: string): Promise<number> {
  const query = filter === undefined
    ? "$count=true"
    : `$count=true&$filter=${encodeURIComponent(filter)}`;
  const body = await page(`${BASE}/${collection}?${query}`) as unknown as {
    "@odata.count": number;
    value: number;
  };
  assert.equal(body.value, body["@odata.count"]);
  return body.value;
}

async function ids(target: string): Promise<unknown[]> {
  return (await page(target)).value.map((row) => row["Id"]);
}

function names(): string[] {
  const column = store.column("observation.CharacteristicName");
  assert.ok(column?.kind === "dict");
  return column.values.filter((v): v is string => typeof v === "string");
}

describe("water service: the demo data", () => {
  it("meets the demo data's size requirements", async () => {
    assert.ok(store.datasetCount >= 6, `datasets ${store.datasetCount}`);
    assert.ok(store.locationCount >= 150, `locations ${store.locationCount}`);
    assert.ok(store.observationCount >= 100_000, `observations ${store.observationCount}`);
    assert.ok(names().length >= 40, `characteristic names ${names().length}`);
    assert.ok(
      names().some((n) => n.includes(",")) && names().some((n) => n.includes("'")) &&
        names().some((n) => n.includes("(")),
    );
    const regions = new Set(
      store.datasets.flatMap((d) => store.locationRowStarts.length > 0 ? [d.folder] : []),
    );
    assert.ok(regions.size >= 6);
    const years = store.column("observation.ActivityStartYear");
    assert.ok(years?.kind === "dict");
    const span = years.values.filter((v): v is number => typeof v === "number");
    assert.ok(
      Math.max(...span) - Math.min(...span) >= 10,
      `years ${Math.min(...span)}..${Math.max(...span)}`,
    );
    const { report } = await demoStore();
    assert.deepEqual(report.failures, []);
    assert.ok(report.datasets.every((d) => d.skippedRows === 0));
  });
});

describe("water service: DataStream compatibility checklist", () => {
  it("reads $name and %24name alike", async () => {
    const filter = encodeURIComponent("CharacteristicName eq 'pH'");
    assert.deepEqual(
      await ids(`${BASE}/Observations?%24top=7&%24filter=${filter}&%24select=Id`),
      await ids(`${BASE}/Observations?$top=7&$filter=${filter}&$select=Id`),
    );
  });

  it("reads + and %20 as spaces alike", async () => {
    assert.deepEqual(
      await ids(`${BASE}/Observations?$top=7&$filter=CharacteristicName+eq+'pH'`),
      await ids(`${BASE}/Observations?$top=7&$filter=CharacteristicName%20eq%20'pH'`),
    );
  });

  it("ignores empty parameters", async () => {
    assert.deepEqual(
      await ids(`${BASE}/Locations?$top=5&$skip=&$skiptoken=&$count=&$orderby=&$filter=&$select=`),
      await ids(`${BASE}/Locations?$top=5`),
    );
  });

  it("reads lte and gte as le and ge", async () => {
    const a = await count(
      "Observations",
      "ActivityStartYear gte 2016 and ActivityStartYear lte 2018",
    );
    const b = await count(
      "Observations",
      "ActivityStartYear ge 2016 and ActivityStartYear le 2018",
    );
    assert.equal(a, b);
    assert.ok(a > 0);
  });

  it("reads in (...) with values that contain commas", async () => {
    const both = await count("Observations", "CharacteristicName in ('Temperature, water', 'pH')");
    const temperature = await count("Observations", "CharacteristicName eq 'Temperature, water'");
    const ph = await count("Observations", "CharacteristicName eq 'pH'");
    assert.ok(temperature > 0 && ph > 0);
    assert.equal(both, temperature + ph);
  });

  it("reads '' as an apostrophe inside a string", async () => {
    const name = names().find((n) => n.includes("'"))!;
    const rows = (await page(
      `${BASE}/Observations?$top=3&$select=CharacteristicName&$filter=${
        encodeURIComponent(`CharacteristicName eq '${name.replaceAll("'", "''")}'`)
      }`,
    )).value;
    assert.ok(rows.length > 0);
    assert.ok(rows.every((row) => row["CharacteristicName"] === name));
  });

  it("reads quoted and unquoted numbers alike", async () => {
    assert.deepEqual(
      await ids(`${BASE}/Observations?$top=20&$select=Id&$filter=LocationId eq 3`),
      await ids(`${BASE}/Observations?$top=20&$select=Id&$filter=LocationId eq '3'`),
    );
    assert.equal(
      await count("Locations", "Latitude gt '49'"),
      await count("Locations", "Latitude gt 49"),
    );
  });

  it("reads quoted and unquoted dates alike", async () => {
    const unquoted = await count("Metadata", "CreateTimestamp gt 2019-01-01");
    assert.equal(unquoted, await count("Metadata", "CreateTimestamp gt '2019-01-01'"));
    assert.ok(unquoted > 0 && unquoted < store.datasetCount + 1);
    assert.equal(
      await count("Observations", "ActivityStartDate ge 2020-06-01"),
      await count("Observations", "ActivityStartDate ge '2020-06-01'"),
    );
  });

  it("answers /Locations filtered by LocationId", async () => {
    assert.deepEqual(await ids(`${BASE}/Locations?$filter=LocationId eq 4`), [4]);
  });

  it("answers /Locations filtered on observation fields with the locations that have such observations", async () => {
    const located = new Set<unknown>();
    let target: string | undefined = `${BASE}/Observations?$top=10000&$select=LocationId&$filter=${
      encodeURIComponent("CharacteristicName eq 'pH' and ActivityStartYear eq 2019")
    }`;
    while (target !== undefined) {
      const result: Page = await page(target.replace("http://localhost:8000", ""));
      for (const row of result.value) located.add(row["LocationId"]);
      target = result["@odata.nextLink"];
    }
    const listed = await ids(
      `${BASE}/Locations?$top=10000&$select=Id&$filter=${
        encodeURIComponent("CharacteristicName eq 'pH' and ActivityStartYear eq 2019")
      }`,
    );
    assert.ok(listed.length > 0);
    assert.deepEqual(listed, [...located].sort((a, b) => Number(a) - Number(b)));
  });

  it("answers /Metadata filtered by Id eq '<uuid>'", async () => {
    const dataset = store.datasets[2]!;
    const rows = (await page(`${BASE}/Metadata?$filter=Id eq '${dataset.id}'`)).value;
    assert.deepEqual(rows.map((row) => row["DOI"]), [dataset.doi]);
  });

  it("answers /Metadata filtered on location and observation fields", async () => {
    const doi = store.datasets[1]!.doi;
    const firstLocation = store.datasetLocationStarts[1]! + 1;
    const rows =
      (await page(`${BASE}/Metadata?$select=DOI&$filter=LocationId eq ${firstLocation}`)).value;
    assert.deepEqual(rows.map((row) => row["DOI"]), [doi]);
    const withPh = await count("Metadata", "CharacteristicName eq 'pH'");
    assert.ok(withPh >= 1 && withPh <= store.datasetCount);
  });

  it("answers Accept: application/vnd.api+json with JSON", async () => {
    const result = await call(handler, `${BASE}/Locations?$top=1`, {
      headers: { "x-api-key": "test-key", accept: "application/vnd.api+json" },
    });
    assert.equal(result.status, 200);
    assert.match(result.headers["content-type"]!, /^application\/(.+\+)?json($|;.+)/);
    assert.equal((result.json() as Page).value.length, 1);
  });

  it('answers $count=true with {"@odata.count": n, "value": n} and no rows or link', async () => {
    const result = await call(handler, `${BASE}/Observations?$count=true&$top=5`);
    const body = result.json() as Record<string, unknown>;
    assert.deepEqual(Object.keys(body).sort(), ["@odata.count", "value"]);
    assert.equal(body["value"], store.observationCount);
    assert.equal(result.headers["link"], undefined);
  });

  it("answers /<Collection>/$count as plain text", async () => {
    const result = await call(handler, `${BASE}/Locations/$count`);
    assert.equal(result.text, String(store.locationCount));
    assert.match(result.headers["content-type"]!, /^text\/plain/);
    const filtered = await call(
      handler,
      `${BASE}/Observations/%24count?$filter=${encodeURIComponent("CharacteristicName eq 'pH'")}`,
    );
    assert.equal(Number(filtered.text), await count("Observations", "CharacteristicName eq 'pH'"));
  });

  it("treats Id and ID on /Locations as different fields", async () => {
    const row = (await page(`${BASE}/Locations?$top=1&$skiptoken=Id:9&$select=Id,ID`)).value[0]!;
    assert.equal(row["Id"], 10);
    assert.equal(typeof row["ID"], "string");
    assert.deepEqual(
      await ids(
        `${BASE}/Locations?$select=Id&$filter=ID eq '${
          String(row["ID"]).replaceAll("'", "''")
        }' and Id eq 10`,
      ),
      [10],
    );
    const lower = await call(handler, `${BASE}/Locations?$select=id`);
    assert.equal(lower.status, 400);
  });

  it("returns the field types of the real API", async () => {
    const observation = (await page(`${BASE}/Observations?$top=1&$filter=ResultValue ne null`))
      .value[0]!;
    assert.equal(typeof observation["Id"], "number");
    assert.equal(typeof observation["LocationId"], "number");
    assert.match(String(observation["DOI"]), /^10\.25976\//);
    assert.equal(typeof observation["ResultValue"], "number");
    assert.match(String(observation["ActivityStartDate"]), /^\d{4}-\d{2}-\d{2}$/);
    assert.ok(Object.values(observation).includes(null));
    const metadata = (await page(`${BASE}/Metadata?$top=1`)).value[0]!;
    assert.match(String(metadata["Id"]), /^[0-9a-f-]{36}$/);
    assert.ok(Array.isArray(metadata["Keywords"]) && Array.isArray(metadata["TopicCategoryCode"]));
    assert.match(String(metadata["CreateTimestamp"]), /^\d{4}-\d{2}-\d{2}T/);
  });

  it("reads an entity by key in every collection, as generic OData clients do, with @odata.context", async () => {
    for (const name of ["Metadata", "Locations", "Observations", "Records"]) {
      const listed = await page(`${BASE}/${name}?$top=3`);
      assert.equal(
        (listed as unknown as Record<string, unknown>)["@odata.context"],
        `http://localhost:8000${BASE}/$metadata#${name}`,
      );
      const row = listed.value[2]!;
      const key = String(row["Id"]);
      const result = await call(handler, `${BASE}/${name}(${key})`);
      assert.equal(result.status, 200, `${name}(${key}): ${result.text.slice(0, 200)}`);
      const { "@odata.context": context, ...entity } = result.json() as Record<string, unknown>;
      assert.equal(context, `http://localhost:8000${BASE}/$metadata#${name}/$entity`);
      assert.deepEqual(entity, row, `${name}(${key}) is the row the collection lists`);
      const selected = (await call(handler, `${BASE}/${name}('${key}')?$select=Id`))
        .json() as Record<string, unknown>;
      assert.deepEqual(selected, {
        "@odata.context": `http://localhost:8000${BASE}/$metadata#${name}(Id)/$entity`,
        Id: row["Id"],
      });
    }
    assert.equal((await call(handler, `${BASE}/Locations(999999999)`)).status, 404);
    assert.equal((await call(handler, `${BASE}/Locations(abc)`)).status, 404);
    assert.equal((await call(handler, `${BASE}/Metadata(42)`)).status, 404);
    assert.equal((await call(handler, `${BASE}/Lakes(1)`)).status, 404);
  });

  it("passes over $skip matching rows, pages on from there, and skips CSV rows alike", async () => {
    const filter = encodeURIComponent("CharacteristicName eq 'pH'");
    const all = (await page(`${BASE}/Observations?$filter=${filter}&$top=300&$select=Id`)).value
      .map((row) => row["Id"]);
    const skipped = await page(
      `${BASE}/Observations?$filter=${filter}&$top=50&$skip=120&$select=Id`,
    );
    assert.deepEqual(skipped.value.map((row) => row["Id"]), all.slice(120, 170));
    const next = (skipped as unknown as { "@odata.nextLink": string })["@odata.nextLink"];
    assert.doesNotMatch(next, /\$skip=/, "the next link carries a token, not the skip");
    assert.deepEqual(
      (await page(new URL(next).pathname + new URL(next).search)).value.map((row) => row["Id"]),
      all.slice(170, 220),
    );
    const csv = await call(
      handler,
      `${BASE}/Observations?$filter=${filter}&$skip=120&$select=Id&$format=csv`,
    );
    assert.deepEqual(csv.text.trim().split("\n").slice(1, 181).map(Number), all.slice(120, 300));
    assert.equal(
      (await page(`${BASE}/Observations?$filter=${filter}&$skip=1000000&$select=Id`)).value.length,
      0,
    );
  });

  it("orders by any field, asc or desc, several keys, equal to a sort of the unordered result; paging visits each row once", async () => {
    /** Every row of a query, page by page. */
    const every = async (target: string): Promise<Record<string, unknown>[]> => {
      const rows: Record<string, unknown>[] = [];
      let next: string | undefined = target;
      for (let pages = 0; next !== undefined && pages < 10_000; pages++) {
        const answer = await page(next);
        rows.push(...answer.value);
        const link = (answer as unknown as { "@odata.nextLink"?: string })["@odata.nextLink"];
        next = link === undefined ? undefined : new URL(link).pathname + new URL(link).search;
      }
      return rows;
    };
    const compare = (a: unknown, b: unknown): number => {
      if (a === b) return 0;
      if (a === null) return -1;
      if (b === null) return 1;
      if (typeof a === "number" && typeof b === "number") return a - b;
      return String(a) < String(b) ? -1 : 1;
    };
    const cases = [
      {
        collection: "Observations",
        filter: "CharacteristicName eq 'pH'",
        order: [["ResultValue", true], ["ActivityStartDate", false]],
        select: "Id,ResultValue,ActivityStartDate",
      },
      {
        collection: "Observations",
        filter: "ActivityStartYear eq '2015'",
        order: [["CharacteristicName", false], ["ResultValue", false]],
        select: "Id,CharacteristicName,ResultValue",
      },
      {
        collection: "Records",
        filter: "CharacteristicName eq 'Temperature, water'",
        order: [["MonitoringLocationName", true]],
        select: "Id,MonitoringLocationName",
      },
      { collection: "Locations", filter: undefined, order: [["Name", false]], select: "Id,Name" },
      {
        collection: "Metadata",
        filter: undefined,
        order: [["DatasetName", true]],
        select: "Id,DatasetName",
      },
    ] as const;
    for (const c of cases) {
      const filter = c.filter === undefined ? "" : `&$filter=${encodeURIComponent(c.filter)}`;
      const plain = await every(`${BASE}/${c.collection}?$top=10000&$select=${c.select}${filter}`);
      const idOrder = (a: Record<string, unknown>, b: Record<string, unknown>) =>
        compare(a["Id"], b["Id"]);
      const expected = [...plain].sort((a, b) => {
        for (const [name, descending] of c.order) {
          const difference = compare(a[name], b[name]);
          if (difference !== 0) return descending ? -difference : difference;
        }
        return idOrder(a, b);
      });
      const orderBy = c.order.map(([name, descending]) => `${name}${descending ? " desc" : ""}`)
        .join(",");
      const ordered = await every(
        `${BASE}/${c.collection}?$top=37&$select=${c.select}&$orderby=${
          encodeURIComponent(orderBy)
        }${filter}`,
      );
      assert.ok(plain.length > 37 || c.collection === "Metadata", `${c.collection}: several pages`);
      assert.deepEqual(ordered, expected, `${c.collection} ordered by ${orderBy}`);
      const skipped = await page(
        `${BASE}/${c.collection}?$top=5&$skip=3&$select=${c.select}&$orderby=${
          encodeURIComponent(orderBy)
        }${filter}`,
      );
      assert.deepEqual(
        skipped.value,
        expected.slice(3, 8),
        `${c.collection}: $skip under an order`,
      );
    }
    const json = await every(
      `${BASE}/Observations?$top=500&$select=Id&$orderby=${
        encodeURIComponent("ResultValue desc")
      }&$filter=${encodeURIComponent("CharacteristicName eq 'pH'")}`,
    );
    const csv = await call(
      handler,
      `${BASE}/Observations?$format=csv&$select=Id&$orderby=${
        encodeURIComponent("ResultValue desc")
      }&$filter=${encodeURIComponent("CharacteristicName eq 'pH'")}`,
    );
    assert.deepEqual(
      csv.text.trim().split("\n").slice(1).map(Number),
      json.map((row) => row["Id"]),
      "a CSV stream in the same order",
    );
    for (const bad of ["Nope", "Keywords", "Id sideways", "Id,Id"]) {
      const result = await call(
        handler,
        `${BASE}/${bad === "Keywords" ? "Metadata" : "Locations"}?$orderby=${
          encodeURIComponent(bad)
        }`,
      );
      assert.equal(result.status, 400, bad);
    }
  });

  it("derives TemporalExtent on /Metadata from the dataset's activity start dates, selectable and not filterable", async () => {
    const datasets = (await page(`${BASE}/Metadata?$select=DOI,TemporalExtent`)).value;
    assert.ok(datasets.length > 0);
    for (const dataset of datasets) {
      const extent = dataset["TemporalExtent"] as string[];
      // Every row of the dataset, page by page.
      const dates: string[] = [];
      let target: string | undefined =
        `${BASE}/Observations?$select=ActivityStartDate&$top=10000&$filter=${
          encodeURIComponent(`DOI eq '${String(dataset["DOI"])}'`)
        }`;
      for (let pages = 0; target !== undefined && pages < 1000; pages++) {
        const answer = await page(target);
        for (const row of answer.value) dates.push(String(row["ActivityStartDate"]));
        const next = (answer as unknown as { "@odata.nextLink"?: string })["@odata.nextLink"];
        target = next === undefined ? undefined : new URL(next).pathname + new URL(next).search;
      }
      dates.sort();
      assert.deepEqual(
        extent,
        dates.length === 0 ? [] : [dates[0], dates[dates.length - 1]],
        String(dataset["DOI"]),
      );
    }
    const filtered = await call(
      handler,
      `${BASE}/Metadata?$filter=${encodeURIComponent("TemporalExtent/any(d: d eq '2020-01-01')")}`,
    );
    assert.equal(filtered.status, 400, "not filterable, as DataStream documents");
  });

  it("lists the exact fields of each collection, in order", async () => {
    const expected: Record<string, string[]> = {
      Locations: [
        "Id",
        "DOI",
        "ID",
        "Name",
        "Latitude",
        "Longitude",
        "HorizontalCoordinateReferenceSystem",
        "HorizontalAccuracyMeasure",
        "HorizontalAccuracyUnit",
        "VerticalMeasure",
        "VerticalUnit",
        "MonitoringLocationType",
        "LatitudeNormalized",
        "LongitudeNormalized",
        "HorizontalCoordinateReferenceSystemNormalized",
      ],
      Observations: [
        "Id",
        "LocationId",
        "DOI",
        "ActivityType",
        "ActivityMediaName",
        "ActivityStartDate",
        "ActivityStartTime",
        "ActivityStartTimeZone",
        "ActivityEndDate",
        "ActivityEndTime",
        "ActivityEndTimeZone",
        "ActivityDepthHeightMeasure",
        "ActivityDepthHeightUnit",
        "SampleCollectionEquipmentName",
        "CharacteristicName",
        "MethodSpeciation",
        "ResultSampleFraction",
        "ResultValue",
        "ResultUnit",
        "ResultValueType",
        "ResultDetectionCondition",
        "ResultDetectionQuantitationLimitUnit",
        "ResultDetectionQuantitationLimitMeasure",
        "ResultDetectionQuantitationLimitType",
        "ResultStatusID",
        "ResultComment",
        "ResultAnalyticalMethodID",
        "ResultAnalyticalMethodContext",
        "ResultAnalyticalMethodName",
        "AnalysisStartDate",
        "AnalysisStartTime",
        "AnalysisStartTimeZone",
        "LaboratoryName",
        "LaboratorySampleID",
      ],
      Metadata: [
        "Id",
        "DOI",
        "Version",
        "DatasetName",
        "DataStewardEmail",
        "DataCollectionOrganization",
        "DataUploadOrganization",
        "ProgressCode",
        "MaintenanceFrequencyCode",
        "Abstract",
        "DataCollectionInformation",
        "DataProcessing",
        "FundingSources",
        "DataSourceURL",
        "OtherDataSources",
        "Citation",
        "Licence",
        "Disclaimer",
        "TopicCategoryCode",
        "Keywords",
        "CreateTimestamp",
        "PublishedTimestamp",
        "TemporalExtent",
      ],
    };
    const records = [
      "Id",
      "DOI",
      "DatasetName",
      "MonitoringLocationID",
      "MonitoringLocationName",
      "MonitoringLocationLatitude",
      "MonitoringLocationLongitude",
      "MonitoringLocationHorizontalCoordinateReferenceSystem",
      "MonitoringLocationHorizontalAccuracyMeasure",
      "MonitoringLocationHorizontalAccuracyUnit",
      "MonitoringLocationVerticalMeasure",
      "MonitoringLocationVerticalUnit",
      "MonitoringLocationType",
      ...expected["Observations"]!.slice(3),
    ];
    for (
      const [collection, fields] of [...Object.entries(expected), ["Records", records] as const]
    ) {
      const row = (await page(`${BASE}/${collection}?$top=1`)).value[0]!;
      assert.deepEqual(Object.keys(row), fields, collection);
    }
  });

  it("puts errors in an errors array as well as OData's error object", async () => {
    const result = await call(handler, `${BASE}/Observations?$filter=CharacteristicName eq`);
    assert.equal(result.status, 400);
    const body = result.json() as {
      error: Record<string, unknown>;
      errors: Record<string, unknown>[];
    };
    assert.equal(body.error["code"], "ERR_ODATA_SYNTAX");
    assert.deepEqual(body.errors, [body.error]);
    assert.deepEqual(body.error["innererror"], { position: 21 });
  });
});

describe("water service: documents", () => {
  it("serves the service document", async () => {
    const body = (await call(handler, BASE)).json() as { value: { name: string; url: string }[] };
    assert.deepEqual(body.value.map((set) => set.name), [
      "Metadata",
      "Locations",
      "Observations",
      "Records",
    ]);
  });

  it("serves $metadata as CSDL XML naming every entity set and property", async () => {
    const result = await call(handler, `${BASE}/$metadata`);
    assert.match(result.headers["content-type"]!, /^application\/xml/);
    for (const name of ["Metadata", "Locations", "Observations", "Records"]) {
      assert.match(
        result.text,
        new RegExp(`<EntitySet Name="${name}" EntityType="DataStream.${name}"/?>`),
      );
    }
    assert.match(result.text, /<Property Name="ResultValue" Type="Edm.Double"\/>/);
    assert.match(result.text, /<Property Name="Keywords" Type="Collection\(Edm.String\)"\/>/);
    assert.match(result.text, /<Property Name="Id" Type="Edm.Guid" Nullable="false"\/>/);
  });

  it("streams CSV for $format=csv in the Records column order", async () => {
    const result = await call(handler, `${BASE}/Records?$format=csv&$filter=LocationId eq 2`);
    assert.match(result.headers["content-type"]!, /^text\/csv/);
    const lines = result.text.trimEnd().split("\r\n");
    assert.ok(lines[0]!.startsWith("Id,DOI,DatasetName,MonitoringLocationID,"));
    const rows = store.locationRowStarts[2]! - store.locationRowStarts[1]!;
    const { parseCsv } = await import("../../lib/water/mod.ts");
    assert.equal(parseCsv(result.text).length, rows + 1);
  });

  it("streams CSV for Accept: text/csv and pages it when $top is given", async () => {
    const result = await call(
      handler,
      `${BASE}/Observations?$top=5&$select=Id,CharacteristicName`,
      {
        headers: { "x-api-key": "test-key", accept: "text/csv" },
      },
    );
    assert.equal(result.text.split("\r\n")[0], "Id,CharacteristicName");
    assert.equal(result.text.trimEnd().split("\r\n").length, 6);
    assert.match(result.headers["link"]!, /\$skiptoken=Id:5>; rel="next"$/);
  });
});
