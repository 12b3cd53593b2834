import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { generateDatasets } from "../../data/generate.ts";
import type { GenerateSummary } from "../../data/generate.ts";

const SMALL = { datasets: 3, locations: 12, observations: 3_000, seed: 7 } as const;

const STANDARD_HEADER = [
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
  "ActivityType",
  "ActivityMediaName",
  "ActivityStartDate",
  "ActivityStartTime",
  "ActivityEndDate",
  "ActivityEndTime",
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
  "ResultDetectionQuantitationLimitMeasure",
  "ResultDetectionQuantitationLimitUnit",
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
];

const REQUIRED = [
  "DatasetName",
  "MonitoringLocationID",
  "MonitoringLocationName",
  "MonitoringLocationType",
  "MonitoringLocationLatitude",
  "MonitoringLocationLongitude",
  "MonitoringLocationHorizontalCoordinateReferenceSystem",
  "ActivityType",
  "ActivityMediaName",
  "ActivityStartDate",
  "CharacteristicName",
  "ResultValueType",
];

const METADATA_KEYS = [
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
  "RegionIds",
];

/** A small RFC 4180 reader, kept here so the test does not depend on the loader under test. */
function readCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = "";
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (ch === '"') {
        quoted = false;
      } else {
        field += ch;
      }
    } else if (ch === '"') {
      quoted = true;
    } else if (ch === ",") {
      row.push(field);
      field = "";
    } else if (ch === "\r" && text[i + 1] === "\n") {
      row.push(field);
      rows.push(row);
      row = [];
      field = "";
      i++;
    } else {
      field += ch;
    }
  }
  if (field !== "" || row.length > 0) throw new SyntaxError("Cannot read CSV: no final CRLF");
  return rows;
}

function listFiles(dir: string): string[] {
  const out: string[] = [];
  for (
    const entry of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) =>
      a.name.localeCompare(b.name)
    )
  ) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...listFiles(full).map((f) => path.join(entry.name, f)));
    else out.push(entry.name);
  }
  return out;
}

function datasetFolders(dir: string): string[] {
  return fs.readdirSync(dir).filter((name) => fs.statSync(path.join(dir, name)).isDirectory())
    .sort();
}

describe("generateDatasets()", () => {
  const dirs: string[] = [];
  let first = "";
  let second = "";
  let summary: GenerateSummary | undefined;

  function tempDir(): string {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tributary-generate-"));
    dirs.push(dir);
    return dir;
  }

  before(async () => {
    first = tempDir();
    second = tempDir();
    summary = await generateDatasets({ out: first, ...SMALL });
    await generateDatasets({ out: second, ...SMALL });
  });

  after(() => {
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  });

  it("reports the requested sizes", () => {
    assert.ok(summary !== undefined);
    assert.equal(summary.datasets, SMALL.datasets);
    assert.equal(summary.locations, SMALL.locations);
    assert.equal(summary.observations, SMALL.observations);
    assert.ok(summary.characteristicNames >= 10, `${summary.characteristicNames} names`);
    let bytes = 0;
    for (const file of listFiles(first)) bytes += fs.statSync(path.join(first, file)).size;
    assert.equal(summary.bytes, bytes);
  });

  it("writes byte-identical files for the same seed", () => {
    const files = listFiles(first);
    assert.deepEqual(listFiles(second), files);
    assert.equal(files.length, SMALL.datasets * 2);
    for (const file of files) {
      const a = fs.readFileSync(path.join(first, file));
      const b = fs.readFileSync(path.join(second, file));
      assert.ok(a.equals(b), `${file} differs between runs`);
    }
  });

  it("writes different data for a different seed", async () => {
    const other = tempDir();
    await generateDatasets({ out: other, ...SMALL, seed: 8 });
    const folder = datasetFolders(first)[0] ?? "";
    const a = fs.readFileSync(path.join(first, folder, "data.csv"));
    const b = fs.readFileSync(path.join(other, folder, "data.csv"));
    assert.ok(!a.equals(b));
  });

  it("writes the 40 standard columns plus the two activity time zones", () => {
    const expected = [...STANDARD_HEADER];
    expected.splice(expected.indexOf("ActivityStartTime") + 1, 0, "ActivityStartTimeZone");
    expected.splice(expected.indexOf("ActivityEndTime") + 1, 0, "ActivityEndTimeZone");
    assert.equal(expected.length, 42);
    for (const folder of datasetFolders(first)) {
      const text = fs.readFileSync(path.join(first, folder, "data.csv"), "utf8");
      assert.ok(text.startsWith(`${expected.join(",")}\r\n`), folder);
    }
  });

  it("writes metadata.json with the listed keys", () => {
    const dois = new Set<string>();
    for (const folder of datasetFolders(first)) {
      const text = fs.readFileSync(path.join(first, folder, "metadata.json"), "utf8");
      assert.ok(text.endsWith("}\n"));
      const metadata: unknown = JSON.parse(text);
      assert.ok(typeof metadata === "object" && metadata !== null);
      const keys = Object.keys(metadata);
      assert.deepEqual(keys.filter((k) => k !== "LocationRegionIds"), METADATA_KEYS);
      const record = new Map(Object.entries(metadata));
      const doi = record.get("DOI");
      assert.ok(typeof doi === "string" && /^10\.25976\/[a-z0-9]{4}-[a-z]{2}[0-9]{2}$/.test(doi));
      dois.add(doi);
      assert.match(
        String(record.get("Id")),
        /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
      );
      assert.ok(Array.isArray(record.get("RegionIds")));
    }
    assert.equal(dois.size, SMALL.datasets);
  });

  it("never leaves a required column empty and keeps DatasetName equal to the metadata", () => {
    for (const folder of datasetFolders(first)) {
      const metadata = new Map(Object.entries(
        JSON.parse(fs.readFileSync(path.join(first, folder, "metadata.json"), "utf8")) as object,
      ));
      const [header, ...rows] = readCsv(
        fs.readFileSync(path.join(first, folder, "data.csv"), "utf8"),
      );
      assert.ok(header !== undefined && rows.length > 0);
      const columns = REQUIRED.map((name) => header.indexOf(name));
      for (const row of rows) {
        assert.equal(row.length, 42);
        for (const [k, column] of columns.entries()) {
          assert.notEqual(row[column] ?? "", "", `${REQUIRED[k]} empty in ${folder}`);
        }
        assert.equal(row[0], metadata.get("DatasetName"));
      }
    }
  });

  it("rejects fewer observations than locations", async () => {
    await assert.rejects(
      generateDatasets({ out: tempDir(), datasets: 2, locations: 10, observations: 5 }),
      { name: "RangeError" },
    );
  });
});
