import assert from "node:assert/strict";
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { type Environment, readSettings } from "../../lib/config/mod.ts";
import { STORAGE_SETTINGS } from "../../lib/storage/mod.ts";
import type { Handler } from "../../lib/http/mod.ts";
import {
  decodeDatasetSnapshot,
  encodeDatasetSnapshot,
  formatCsvRow,
  LiveDatasets,
  loadDatasets,
  type LoadDatasetsOptions,
  type LoadedDatasets,
  readDatasetMetadata,
  StoreBuilder,
  WATER_SETTINGS,
  type WaterStore,
} from "../../lib/water/mod.ts";
import { SOURCE_FIELDS } from "../../lib/water/fields.ts";
import { resolveDatasetCacheDir } from "../../lib/water/settings.ts";
import { codeArray, placeRows, remapCodes } from "../../lib/water/store/_code_column.ts";
import type { CodeArray } from "../../lib/columnar/mod.ts";
import { createPrng, type Prng } from "../_helpers/prng.ts";
import {
  call,
  DEMO_DIR,
  FIXTURE_HEADER,
  fixtureRow,
  type Page,
  waterHandler,
} from "../_helpers/water.ts";

const root = mkdtempSync(join(tmpdir(), "tributary-snapshot-"));
after(() => rmSync(root, { recursive: true, force: true }));
const BASE = "/v1/odata/v4";
let made = 0;

/** A fresh folder under the test's root. */
function folder(name: string): string {
  const dir = join(root, `${name}-${++made}`);
  mkdirSync(dir, { recursive: true });
  return dir;
}

const SEED = 20_261_124;
const CHARACTERISTICS = [
  "pH",
  "Temperature, water",
  "Dissolved oxygen (DO)",
  "Total Phosphorus, mixed forms",
  "Specific conductance",
];
const ACTIVITY_TYPES = [
  "Field Msr/Obs",
  "Sample-Routine",
  "Quality Control Sample-Field Blank",
  "Field Msr/Obs-Portable Data Logger",
];

/** The data file of fixture dataset `d`: interleaved locations, skipped rows, quoted and multi-line text, `-0`, some columns absent. */
function fixtureCsv(d: number, rows: number, prng: Prng, withTimeZones: boolean): string {
  const header = withTimeZones
    ? FIXTURE_HEADER
    : FIXTURE_HEADER.filter((name) => !name.endsWith("TimeZone"));
  let csv = formatCsvRow(header);
  for (let r = 0; r < rows; r++) {
    const location = `D${d}-L${prng.int(7)}`;
    const values: Record<string, string> = {
      DatasetName: `Fixture ${d}`,
      MonitoringLocationID: location,
      MonitoringLocationName: `Lac "${location}", près d'ici`,
      MonitoringLocationLatitude: location.endsWith("3")
        ? "-0"
        : (43 + d + prng.int(100) / 100).toFixed(2),
      MonitoringLocationLongitude: (-64 - prng.int(100) / 100).toFixed(2),
      MonitoringLocationType: "Lake/Pond",
      MonitoringLocationHorizontalCoordinateReferenceSystem: "WGS84",
      ActivityType: prng.pick(ACTIVITY_TYPES),
      ActivityMediaName: prng.pick(["Surface Water", "Groundwater"]),
      ActivityStartDate: `20${10 + prng.int(12)}-0${1 + prng.int(9)}-1${prng.int(10)}`,
      ActivityStartTime: `${10 + prng.int(10)}:${10 + prng.int(50)}:00`,
      CharacteristicName: prng.int(4) === 0 ? `Characteristic of ${d}` : prng.pick(CHARACTERISTICS),
      ResultValueType: "Actual",
      // About one row in twenty is skipped for a value that is not a number, after its other values were read.
      ResultValue: prng.int(20) === 0 ? "n/a" : String(prng.int(100_000) / 100),
      ResultUnit: prng.pick(["mg/L", "deg C", "None", "uS/cm"]),
      ResultComment: prng.int(3) === 0 ? `comment ${prng.int(40)}, "quoted"\nsecond line` : "",
      LaboratorySampleID: `S-${d}-${r}`,
    };
    if (withTimeZones) values["ActivityStartTimeZone"] = prng.pick(["-04:00", "-05:00", "Z"]);
    csv += withTimeZones
      ? fixtureRow(values)
      : formatCsvRow(header.map((name) => values[name] ?? null));
  }
  return csv;
}

