import assert from "node:assert/strict";
import { before, describe, it } from "node:test";
import type { Handler } from "../../lib/http/mod.ts";
import { buildStore, call, FIXTURE_HEADER, fixtureRow, waterHandler } from "../_helpers/water.ts";
import { formatCsvRow } from "../../lib/water/mod.ts";
import { createPrng } from "../_helpers/prng.ts";

const BASE = "/v1/odata/v4";
let handler: Handler;

before(() => {
  const prng = createPrng(7);
  let csv = formatCsvRow(FIXTURE_HEADER);
  const names = [
    "pH",
    "Temperature, water",
    "2,2',4,4'-Tetrachlorobiphenyl",
    "Dissolved oxygen (DO)",
    "Nitrate",
  ];
  for (let i = 0; i < 3000; i++) {
    csv += fixtureRow({
      MonitoringLocationID: `L${prng.int(40)}`,
      CharacteristicName: prng.pick(names),
      ActivityStartDate: `${2012 + prng.int(12)}-0${1 + prng.int(9)}-1${prng.int(9)}`,
      ResultValue: prng.next() < 0.1 ? "" : (prng.next() * 20).toFixed(2),
      ResultUnit: "None",
      ResultComment: prng.next() < 0.05 ? 'a, "quoted" note' : "",
    });
  }
  const metadata = {
    DOI: "10.25976/fuzz-aa01",
    DatasetName: "Fixture",
    RegionIds: ["hub.atlantic"],
  };
  handler = waterHandler(buildStore([{ folder: "fuzz", metadata, csv }]).store);
});

const FIELDS = [
  "Id",
  "LocationId",
  "DOI",
  "CharacteristicName",
  "ResultValue",
  "ActivityStartDate",
  "ActivityStartYear",
  "RegionId",
  "ResultComment",
  "Latitude",
  "ID",
  "Name",
  "Foo",
  "id",
];
const PIECES = [
  "eq",
  "ne",
  "lt",
  "le",
  "gt",
  "ge",
  "lte",
  "gte",
  "in",
  "and",
  "or",
  "not",
  "(",
  ")",
  ",",
  "'pH'",
  "'Temperature, water'",
  "'2,2''-x'",
  "7",
  "-0.25",
  "'7'",
  "2020-01-01",
  "'2020-01-01'",
  "null",
  "true",
  "contains(",
  "startswith(",
  "endswith(",
  "tolower(",
  "year(",
  "length(",
  "round(",
  "'",
  "''",
  "%",
  "+",
  "&",
  "#",
  "\u00e9",
  "🌊",
  " ",
];

function generate(prng: ReturnType<typeof createPrng>): string {
  const parts: string[] = [];
  const length = 1 + prng.int(12);
  for (let i = 0; i < length; i++) {
    parts.push(prng.next() < 0.3 ? prng.pick(FIELDS) : prng.pick(PIECES));
  }
  // Mutate by code points, so that no surrogate pair is cut in half.
  const chars = Array.from(parts.join(prng.next() < 0.8 ? " " : ""));
  for (let m = prng.int(3); m > 0; m--) {
    const at = prng.int(chars.length + 1);
    if (prng.next() < 0.5) chars.splice(at, 1);
    else chars.splice(at, 0, prng.pick(PIECES));
  }
  return chars.join("");
}

describe("water service fuzz", () => {
  it("answers 100,000 generated and mutated filters with 200 or a 4xx, never a 5xx", async () => {
    const seed = 99;
    const prng = createPrng(seed);
    const statuses = new Map<number, number>();
    const collections = ["Observations", "Locations", "Metadata", "Records"];
    for (let i = 0; i < 100_000; i++) {
      const filter = generate(prng);
      const collection = collections[i % 4]!;
      const encoded = prng.next() < 0.5 ? encodeURIComponent(filter) : filter.replaceAll(" ", "+");
      const result = await call(handler, `${BASE}/${collection}?$top=3&$filter=${encoded}`);
      statuses.set(result.status, (statuses.get(result.status) ?? 0) + 1);
      assert.ok(
        result.status === 200 || (result.status >= 400 && result.status < 500),
        `seed ${seed} #${i} ${filter}: ${result.status} ${result.text}`,
      );
      if (result.status !== 200) {
        const code = (JSON.parse(result.text) as { error: { code: string } }).error.code;
        assert.match(
          code,
          /^ERR_(ODATA|HTTP_MALFORMED_URL)/,
          `seed ${seed} #${i} ${filter}: ${code}`,
        );
      }
    }
    assert.ok((statuses.get(200) ?? 0) > 2_000, `accepted ${statuses.get(200)}`);
    assert.ok((statuses.get(400) ?? 0) > 50_000, `refused ${statuses.get(400)}`);
  });
});
