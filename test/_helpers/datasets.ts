// Dataset folders written on disk, for tests that load and reload them.
import { mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { formatCsvRow } from "../../lib/water/mod.ts";
import { FIXTURE_HEADER, fixtureRow } from "./water.ts";

/** One version of a dataset: every row's `ResultValue` is `version * 100000 + its number`, so a row tells its version. */
export interface DatasetSpec {
  readonly doi: string;
  readonly name: string;
  readonly version: number;
  readonly rows: number;
  /**
   * Locations the rows are spread over, in turn.
   * @default {3}
   */
  readonly locations?: number;
  /** `CreateTimestamp`, e.g. `2020-01-01T00:00:00Z`. */
  readonly created?: string;
  /** Region ids of all its locations. */
  readonly regions?: readonly string[];
}

/** The version a `ResultValue` of a {@linkcode DatasetSpec} row belongs to. */
export function versionOf(resultValue: unknown): number {
  return Math.floor(Number(resultValue) / 100_000);
}

/** The `data.csv` text of a dataset version. */
export function datasetCsv(spec: DatasetSpec): string {
  const locations = spec.locations ?? 3;
  let csv = formatCsvRow(FIXTURE_HEADER);
  for (let i = 0; i < spec.rows; i++) {
    const location = i % locations;
    csv += fixtureRow({
      DatasetName: spec.name,
      MonitoringLocationID: `${spec.name}-L${location}`,
      MonitoringLocationName: `${spec.name} v${spec.version} location ${location}`,
      MonitoringLocationLatitude: (44 + location / 10).toFixed(4),
      MonitoringLocationLongitude: (-63 - spec.version / 10).toFixed(4),
      ActivityStartDate: `20${10 + (i % 12)}-0${1 + (i % 9)}-1${i % 10}`,
      CharacteristicName: i % 2 === 0 ? "pH" : "Temperature, water",
      ResultValue: spec.version * 100_000 + i,
    });
  }
  return csv;
}

/** Writes a file whole under its name at once (a rename), as a careful operator replaces one. */
export function writeAtomically(file: string, text: string): void {
  writeFileSync(`${file}.tmp`, text);
  renameSync(`${file}.tmp`, file);
}

/**
 * Writes (or replaces) a dataset folder `<dir>/<folder>` with a version's
 * metadata and data, each file replaced at once.
 */
export function writeDataset(dir: string, folder: string, spec: DatasetSpec): void {
  mkdirSync(join(dir, folder), { recursive: true });
  const metadata = {
    DOI: spec.doi,
    DatasetName: spec.name,
    RegionIds: spec.regions ?? ["hub.atlantic"],
    ...(spec.created === undefined ? {} : { CreateTimestamp: spec.created }),
  };
  writeAtomically(join(dir, folder, "metadata.json"), JSON.stringify(metadata));
  writeAtomically(join(dir, folder, "data.csv"), datasetCsv(spec));
}

/** Removes a dataset folder. */
export function removeDataset(dir: string, folder: string): void {
  rmSync(join(dir, folder), { recursive: true, force: true });
}