/** Writes fixture dataset `d` into `dir`, its rows drawn from `seed`. */
function writeFixture(dir: string, d: number, seed: number, rows = 240): void {
  const prng = createPrng(seed);
  mkdirSync(join(dir, `set-${d}`), { recursive: true });
  const metadata = {
    DOI: `10.25976/fx${d}0-aa${d}${d}`,
    DatasetName: `Fixture ${d}`,
    CreateTimestamp: `20${10 + d}-01-01T00:00:00Z`,
    RegionIds: ["hub.atlantic"],
    LocationRegionIds: { [`D${d}-L2`]: ["hub.greatlakes"] },
  };
  writeFileSync(join(dir, `set-${d}`, "metadata.json"), JSON.stringify(metadata));
  writeFileSync(join(dir, `set-${d}`, "data.csv"), fixtureCsv(d, rows, prng, d !== 2));
}

/** A datasets folder of four fixture datasets. */
function fixtureDir(): string {
  const dir = folder("data");
  for (let d = 0; d < 4; d++) writeFixture(dir, d, SEED + d);
  return dir;
}

/** Every column of a store, and its datasets, group boundaries and ids, as plain data to compare. */
function storeContents(store: WaterStore): unknown {
  const columns: Record<string, unknown> = {};
  for (const key of SOURCE_FIELDS.keys()) columns[key] = store.column(key);
  return {
    columns,
    datasets: store.datasets,
    datasetLocationStarts: store.datasetLocationStarts,
    locationRowStarts: store.locationRowStarts,
    issuedIds: store.issuedIds,
  };
}

/** A load's report, without how each dataset was read. */
function plainReport(loaded: LoadedDatasets): unknown {
  return loaded.report.datasets.map(({ snapshot: _snapshot, ...dataset }) => dataset);
}

/** Every page of a query, following next links. */
async function allPages(handler: Handler, first: string): Promise<string[]> {
  const bodies: string[] = [];
  let target: string | undefined = first;
  while (target !== undefined) {
    const result = await call(handler, target);
    assert.equal(result.status, 200, `${target}: ${result.text.slice(0, 200)}`);
    bodies.push(result.text);
    const next = (result.json() as Page)["@odata.nextLink"];
    target = next === undefined ? undefined : next.slice("http://localhost:8000".length);
  }
  return bodies;
}

/** Queries of every collection: pages of all rows, filtered pages, counts, CSV, an order, entities by key. */
const QUERIES: readonly string[] = [
  ...["Metadata", "Locations", "Observations", "Records"].flatMap((collection) => [
    `${BASE}/${collection}?$top=97`,
    `${BASE}/${collection}?$filter=CharacteristicName eq 'pH' and ActivityStartYear ge 2015&$top=50`,
    `${BASE}/${collection}?$filter=RegionId eq 'hub.greatlakes'`,
    `${BASE}/${collection}?$count=true`,
  ]),
  `${BASE}/Observations?$filter=ActivityGroupType eq 'Field Measurements' and ResultValue gt 500&$top=40`,
  `${BASE}/Observations?$filter=contains(ResultComment, 'second')&$select=Id,ResultComment,ActivityStartTimeZone`,
  `${BASE}/Observations?$orderby=ResultValue desc,Id&$top=25`,
  `${BASE}/Locations?$filter=Latitude eq 0`,
  `${BASE}/Records?$filter=MonitoringLocationLatitude lt 45 and ActivityType eq 'Sample-Routine'&$top=30`,
  `${BASE}/Observations(5)`,
  `${BASE}/Locations(3)`,
];

