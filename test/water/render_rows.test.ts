import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { type Column, rowNumberAt } from "../../lib/columnar/mod.ts";
import {
  type CollectionField,
  COLLECTIONS,
  type CollectionSchema,
  type FieldLevel,
  type WaterStore,
} from "../../lib/water/mod.ts";
import { LOCATION_COLUMNS, REQUIRED_CSV_COLUMNS } from "../../lib/water/fields.ts";
import { NUMERIC_LOCATION_COLUMNS, NUMERIC_OBSERVATION_COLUMNS } from "../../lib/water/fields.ts";
import { createRowWriter } from "../../lib/water/render/render_rows.ts";
import { createJsonRowBytes, type JsonRowBytes } from "../../lib/water/render/_json_row_bytes.ts";
import { MAX_NUMBER_BYTES, writeInt, writeNumber } from "../../lib/water/render/_write_number.ts";
import { createPrng, type Prng } from "../_helpers/prng.ts";
import { buildStore, FIXTURE_HEADER, type FixtureDataset, fixtureRow } from "../_helpers/water.ts";

const text = new TextDecoder("utf-8", { fatal: true });
const utf8 = new TextEncoder();

/** The number as `writeNumber` writes it. */
function written(v: number): string {
  const buf = new Uint8Array(MAX_NUMBER_BYTES + 8);
  const end = writeNumber(buf, 4, v);
  assert.ok(end - 4 <= MAX_NUMBER_BYTES, `${v} took ${end - 4} bytes`);
  return text.decode(buf.subarray(4, end));
}

/** A double from the generator: random bits, or numbers as data holds them. */
function randomNumber(prng: Prng): number {
  const bits = new DataView(new ArrayBuffer(8));
  const sign = prng.int(2) === 0 ? 1 : -1;
  switch (prng.int(8)) {
    case 0:
      bits.setUint32(0, prng.int(2 ** 32));
      bits.setUint32(4, prng.int(2 ** 32));
      return bits.getFloat64(0);
    case 1:
      // A whole number with up to 16 digits, divided by 10^k: decimals as measured.
      return (sign * Math.floor(prng.next() * 10 ** (1 + prng.int(16)))) / 10 ** prng.int(9);
    case 2:
      return sign * Number((prng.next() * 10 ** prng.int(8)).toFixed(prng.int(8)));
    case 3:
      return sign * Math.floor(prng.next() * 2 ** (1 + prng.int(55)));
    case 4:
      return sign * prng.next() * 10 ** (prng.int(60) - 30);
    case 5:
      return sign * Number(prng.next().toPrecision(1 + prng.int(17))) * 10 ** (prng.int(14) - 8);
    case 6:
      // Near the edges of the short path: 2^31, 2^52, 10^-6, 10^21.
      return sign * prng.pick([2 ** 31, 2 ** 52, 1e-6, 1e21, 2 ** 53]) *
        (1 + (prng.int(5) - 2) * Number.EPSILON);
    default:
      return sign * (prng.int(2000) / 8);
  }
}

describe("writeNumber()", () => {
  it("writes numbers as JSON.stringify does", () => {
    for (
      const v of [
        0,
        -0,
        1,
        -1,
        0.1,
        0.2,
        0.1 + 0.2,
        1 / 3,
        -2.5,
        1e-6,
        1.5e-6,
        1e-7,
        123e-7,
        2 ** 31,
        -(2 ** 31),
        2 ** 31 - 1,
        2 ** 31 + 0.5,
        2 ** 52,
        2 ** 52 - 0.5,
        2 ** 53,
        2 ** 53 + 2,
        1e21,
        1e20,
        999999.9999995,
        4503599627.370495,
        21474836.48,
        Number.MAX_VALUE,
        Number.MIN_VALUE,
        -Number.MAX_SAFE_INTEGER,
        5e-324,
        0.000001,
        0.0000015,
      ]
    ) {
      assert.equal(written(v), JSON.stringify(v), String(v));
    }
  });

  it("writes random doubles as JSON.stringify does", () => {
    const seed = Date.now() >>> 0;
    const prng = createPrng(seed);
    for (let i = 0; i < 200_000; i++) {
      const v = randomNumber(prng);
      if (!Number.isFinite(v)) continue;
      const got = written(v);
      if (got !== JSON.stringify(v)) assert.fail(`seed ${seed}: ${v} written ${got}`);
    }
  });

  it("writes whole numbers below 2^31 as digits with writeInt", () => {
    const buf = new Uint8Array(16);
    for (const n of [0, 7, 10, 99, 100, 123456789, 999999999, 1000000000, 2 ** 31 - 1]) {
      assert.equal(text.decode(buf.subarray(0, writeInt(buf, 0, n))), String(n));
    }
  });
});

// Stores of random data, read back through the columns as plain objects (the
// oracle), and written by the byte writer: the bytes must be JSON.stringify's.

