import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { formatCsvRow, loadDatasets, readDatasetMetadata } from "../../lib/water/mod.ts";
import { FIXTURE_HEADER, fixtureRow } from "../_helpers/water.ts";

const root = mkdtempSync(join(tmpdir(), "tributary-load-"));
after(() => rmSync(root, { recursive: true, force: true }));

function writeDataset(
  dir: string,
  folder: string,
  metadata: unknown,
  csv: string | undefined,
): void {
  mkdirSync(join(dir, folder), { recursive: true });
  writeFileSync(
    join(dir, folder, "metadata.json"),
    typeof metadata === "string" ? metadata : JSON.stringify(metadata),
  );
  if (csv !== undefined) writeFileSync(join(dir, folder, "data.csv"), csv);
}

const HEADER = formatCsvRow(FIXTURE_HEADER);

describe("loadDatasets()", () => {
  const dir = join(root, "mixed");
  writeDataset(dir, "late", {
    DOI: "10.25976/late-aa01",
    DatasetName: "Late",
    CreateTimestamp: "2022-01-01T00:00:00Z",
  }, HEADER + fixtureRow({ DatasetName: "Late", MonitoringLocationID: "X" }));
  writeDataset(
    dir,
    "early",
    { DOI: "10.25976/earl-aa02", DatasetName: "Early", CreateTimestamp: "2018-01-01T00:00:00Z" },
    HEADER + fixtureRow({ DatasetName: "Early" }) +
      fixtureRow({ DatasetName: "Early", ResultValue: "bad" }),
  );
  writeDataset(dir, "broken-json", '{ "DOI": ', HEADER);
  writeDataset(dir, "no-data", { DOI: "10.25976/nodt-aa03", DatasetName: "No data" }, undefined);
  writeDataset(
    dir,
    "bad-header",
    { DOI: "10.25976/badh-aa04", DatasetName: "Bad header" },
    "a,b\r\n1,2\r\n",
  );
  writeDataset(dir, "same-doi", {
    DOI: "10.25976/late-aa01",
    DatasetName: "Copy",
    CreateTimestamp: "2023-01-01T00:00:00Z",
  }, HEADER + fixtureRow({}));

  it("loads the good datasets in CreateTimestamp order", async () => {
    const { store, report } = await loadDatasets(dir);
    assert.deepEqual(report.datasets.map((d) => d.folder), ["early", "late"]);
    assert.deepEqual(store.datasets.map((d) => d.doi), [
      "10.25976/earl-aa02",
      "10.25976/late-aa01",
    ]);
    assert.equal(store.observationCount, 2);
  });

  it("reports the skipped row of a good dataset with file, line and column", async () => {
    const { report } = await loadDatasets(dir);
    const early = report.datasets.find((d) => d.folder === "early")!;
    assert.equal(early.skippedRows, 1);
    assert.deepEqual(
      { file: early.issues[0]!.file, line: early.issues[0]!.line, column: early.issues[0]!.column },
      { file: join(dir, "early", "data.csv"), line: 3, column: 24 },
    );
  });

  it("reports each unloadable dataset without stopping the others", async () => {
    const { report } = await loadDatasets(dir);
    const failed = report.failures.map((f) => f.file.split("/").slice(-2).join("/")).sort();
    assert.deepEqual(failed, [
      "bad-header/data.csv",
      "broken-json/metadata.json",
      "no-data/data.csv",
      "same-doi/data.csv",
    ]);
    const header = report.failures.find((f) => f.file.includes("bad-header"))!;
    assert.equal(header.line, 1);
  });

  it("gives the same ids on every load", async () => {
    const first = await loadDatasets(dir);
    const second = await loadDatasets(dir);
    assert.deepEqual(second.store.datasets.map((d) => d.id), first.store.datasets.map((d) => d.id));
    assert.deepEqual(
      Array.from(second.store.locationRowStarts),
      Array.from(first.store.locationRowStarts),
    );
  });

  it("refuses a folder that does not exist", async () => {
    await assert.rejects(loadDatasets(join(root, "missing")), {
      name: "WaterError",
      code: "ERR_WATER_DATASET",
    });
  });
});

