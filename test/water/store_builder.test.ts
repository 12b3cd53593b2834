import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { formatCsvRow, readDatasetMetadata, StoreBuilder } from "../../lib/water/mod.ts";
import type { Column, DictColumn } from "../../lib/columnar/mod.ts";
import { buildStore, FIXTURE_HEADER, fixtureRow } from "../_helpers/water.ts";

const HEADER = formatCsvRow(FIXTURE_HEADER);
const META = {
  DOI: "10.25976/test-aa01",
  DatasetName: "Fixture",
  RegionIds: ["hub.atlantic", "admin.2.ca"],
};

function dict(column: Column | undefined): DictColumn {
  assert.equal(column?.kind, "dict");
  return column as DictColumn;
}

function valueAt(column: Column | undefined, row: number): unknown {
  const d = dict(column);
  return d.values[d.codes[row]!];
}

describe("StoreBuilder", () => {
  it("loads rows, locations and the dataset", () => {
    const csv = HEADER + fixtureRow({ ResultValue: "7.4", ResultUnit: "None" }) +
      fixtureRow({
        MonitoringLocationID: "L2",
        MonitoringLocationName: "River",
        CharacteristicName: "Temperature, water",
      });
    const { store, results } = buildStore([{ folder: "a", metadata: META, csv }]);
    assert.deepEqual({
      rows: results[0]!.rows,
      locations: results[0]!.locations,
      skipped: results[0]!.skippedRows,
    }, {
      rows: 2,
      locations: 2,
      skipped: 0,
    });
    assert.equal(store.observationCount, 2);
    assert.equal(store.locationCount, 2);
    assert.equal(valueAt(store.column("observation.CharacteristicName"), 1), "Temperature, water");
  });

  it("groups an interleaved file's rows by location, in first-seen order", () => {
    const csv = HEADER +
      fixtureRow({ MonitoringLocationID: "A", ResultValue: 1, ResultUnit: "None" }) +
      fixtureRow({ MonitoringLocationID: "B", ResultValue: 2, ResultUnit: "None" }) +
      fixtureRow({ MonitoringLocationID: "A", ResultValue: 3, ResultUnit: "None" }) +
      fixtureRow({ MonitoringLocationID: "C", ResultValue: 4, ResultUnit: "None" }) +
      fixtureRow({ MonitoringLocationID: "B", ResultValue: 5, ResultUnit: "None" });
    const { store } = buildStore([{ folder: "a", metadata: META, csv }]);
    const values = store.column("observation.ResultValue");
    assert.equal(values?.kind, "number");
    assert.deepEqual(Array.from(values.kind === "number" ? values.values : []), [1, 3, 2, 5, 4]);
    assert.deepEqual(Array.from(store.locationRowStarts), [0, 2, 4, 5]);
  });

  it("gives the same store whatever size the chunks are", () => {
    let csv = HEADER;
    for (let i = 0; i < 40; i++) {
      csv += fixtureRow({
        MonitoringLocationID: `L${i % 3}`,
        ResultComment: i % 5 === 0 ? 'note, with "quotes"\r\nand a line' : "",
        CharacteristicName: i % 2 === 0 ? "pH" : "Temperature, water",
        ResultValue: i / 4,
        ResultUnit: "None",
      });
    }
    const whole = buildStore([{ folder: "a", metadata: META, csv }]).store;
    for (const chunk of [1, 2, 3, 7, 64, 1000]) {
      const store = buildStore([{ folder: "a", metadata: META, csv }], chunk).store;
      assert.deepEqual(
        Array.from(store.locationRowStarts),
        Array.from(whole.locationRowStarts),
        `chunk ${chunk}`,
      );
      for (const key of ["observation.ResultComment", "observation.CharacteristicName"]) {
        const a = dict(store.column(key));
        const b = dict(whole.column(key));
        assert.deepEqual(
          Array.from(a.codes).map((c) => a.values[c]),
          Array.from(b.codes).map((c) => b.values[c]),
        );
      }
    }
  });

  const bad = [
    { name: "a row with too few fields", row: "Fixture,L1\r\n", column: 3, field: undefined },
    {
      name: "an empty required field",
      row: fixtureRow({ CharacteristicName: "" }),
      column: 21,
      field: "CharacteristicName",
    },
    {
      name: "a value that is not a number",
      row: fixtureRow({ ResultValue: "7,1x" }),
      column: 24,
      field: "ResultValue",
    },
    {
      name: "an impossible date",
      row: fixtureRow({ ActivityStartDate: "2021-02-29" }),
      column: 14,
      field: "ActivityStartDate",
    },
    {
      name: "a malformed time",
      row: fixtureRow({ ActivityStartTime: "25:00" }),
      column: 15,
      field: "ActivityStartTime",
    },
    {
      name: "a malformed time zone",
      row: fixtureRow({ ActivityStartTime: "10:00", ActivityStartTimeZone: "EST" }),
      column: 41,
      field: "ActivityStartTimeZone",
    },
    {
      name: "a latitude out of range",
      row: fixtureRow({ MonitoringLocationID: "L9", MonitoringLocationLatitude: "91" }),
      column: 4,
      field: "MonitoringLocationLatitude",
    },
    { name: "a stray quote", row: 'Fixture,L"1\r\n', column: 2, field: undefined },
  ] as const;
  for (const c of bad) {
    it(`skips and reports ${c.name} with its line and column`, () => {
      const csv = HEADER + fixtureRow({}) + c.row + fixtureRow({ CharacteristicName: "Nitrate" });
      const { store, results } = buildStore([{ folder: "a", metadata: META, csv }]);
      const result = results[0]!;
      assert.equal(result.rows, 2);
      assert.equal(result.skippedRows, 1);
      const issue = result.issues[0]!;
      assert.deepEqual({
        file: issue.file,
        line: issue.line,
        column: issue.column,
        field: issue.field,
      }, {
        file: "a/data.csv",
        line: 3,
        column: c.column,
        field: c.field,
      });
      assert.equal(valueAt(store.column("observation.CharacteristicName"), 1), "Nitrate");
    });
  }

  it("counts lines inside quoted fields when reporting a later row", () => {
    const csv = HEADER + fixtureRow({ ResultComment: "one\ntwo\nthree" }) +
      fixtureRow({ ResultValue: "x" });
    const { results } = buildStore([{ folder: "a", metadata: META, csv }]);
    assert.equal(results[0]!.issues[0]!.line, 5);
  });

  it("refuses a header without a required column", () => {
    const builder = new StoreBuilder();
    builder.beginDataset(readDatasetMetadata(JSON.stringify(META), "a"), "a/data.csv");
    assert.throws(
      () => builder.push(new TextEncoder().encode("DatasetName,MonitoringLocationID\r\nx,y\r\n")),
      {
        name: "CsvSyntaxError",
        line: 1,
      },
    );
    builder.abortDataset();
    assert.equal(builder.finish().observationCount, 0);
  });

  it("refuses a header that names a column twice", () => {
    const builder = new StoreBuilder();
    builder.beginDataset(readDatasetMetadata(JSON.stringify(META), "a"), "a/data.csv");
    assert.throws(
      () =>
        builder.push(
          new TextEncoder().encode(`${HEADER.trim()},pH\r\n`.replace(",pH", ",CharacteristicName")),
        ),
      {
        name: "CsvSyntaxError",
      },
    );
  });

  it("refuses a data file without a header", () => {
    const builder = new StoreBuilder();
    builder.beginDataset(readDatasetMetadata(JSON.stringify(META), "a"), "a/data.csv");
    assert.throws(() => builder.endDataset(), { name: "CsvSyntaxError", line: 1 });
  });

  it("keeps earlier datasets when a later one is aborted", () => {
    const builder = new StoreBuilder();
    builder.beginDataset(readDatasetMetadata(JSON.stringify(META), "a"), "a/data.csv");
    builder.push(new TextEncoder().encode(HEADER + fixtureRow({})));
    builder.endDataset();
    builder.beginDataset(
      readDatasetMetadata(JSON.stringify({ ...META, DOI: "10.25976/test-bb02" }), "b"),
      "b/data.csv",
    );
    builder.push(new TextEncoder().encode(HEADER + fixtureRow({ MonitoringLocationID: "Z" })));
    builder.abortDataset();
    const store = builder.finish();
    assert.equal(store.datasetCount, 1);
    assert.equal(store.locationCount, 1);
    assert.equal(store.observationCount, 1);
  });

  it("gives up on a record that never ends and keeps the rows before it", () => {
    const builder = new StoreBuilder({ maxRecordBytes: 1000 });
    builder.beginDataset(readDatasetMetadata(JSON.stringify(META), "a"), "a/data.csv");
    builder.push(new TextEncoder().encode(HEADER + fixtureRow({}) + 'Fixture,"never closed'));
    builder.push(new TextEncoder().encode("x".repeat(2000)));
    const result = builder.endDataset();
    assert.equal(result.rows, 1);
    assert.match(result.issues[0]!.message, /longer than 1000 bytes/);
  });

  it("derives ActivityGroupType and ActivityStartYear with indexes", () => {
    const csv = HEADER +
      fixtureRow({ ActivityType: "Sample-Routine", ActivityStartDate: "2019-05-01" }) +
      fixtureRow({ ActivityType: "Field Msr/Obs", ActivityStartDate: "2021-05-01" });
    const { store } = buildStore([{ folder: "a", metadata: META, csv }]);
    assert.deepEqual([0, 1].map((r) => valueAt(store.column("observation.ActivityGroupType"), r)), [
      "Lab Sample",
      "Field Measure",
    ]);
    const years = dict(store.column("observation.ActivityStartYear"));
    assert.deepEqual([0, 1].map((r) => years.values[years.codes[r]!]), [2019, 2021]);
    assert.ok(years.index !== undefined);
  });

  it("builds a posting index whose rows are ascending per key", () => {
    let csv = HEADER;
    for (let i = 0; i < 30; i++) {
      csv += fixtureRow({
        MonitoringLocationID: `L${i % 4}`,
        CharacteristicName: ["pH", "Nitrate", "Ammonia"][i % 3]!,
      });
    }
    const { store } = buildStore([{ folder: "a", metadata: META, csv }]);
    const column = dict(store.column("observation.CharacteristicName"));
    const index = column.index!;
    for (let key = 0; key + 1 < index.starts.length; key++) {
      const rows = Array.from(index.rows.subarray(index.starts[key]!, index.starts[key + 1]!));
      assert.deepEqual(rows, [...rows].sort((a, b) => a - b));
      for (const row of rows) assert.equal(column.codes[row], key);
    }
    assert.equal(index.rows.length, store.observationCount);
  });

  it("reads a file with a byte order mark and LF line ends", () => {
    const csv = "\uFEFF" + (HEADER + fixtureRow({})).replaceAll("\r\n", "\n");
    const { results } = buildStore([{ folder: "a", metadata: META, csv }]);
    assert.equal(results[0]!.rows, 1);
  });

  it("ignores unknown columns and reports them", () => {
    const csv = HEADER.replace("\r\n", ",WellID\r\n") + fixtureRow({}).replace("\r\n", ",W-1\r\n");
    const { results } = buildStore([{ folder: "a", metadata: META, csv }]);
    assert.deepEqual(results[0]!.ignoredColumns, ["WellID"]);
    assert.equal(results[0]!.rows, 1);
  });

  it("applies per-location regions over the dataset's", () => {
    const metadata = { ...META, LocationRegionIds: { L2: ["hub.pacific"] } };
    const csv = HEADER + fixtureRow({}) + fixtureRow({ MonitoringLocationID: "L2" });
    const { store } = buildStore([{ folder: "a", metadata, csv }]);
    const regions = store.column("location.RegionId");
    assert.equal(regions?.kind, "values");
    assert.deepEqual(regions.kind === "values" ? regions.values : [], [[
      "hub.atlantic",
      "admin.2.ca",
    ], ["hub.pacific"]]);
  });
});