const ALPHABET = [
  "a",
  "Z",
  "0",
  " ",
  '"',
  "\\",
  ",",
  "/",
  "é",
  "水",
  "🌊",
  "\n",
  "\t",
  "\u0001",
  "'",
  "<",
  "\u2028",
];

function randomText(prng: Prng, max: number): string {
  let out = "";
  const length = 1 + prng.int(max);
  for (let i = 0; i < length; i++) {
    out += prng.next() < 0.7 ? String.fromCharCode(97 + prng.int(26)) : prng.pick(ALPHABET);
  }
  // Padding spaces may be trimmed by the loader; inner ones stay.
  return `x${out}x`;
}

function randomNumberText(prng: Prng): string {
  switch (prng.int(6)) {
    case 0:
      return String(prng.int(100000) - 50000);
    case 1:
      return (prng.next() * 100).toFixed(prng.int(7));
    case 2:
      return `${prng.int(10)}.${prng.int(1000)}e${prng.int(40) - 20}`;
    case 3:
      return prng.pick([
        "-0",
        "0.1",
        "1e400",
        "-1e400",
        "0.30000000000000004",
        "123456789012345678",
        ".5",
      ]);
    default:
      return String(randomNumber(prng)).replace("Infinity", "1e999");
  }
}

const two = (n: number): string => String(n).padStart(2, "0");
const date = (prng: Prng): string =>
  `${1990 + prng.int(35)}-${two(1 + prng.int(12))}-${two(1 + prng.int(28))}`;
const time = (prng: Prng): string => `${two(prng.int(24))}:${two(prng.int(60))}`;

const PER_LOCATION: ReadonlySet<string> = new Set(["DatasetName", ...LOCATION_COLUMNS]);
const NUMERIC: ReadonlySet<string> = new Set([
  ...NUMERIC_OBSERVATION_COLUMNS,
  ...NUMERIC_LOCATION_COLUMNS,
]);

/** A generator of one column's values: few of them (a vocabulary), many, or mostly empty. */
function columnValues(prng: Prng, name: string): () => string | undefined {
  const one = (): string => {
    if (NUMERIC.has(name)) return randomNumberText(prng);
    if (name.endsWith("Date")) return date(prng);
    if (name.endsWith("TimeZone")) return prng.pick(["Z", "-04:00", "+05:30", "-10:00"]);
    if (name.endsWith("Time")) return time(prng);
    return randomText(prng, 12);
  };
  const pool = Array.from({ length: 1 + prng.int(prng.int(2) === 0 ? 4 : 300) }, one);
  const empty = prng.next();
  return () => (prng.next() < empty ? undefined : prng.pick(pool));
}

function randomStore(prng: Prng): WaterStore {
  const datasets: FixtureDataset[] = [];
  for (let d = 0; d < 1 + prng.int(3); d++) {
    const columns = new Map(
      FIXTURE_HEADER.filter((name) => !PER_LOCATION.has(name)).map((
        name,
      ) => [name, columnValues(prng, name)]),
    );
    const optional = LOCATION_COLUMNS.filter((name) =>
      !(REQUIRED_CSV_COLUMNS as readonly string[]).includes(name)
    )
      .map((name) => [name, columnValues(prng, name)] as const);
    const locations = Array.from({ length: 1 + prng.int(12) }, (_, l) => {
      const location: Record<string, string> = {
        MonitoringLocationID: `L${l}`,
        MonitoringLocationName: randomText(prng, 20),
        MonitoringLocationLatitude: (prng.next() * 160 - 80).toFixed(prng.int(7)),
        MonitoringLocationLongitude: (prng.next() * 340 - 170).toFixed(prng.int(7)),
      };
      for (const [name, next] of optional) {
        const value = next();
        if (value !== undefined) location[name] = value;
      }
      return location;
    });
    let csv = `${FIXTURE_HEADER.map((name) => JSON.stringify(name).slice(1, -1)).join(",")}\r\n`;
    const rows = 50 + prng.int(400);
    for (let r = 0; r < rows; r++) {
      const values: Record<string, string> = { DatasetName: `Set ${d}`, ...prng.pick(locations) };
      for (const [name, next] of columns) {
        const value = next();
        if (value !== undefined) values[name] = value;
      }
      csv += fixtureRow(values);
    }
    const metadata = {
      DOI: `10.25976/t${d}`,
      DatasetName: `Set ${d} ${randomText(prng, 8)}`,
      Abstract: randomText(prng, 40),
      Keywords: [randomText(prng, 5), randomText(prng, 5)],
      RegionIds: ["admin.2.ca"],
    };
    datasets.push({ folder: `set-${d}`, metadata, csv });
  }
  const { store } = buildStore(datasets);
  return store;
}