describe("readDatasetMetadata()", () => {
  const base = { DOI: "10.25976/abcd-ef12", DatasetName: "Name" };

  it("derives a stable UUID from the DOI when Id is absent", () => {
    const a = readDatasetMetadata(JSON.stringify(base), "a");
    const b = readDatasetMetadata(JSON.stringify(base), "b");
    assert.equal(a.id, b.id);
    assert.match(a.id, /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it("keeps a given Id, lower-cased", () => {
    const input = readDatasetMetadata(
      JSON.stringify({ ...base, Id: "0A1B2C3D-0000-4000-8000-000000000000" }),
      "a",
    );
    assert.equal(input.id, "0a1b2c3d-0000-4000-8000-000000000000");
  });

  it("fills absent fields with null and lists with empty arrays", () => {
    const input = readDatasetMetadata(JSON.stringify({ ...base, Keywords: "one" }), "a");
    assert.equal(input.metadata["Abstract"], null);
    assert.deepEqual(input.metadata["TopicCategoryCode"], []);
    assert.deepEqual(input.metadata["Keywords"], ["one"]);
  });

  const bad = [
    {
      name: "JSON that does not parse, with its line",
      text: '{\n  "DOI": ,\n}',
      message: /line 2/,
    },
    { name: "an array", text: "[]", message: /JSON object/ },
    { name: "a missing DOI", text: JSON.stringify({ DatasetName: "x" }), message: /"DOI"/ },
    {
      name: "an empty DatasetName",
      text: JSON.stringify({ DOI: base.DOI, DatasetName: " " }),
      message: /"DatasetName"/,
    },
    { name: "a bad Id", text: JSON.stringify({ ...base, Id: "42" }), message: /"Id"/ },
    {
      name: "a bad timestamp",
      text: JSON.stringify({ ...base, CreateTimestamp: "yesterday" }),
      message: /"CreateTimestamp"/,
    },
    {
      name: "a number where text belongs",
      text: JSON.stringify({ ...base, Version: 1 }),
      message: /"Version"/,
    },
    {
      name: "a bad region list",
      text: JSON.stringify({ ...base, RegionIds: [1] }),
      message: /"RegionIds"/,
    },
    {
      name: "a bad per-location region map",
      text: JSON.stringify({ ...base, LocationRegionIds: [] }),
      message: /LocationRegionIds/,
    },
  ] as const;
  for (const c of bad) {
    it(`refuses ${c.name}`, () => {
      assert.throws(() => readDatasetMetadata(c.text, "a"), (error: Error & { code?: string }) => {
        assert.equal(error.code, "ERR_WATER_DATASET");
        assert.match(error.message, c.message);
        return true;
      });
    });
  }
});

describe("readDatasetMetadata() syntax errors", () => {
  const cases = [
    { text: '{\n  "DOI": ,\n}', where: "line 2, column 10" },
    { text: '{"a": [1, 2,]}', where: "line 1, column 13" },
    { text: '{"a": tru}', where: "line 1, column 7" },
    { text: '{"a": 1} x', where: "line 1, column 10" },
    { text: '{"a": "\u0001"}', where: "line 1, column 7" },
    { text: "", where: "line 1, column 1" },
  ] as const;
  for (const c of cases) {
    it(`points at ${c.where} in ${JSON.stringify(c.text)}`, () => {
      assert.throws(
        () => readDatasetMetadata(c.text, "a"),
        (error: Error) => error.message.includes(c.where),
      );
    });
  }
});

describe("loadDatasets() with linked folders", () => {
  it("follows a symbolic link to a dataset folder and skips a dangling one", async () => {
    const { symlinkSync } = await import("node:fs");
    const source = join(root, "source");
    writeDataset(
      source,
      "real",
      { DOI: "10.25976/link-aa01", DatasetName: "Linked" },
      HEADER + fixtureRow({ DatasetName: "Linked" }),
    );
    const dir = join(root, "linked");
    mkdirSync(dir, { recursive: true });
    symlinkSync(join(source, "real"), join(dir, "via-link"));
    symlinkSync(join(source, "missing"), join(dir, "dangling"));
    const { store, report } = await loadDatasets(dir);
    assert.deepEqual(report.datasets.map((d) => d.folder), ["via-link"]);
    assert.equal(store.observationCount, 1);
  });
});