/** Asserts that two stores answer every query of {@linkcode QUERIES} alike, every page, and their CSV. */
async function assertSameAnswers(expected: WaterStore, actual: WaterStore): Promise<void> {
  const a = waterHandler(expected);
  const b = waterHandler(actual);
  for (const query of QUERIES) {
    assert.deepEqual(await allPages(b, query), await allPages(a, query), query);
  }
  for (const collection of ["Records", "Observations", "Locations"]) {
    const target = `${BASE}/${collection}?$format=csv`;
    const [x, y] = [await call(a, target), await call(b, target)];
    assert.equal(x.status, 200);
    assert.equal(y.text, x.text, target);
  }
}

describe("dataset snapshots", () => {
  it("give a store equal column for column, and answering every collection alike, to one read from the CSV files", async () => {
    const dir = fixtureDir();
    const cache = folder("cache");
    const fromCsv = await loadDatasets(dir);
    const writing = await loadDatasets(dir, { snapshotDir: cache });
    assert.deepEqual(writing.report.datasets.map((d) => d.snapshot), [
      "written",
      "written",
      "written",
      "written",
    ]);
    assert.equal(readdirSync(cache).filter((name) => name.endsWith(".snapshot")).length, 4);
    const reading = await loadDatasets(dir, { snapshotDir: cache });
    assert.deepEqual(reading.report.datasets.map((d) => d.snapshot), [
      "read",
      "read",
      "read",
      "read",
    ]);
    assert.deepEqual(reading.report.snapshotNotes, []);
    assert.ok(
      fromCsv.report.datasets.some((d) => d.skippedRows > 0 && d.issues.length > 0),
      "the fixtures have skipped rows",
    );
    assert.deepEqual(plainReport(reading), plainReport(fromCsv));
    assert.deepEqual(storeContents(writing.store), storeContents(fromCsv.store));
    assert.deepEqual(storeContents(reading.store), storeContents(fromCsv.store));
    await assertSameAnswers(fromCsv.store, reading.store);
  });

  it("give the demo data's store equal column for column", async () => {
    const cache = folder("cache");
    const fromCsv = await loadDatasets(DEMO_DIR);
    await loadDatasets(DEMO_DIR, { snapshotDir: cache });
    const reading = await loadDatasets(DEMO_DIR, { snapshotDir: cache });
    assert.ok(reading.report.datasets.every((d) => d.snapshot === "read"));
    assert.deepEqual(storeContents(reading.store), storeContents(fromCsv.store));
    assert.deepEqual(plainReport(reading), plainReport(fromCsv));
  });

  const damages = [
    {
      name: "a byte changed in its columns",
      damage: (bytes: Uint8Array) => void (bytes[bytes.length - 100]! ^= 0x10),
    },
    {
      name: "a byte changed in its header",
      damage: (bytes: Uint8Array) => void (bytes[120]! ^= 0x01),
    },
    { name: "its checksum changed", damage: (bytes: Uint8Array) => void (bytes[60]! ^= 0xff) },
    {
      name: "cut short",
      damage: (bytes: Uint8Array) => bytes.subarray(0, Math.floor(bytes.length / 2)),
    },
  ] as const;
  for (const c of damages) {
    it(`are not used when ${c.name}: the data file is read, the damage reported, the snapshot written again`, async () => {
      const dir = fixtureDir();
      const cache = folder("cache");
      const fromCsv = await loadDatasets(dir);
      await loadDatasets(dir, { snapshotDir: cache });
      const victim = join(
        cache,
        readdirSync(cache).filter((name) => name.startsWith("set-1-"))[0]!,
      );
      const bytes = new Uint8Array(readFileSync(victim));
      writeFileSync(victim, c.damage(bytes) ?? bytes);
      const reading = await loadDatasets(dir, { snapshotDir: cache });
      assert.deepEqual(reading.report.datasets.map((d) => d.snapshot), [
        "read",
        "written",
        "read",
        "read",
      ]);
      assert.equal(reading.report.snapshotNotes.length, 1);
      assert.match(
        reading.report.snapshotNotes[0]!,
        /set-1-.*not used .*set-1\/data\.csv read instead/,
      );
      assert.deepEqual(storeContents(reading.store), storeContents(fromCsv.store));
      const again = await loadDatasets(dir, { snapshotDir: cache });
      assert.deepEqual(again.report.datasets.map((d) => d.snapshot), [
        "read",
        "read",
        "read",
        "read",
      ]);
      assert.deepEqual(storeContents(again.store), storeContents(fromCsv.store));
    });
  }

  it("are not used once their data file changed: the new file is read, never the snapshot of the old one", async () => {
    const dir = fixtureDir();
    const cache = folder("cache");
    await loadDatasets(dir, { snapshotDir: cache });
    // Same size, new values: only the file's identity tells it changed.
    const file = join(dir, "set-3", "data.csv");
    const before = readFileSync(file, "utf8");
    const after = before.replace(/Lac "/g, 'Mer "');
    assert.equal(after.length, before.length);
    writeFileSync(file, after);
    const reading = await loadDatasets(dir, { snapshotDir: cache });
    assert.deepEqual(reading.report.datasets.map((d) => d.snapshot), [
      "read",
      "read",
      "read",
      "written",
    ]);
    assert.deepEqual(reading.report.snapshotNotes, [], "an outdated snapshot is not damage");
    assert.deepEqual(storeContents(reading.store), storeContents((await loadDatasets(dir)).store));
    const result = await call(
      waterHandler(reading.store),
      `${BASE}/Locations?$filter=Name eq 'Mer "D3-L1", près d''ici'`,
    );
    assert.equal(result.status, 200, result.text);
    assert.equal((result.json() as Page).value.length, 1);
  });

  it("are read under the options the data file was read with only", async () => {
    const dir = fixtureDir();
    const cache = folder("cache");
    await loadDatasets(dir, { snapshotDir: cache });
    const fewer: LoadDatasetsOptions = { snapshotDir: cache, maxIssuesPerFile: 2 };
    const reading = await loadDatasets(dir, fewer);
    assert.deepEqual(reading.report.datasets.map((d) => d.snapshot), [
      "written",
      "written",
      "written",
      "written",
    ]);
    assert.ok(reading.report.datasets.every((d) => d.issues.length <= 2));
  });

  it("are left unwritten, and the datasets served, when the cache folder cannot be made", async () => {
    const dir = fixtureDir();
    const blocker = join(folder("blocked"), "a-file");
    writeFileSync(blocker, "not a folder");
    const loaded = await loadDatasets(dir, { snapshotDir: join(blocker, "cache") });
    assert.equal(loaded.store.datasetCount, 4);
    assert.deepEqual(loaded.report.datasets.map((d) => d.snapshot), [
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
    assert.equal(loaded.report.snapshotNotes.length, 4);
    assert.match(loaded.report.snapshotNotes[0]!, /not written: .*(ENOTDIR|EEXIST)/);
  });

  it("keep a reload to the changed dataset, and a later start reads every dataset back, in any order", async () => {
    const dir = fixtureDir();
    const cache = folder("cache");
    const live = await LiveDatasets.open(dir, { snapshotDir: cache });
    // The earliest dataset replaced: the reload puts it after those kept, a fresh start first again.
    writeFixture(dir, 0, SEED + 100, 260);
    const report = await live.reload();
    assert.deepEqual(
      report.datasets.map((d) => [d.folder, d.change, d.snapshot]),
      [["set-1", "unchanged", undefined], ["set-2", "unchanged", undefined], [
        "set-3",
        "unchanged",
        undefined,
      ], ["set-0", "replaced", "written"]],
    );
    const fresh = await loadDatasets(dir);
    const restart = await loadDatasets(dir, { snapshotDir: cache });
    assert.deepEqual(restart.report.datasets.map((d) => [d.folder, d.snapshot]), [
      ["set-0", "read"],
      ["set-1", "read"],
      ["set-2", "read"],
      ["set-3", "read"],
    ]);
    assert.deepEqual(storeContents(restart.store), storeContents(fresh.store));
    await assertSameAnswers(fresh.store, restart.store);
  });

  it("of a dataset removed are deleted by the reload that removes it, and those of other folders sharing the cache are left", async () => {
    const dir = fixtureDir();
    const other = fixtureDir();
    const cache = folder("cache");
    const live = await LiveDatasets.open(dir, { snapshotDir: cache });
    await loadDatasets(other, { snapshotDir: cache });
    const before = readdirSync(cache).filter((name) => name.endsWith(".snapshot"));
    assert.equal(before.length, 8, "four datasets of each folder");
    rmSync(join(dir, "set-2"), { recursive: true });
    const report = await live.reload();
    assert.deepEqual(report.removed.map((d) => d.folder), ["set-2"]);
    const after = readdirSync(cache).filter((name) => name.endsWith(".snapshot"));
    assert.equal(after.length, 7);
    assert.deepEqual(
      before.filter((name) => !after.includes(name)).map((name) =>
        name.replace(/-[0-9a-f]{16}\.snapshot$/, "")
      ),
      ["set-2"],
    );
    const restart = await loadDatasets(other, { snapshotDir: cache });
    assert.deepEqual(restart.report.datasets.map((d) => d.snapshot), [
      "read",
      "read",
      "read",
      "read",
    ], "the other folder's snapshots are still read");
  });

  it("report their bytes in a load's progress", async () => {
    const dir = fixtureDir();
    const cache = folder("cache");
    await loadDatasets(dir, { snapshotDir: cache });
    const sizes = readdirSync(cache).map((name) => statSync(join(cache, name)).size);
    let last = { rows: 0, bytes: 0, totalBytes: 0 };
    await loadDatasets(dir, { snapshotDir: cache, onProgress: (state) => void (last = state) });
    const total = sizes.reduce((a, b) => a + b, 0);
    assert.deepEqual(last, { rows: last.rows, bytes: total, totalBytes: total });
    assert.equal(last.rows, (await loadDatasets(dir)).store.observationCount);
  });
});

describe("decodeDatasetSnapshot()", () => {
  const prng = createPrng(SEED);
  const builder = new StoreBuilder();
  const input = readDatasetMetadata(
    JSON.stringify({ DOI: "10.25976/dec0-aa01", DatasetName: "Decode" }),
    "decode",
  );
  builder.beginDataset(input, "decode/data.csv");
  builder.push(new TextEncoder().encode(fixtureCsv(5, 120, prng, true)));
  const result = builder.endDataset();
  const built = builder.builtDataset(0);
  const chunks = encodeDatasetSnapshot({ key: "k1", result, built });
  const bytes = new Uint8Array(chunks.reduce((n, chunk) => n + chunk.length, 0));
  chunks.reduce((at, chunk) => (bytes.set(chunk, at), at + chunk.length), 0);

  it("reads back what was written, as views over the bytes", () => {
    const snapshot = decodeDatasetSnapshot(bytes, { key: "k1", input, file: "decode/data.csv" });
    assert.deepEqual(snapshot.result, result);
    assert.deepEqual(snapshot.built, built);
    const codes = snapshot.built.columns.find((column) => column.kind === "dict")!;
    assert.equal(codes.kind === "dict" && codes.codes.buffer, bytes.buffer);
  });

  it("reads unaligned bytes back the same", () => {
    const shifted = new Uint8Array(bytes.length + 3);
    shifted.set(bytes, 3);
    assert.deepEqual(
      decodeDatasetSnapshot(shifted.subarray(3), { key: "k1", input, file: "decode/data.csv" })
        .built,
      built,
    );
  });

  const refusals = [
    { name: "another key", bytes: () => bytes, key: "k2" },
    { name: "another format", bytes: () => withByte(bytes, 8, 99), key: "k1" },
    { name: "not a snapshot", bytes: () => new TextEncoder().encode("x".repeat(200)), key: "k1" },
    {
      name: "a changed byte",
      bytes: () => withByte(bytes, bytes.length - 1, bytes[bytes.length - 1]! ^ 1),
      key: "k1",
    },
    { name: "fewer bytes", bytes: () => bytes.subarray(0, bytes.length - 8), key: "k1" },
    { name: "its fixed part only", bytes: () => bytes.subarray(0, 90), key: "k1" },
  ] as const;
  for (const c of refusals) {
    it(`refuses ${c.name}`, () => {
      assert.throws(
        () => decodeDatasetSnapshot(c.bytes(), { key: c.key, input, file: "decode/data.csv" }),
        { name: "WaterError", code: "ERR_WATER_SNAPSHOT" },
      );
    });
  }
});

describe("DATASET_CACHE_DIR", () => {
  // The water settings read DATASET_CACHE_DIR alone; STATE_DIR is the storage settings', given to resolveDatasetCacheDir.
  const folder = (env: Environment): string =>
    resolveDatasetCacheDir(
      readSettings(WATER_SETTINGS, env).datasetCacheDir,
      readSettings(STORAGE_SETTINGS, env).stateDir,
    );
  const cases = [
    { name: "defaults under STATE_DIR's default", env: {}, expected: join("var", "dataset-cache") },
    {
      name: "follows STATE_DIR",
      env: { STATE_DIR: "/srv/state" },
      expected: join("/srv/state", "dataset-cache"),
    },
    { name: "is off with an empty STATE_DIR", env: { STATE_DIR: "" }, expected: "" },
    {
      name: "is off set empty",
      env: { DATASET_CACHE_DIR: "", STATE_DIR: "/srv/state" },
      expected: "",
    },
    {
      name: "takes a folder",
      env: { DATASET_CACHE_DIR: " /cache ", STATE_DIR: "" },
      expected: "/cache",
    },
  ] as const;
  for (const c of cases) it(c.name, () => assert.equal(folder(c.env), c.expected));
  it("is read without STATE_DIR: unset, it is left to the state folder the app gives", () => {
    assert.equal(
      readSettings(WATER_SETTINGS, { STATE_DIR: "/srv/state" }).datasetCacheDir,
      undefined,
    );
  });
});

describe("remapCodes() and placeRows()", () => {
  const widths = [
    {
      name: "8-bit",
      make: (codes: readonly number[]): CodeArray => Uint8Array.from(codes),
      max: 0xff,
    },
    {
      name: "16-bit",
      make: (codes: readonly number[]): CodeArray => Uint16Array.from(codes),
      max: 0xffff,
    },
    {
      name: "32-bit",
      make: (codes: readonly number[]): CodeArray => Uint32Array.from(codes),
      max: 0x10000,
    },
  ] as const;
  const local = [0, 3, 1, 1, 2, 0, 3];
  for (const from of widths) {
    for (const to of widths) {
      it(`maps ${from.name} codes into ${to.name} ones at an offset`, () => {
        const codes = codeArray(to.max, local.length + 2);
        assert.equal(codes.BYTES_PER_ELEMENT, to.make([]).BYTES_PER_ELEMENT);
        remapCodes(codes, 2, from.make(local), Uint32Array.of(0, 7, 5, 9));
        assert.deepEqual([...codes], [0, 0, 0, 9, 7, 7, 5, 0, 9]);
      });
    }
    it(`places ${from.name} codes' rows by key, ascending`, () => {
      const keyOf = Uint32Array.of(1, 0, 1, 2);
      const fill = Uint32Array.of(0, 2, 5);
      const rows = new Uint32Array(local.length);
      placeRows(from.make(local), keyOf, fill, rows);
      assert.deepEqual([...rows], [2, 3, 0, 4, 5, 1, 6]);
      assert.deepEqual([...fill], [2, 5, 7]);
    });
  }
});

function withByte(bytes: Uint8Array, at: number, value: number): Uint8Array {
  const copy = bytes.slice();
  copy[at] = value;
  return copy;
}