/** A column's value at a row of its level or a finer one, as the store holds it. */
function read(column: Column, row: number): unknown {
  switch (column.kind) {
    case "dict":
      return column.values[column.codes[row]!];
    case "number":
      return column.values[row];
    case "rownumber":
      return rowNumberAt(column, row);
    case "group": {
      let group = 0;
      while (column.starts[group + 1]! <= row) group++;
      return read(column.column, group);
    }
    case "values":
      return column.values[row];
  }
}

function datasetOf(store: WaterStore, level: FieldLevel, row: number): number {
  if (level === "dataset") return row;
  return store.datasetOfLocation(level === "location" ? row : store.locationOfRow(row));
}

/** A row as a plain object of the selected fields, read from the store. */
function rowObject(
  store: WaterStore,
  level: FieldLevel,
  fields: readonly CollectionField[],
  row: number,
): Record<string, unknown> {
  const object: Record<string, unknown> = {};
  for (const field of fields) {
    const source = field.source;
    if (source.level === "dataset") {
      const dataset = store.datasets[datasetOf(store, level, row)]!;
      const name = source.key.slice("dataset.".length);
      object[field.name] = name === "Id" ? dataset.id : dataset.metadata[name] ?? null;
    } else {
      object[field.name] = read(store.columnAt(source.key, level)!, row);
    }
  }
  return object;
}

function randomSelection(prng: Prng, collection: CollectionSchema): readonly CollectionField[] {
  if (prng.int(3) === 0) return collection.select;
  const fields = [...collection.select];
  for (let i = fields.length - 1; i > 0; i--) {
    const j = prng.int(i + 1);
    [fields[i], fields[j]] = [fields[j]!, fields[i]!];
  }
  return fields.slice(0, prng.int(fields.length + 1));
}

function randomRows(prng: Prng, length: number): number[] {
  if (length === 0) return [];
  switch (prng.int(4)) {
    case 0: {
      // A page: consecutive rows.
      const from = prng.int(length);
      return Array.from({ length: Math.min(length - from, 1 + prng.int(500)) }, (_, k) => from + k);
    }
    case 1:
      return Array.from({ length }, (_, row) => row).filter(() => prng.next() < 0.3);
    case 2:
      // An ordered page: any order.
      return Array.from({ length: prng.int(300) }, () => prng.int(length));
    default:
      return [];
  }
}

/** Checks one call of a writer: the block, each row's bounds, head and tail. */
function check(
  write: JsonRowBytes,
  store: WaterStore,
  level: FieldLevel,
  fields: readonly CollectionField[],
  rows: readonly number[],
  what: string,
): void {
  const expected = rows.map((row) => JSON.stringify(rowObject(store, level, fields, row)));
  const head = utf8.encode(`{"value":[`);
  const tail = utf8.encode("]}");
  const { block, starts, ends } = write(rows, head, tail);
  assert.equal(text.decode(block), `{"value":[${expected.join(",")}]}`, what);
  expected.forEach((row, k) =>
    assert.equal(text.decode(block.subarray(starts[k]!, ends[k]!)), row, `${what}, row ${k}`)
  );
  const bare = write(rows);
  assert.equal(text.decode(bare.block), expected.join(","), `${what}, without head and tail`);
}

describe("RowWriter.jsonBytes()", () => {
  it("writes random rows of random data as JSON.stringify does, any selection, any limits", () => {
    const seed = Date.now() >>> 0;
    const prng = createPrng(seed);
    for (let round = 0; round < 6; round++) {
      const store = randomStore(prng);
      for (const collection of COLLECTIONS.values()) {
        const level = collection.level;
        const length = store.lengthOf(level);
        for (let s = 0; s < 4; s++) {
          const fields = randomSelection(prng, collection);
          const writers: [string, JsonRowBytes][] = [
            ["default", createRowWriter(store, collection, fields).jsonBytes],
            // Every run of dictionary fields one group, in tables that start over after two fragments.
            [
              "one group, tiny tables",
              createJsonRowBytes(store, level, fields, {
                groupSpread: Infinity,
                denseKeys: 0,
                maxTableEntries: 2,
              }),
            ],
            ["a group a field", createJsonRowBytes(store, level, fields, { groupSpread: 1 })],
          ];
          for (const [name, write] of writers) {
            // Twice the same rows: the second time, fragments come from the tables.
            const rows = randomRows(prng, length);
            const what = `seed ${seed}, ${collection.name}, ${name}, $select=${
              fields.map((f) => f.name).join(",")
            }`;
            for (const time of ["first", "second"]) {
              check(write, store, level, fields, rows, `${what}, ${time} time`);
            }
            check(write, store, level, fields, randomRows(prng, length), `${what}, other rows`);
          }
        }
      }
    }
  });

  it("writes a row of no field as {}", async () => {
    const store = randomStore(createPrng(1));
    const write = createJsonRowBytes(store, "observation", []);
    assert.equal(text.decode(write([0, 1]).block), "{},{}");
  });
});
