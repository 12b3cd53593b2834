import { createReadStream } from "node:fs";
import { readdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { CsvSyntaxError, WaterError } from "./errors.ts";
import { readDatasetMetadata } from "./read_dataset_metadata.ts";
import type { WaterStore } from "./store.ts";
import { type DatasetInput, type DatasetLoadResult, type LoadIssue, StoreBuilder } from "./store_builder.ts";
import type { StoreBuilderOptions } from "./store_builder.ts";

/** What loading one dataset folder produced. */
export interface DatasetReport extends DatasetLoadResult {
  readonly folder: string;
  readonly doi: string;
}

/** What loading a datasets folder produced. */
export interface LoadReport {
  /** Datasets that loaded, in id order, with their skipped rows. */
  readonly datasets: readonly DatasetReport[];
  /** Datasets that could not be loaded at all, with the reason. */
  readonly failures: readonly LoadIssue[];
}

/** Options of {@linkcode loadDatasets}. */
export interface LoadDatasetsOptions extends StoreBuilderOptions {
  /**
   * Bytes read from a data file at a time.
   * @default {1048576}
   */
  chunkBytes?: number;
}

/**
 * Loads every dataset folder (`<dir>/<name>/metadata.json` and `data.csv`)
 * into a store. Datasets are ordered by `CreateTimestamp`, then folder name,
 * and ids follow that order, so the same files always give the same ids. A
 * dataset whose metadata or header cannot be read is reported and left out;
 * a bad row is reported and skipped; neither stops the other datasets.
 * @param dir the datasets folder
 * @param options chunk size and issue limits
 * @returns the store and the load report
 * @throws {WaterError} `ERR_WATER_DATASET` when `dir` cannot be read
 * @example
 * ```ts
 * const { store, report } = await loadDatasets("data/datasets");
 * console.log(`${report.datasets.length} datasets, ${report.failures.length} not loaded`);
 * ```
 */
export async function loadDatasets(
  dir: string,
  options: LoadDatasetsOptions = {},
): Promise<{ store: WaterStore; report: LoadReport }> {
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (cause) {
    throw new WaterError("ERR_WATER_DATASET", `Cannot read the datasets folder ${dir}: ${String(cause)}`, { cause });
  }
  const failures: LoadIssue[] = [];
  const inputs: { input: DatasetInput; file: string; created: number }[] = [];
  const folders: string[] = [];
  for (const entry of entries) {
    // Dataset folders may be symbolic links, e.g. to share data between servers.
    const linked = entry.isSymbolicLink() && (await stat(join(dir, entry.name)).catch(() => undefined))?.isDirectory();
    if (entry.isDirectory() || linked === true) folders.push(entry.name);
  }
  for (const name of folders.sort(compare)) {
    const entry = { name };
    const metadataFile = join(dir, entry.name, "metadata.json");
    try {
      const input = readDatasetMetadata(await readFile(metadataFile, "utf8"), entry.name);
      const created = Date.parse(String(input.metadata["CreateTimestamp"] ?? ""));
      inputs.push({ input, file: join(dir, entry.name, "data.csv"), created: Number.isNaN(created) ? Infinity : created });
    } catch (error) {
      failures.push({ file: metadataFile, line: 0, column: 0, message: messageOf(error) });
    }
  }
  inputs.sort((a, b) => a.created - b.created || compare(a.input.folder, b.input.folder));
  const builder = new StoreBuilder(options);
  const datasets: DatasetReport[] = [];
  const seenDoi = new Set<string>();
  const seenId = new Set<string>();
  for (const { input, file } of inputs) {
    if (seenDoi.has(input.doi) || seenId.has(input.id)) {
      failures.push({ file, line: 0, column: 0, message: `Cannot load dataset ${input.folder}: its DOI or Id is already used by another dataset` });
      continue;
    }
    builder.beginDataset(input, file);
    try {
      for await (const chunk of createReadStream(file, { highWaterMark: options.chunkBytes ?? 1 << 20 })) {
        builder.push(chunk as Uint8Array);
      }
      const result = builder.endDataset();
      seenDoi.add(input.doi);
      seenId.add(input.id);
      datasets.push({ folder: input.folder, doi: input.doi, ...result });
    } catch (error) {
      builder.abortDataset();
      const line = error instanceof CsvSyntaxError ? error.line : 0;
      const column = error instanceof CsvSyntaxError ? error.column : 0;
      failures.push({ file, line, column, message: messageOf(error) });
    }
  }
  return { store: builder.finish(), report: { datasets, failures } };
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
