import { createHash } from "node:crypto";
import { type FileHandle, open, readdir, readFile, stat } from "node:fs/promises";
import type { BigIntStats } from "node:fs";
import { join } from "node:path";
import { CsvSyntaxError, WaterError } from "./errors.ts";
import { type DatasetChange, type DatasetReport, type FoundDataset, planReload, type ReloadFailure, type ServedDataset } from "./plan_reload.ts";
import { readDatasetMetadata } from "./read_dataset_metadata.ts";
import type { WaterStore } from "./store.ts";
import { checkDataHeader, type DatasetLoadResult, type LoadIssue, StoreBuilder } from "./store_builder.ts";
import type { StoreBuilderOptions } from "./store_builder.ts";

/** What loading a datasets folder produced. */
export interface LoadReport {
  /** Datasets that loaded, in id order, with their skipped rows. */
  readonly datasets: readonly DatasetReport[];
  /** Datasets that could not be loaded at all, with the reason. */
  readonly failures: readonly LoadIssue[];
}

/** A dataset a load or reload serves, and how it came to. */
export interface ChangedDataset extends DatasetReport {
  readonly change: DatasetChange;
}

/** What a load or reload produced, compared with what was served before (nothing, for a first load). */
export interface ReloadReport extends LoadReport {
  /** The datasets now served, in id order. */
  readonly datasets: readonly ChangedDataset[];
  /** Datasets served before whose folder is gone. */
  readonly removed: readonly { readonly folder: string; readonly id: string; readonly doi: string }[];
  /** Folders that could not be loaded, and whether the version served before keeps serving. */
  readonly failures: readonly ReloadFailure[];
}

/** A loaded datasets folder: the store, the report, and what the next reload compares the folder with. */
export interface LoadedDatasets {
  readonly store: WaterStore;
  readonly report: ReloadReport;
  /** The datasets of `store`, in its order, with their files' fingerprints and their ids. */
  readonly served: readonly ServedDataset[];
}

/** Options of {@linkcode loadDatasets} and {@linkcode reloadDatasets}. */
export interface LoadDatasetsOptions extends StoreBuilderOptions {
  /**
   * Bytes read from a data file at a time.
   * @default {1048576}
   */
  chunkBytes?: number;
  /**
   * Told how far the reading has come after each chunk: the rows in the new
   * store so far (datasets kept from before included) and the bytes read of
   * the data files to read.
   */
  onProgress?: (state: LoadProgress) => void;
}

/** How far a load has come. */
export interface LoadProgress {
  readonly rows: number;
  readonly bytes: number;
  readonly totalBytes: number;
}

/**
 * Loads every dataset folder (`<dir>/<name>/metadata.json` and `data.csv`)
 * into a store. Datasets are ordered by `CreateTimestamp`, then folder name,
 * and ids follow that order, so the same files always give the same ids. A
 * dataset whose metadata or header cannot be read is reported and left out;
 * a bad row is reported and skipped; neither stops the other datasets.
 * @param dir the datasets folder
 * @param options chunk size and issue limits
 * @returns the store, the load report, and what {@linkcode reloadDatasets} compares with
 * @throws {WaterError} `ERR_WATER_DATASET` when `dir` cannot be read
 * @example
 * ```ts
 * const { store, report } = await loadDatasets("data/datasets");
 * console.log(`${report.datasets.length} datasets, ${report.failures.length} not loaded`);
 * ```
 */
export function loadDatasets(dir: string, options: LoadDatasetsOptions = {}): Promise<LoadedDatasets> {
  return reloadDatasets(dir, undefined, options);
}

/**
 * Loads a datasets folder again into a new store, keeping what did not
 * change (see `planReload`): a dataset whose files are the same as when it
 * was loaded (its `metadata.json` bytes, and its `data.csv`'s device, inode,
 * size, modification and change times) is taken over from the store before
 * with its ids, without reading it again; a new or changed one is read, with
 * ids after every id handed out before, so that a next link into a dataset
 * replaced since can be told from one into a dataset unchanged; one that
 * cannot be loaded (metadata, header, a clash) keeps its version before.
 * The store before is not changed.
 * @param dir the datasets folder
 * @param previous what serves now; undefined for a first load
 * @param options chunk size and issue limits
 * @returns the new store, the report, and what the next reload compares with
 * @throws {WaterError} `ERR_WATER_DATASET` when `dir` cannot be read, or a
 * changed dataset's data file changed again or could not be read while it
 * was loaded (the store before then keeps serving)
 */
export async function reloadDatasets(
  dir: string,
  previous: LoadedDatasets | undefined,
  options: LoadDatasetsOptions = {},
): Promise<LoadedDatasets> {
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (cause) {
    throw new WaterError("ERR_WATER_DATASET", `Cannot read the datasets folder ${dir}: ${String(cause)}`, { cause });
  }
  const folders: string[] = [];
  for (const entry of entries) {
    // Dataset folders may be symbolic links, e.g. to share data between servers.
    const linked = entry.isSymbolicLink() && (await stat(join(dir, entry.name)).catch(() => undefined))?.isDirectory();
    if (entry.isDirectory() || linked === true) folders.push(entry.name);
  }
  const served = previous?.served ?? [];
  const servedFingerprints = new Map(served.map((dataset) => [dataset.folder, dataset.fingerprint]));
  /** Each folder's data file as found, to tell whether it changed before it was read. */
  const dataFiles = new Map<string, string>();
  const found: FoundDataset[] = [];
  for (const name of folders.sort(compare)) {
    found.push(await findDataset(dir, name, servedFingerprints.get(name), dataFiles, options));
  }
  const plan = planReload(served, found);
  const builder = new StoreBuilder(options);
  const issued = previous?.store.issuedIds ?? { location: 0, observation: 0 };
  // Datasets read get ids after every id handed out before: none of theirs names a row of another version.
  let nextLocation = issued.location;
  let nextRow = issued.observation;
  const datasets: ChangedDataset[] = [];
  const next: ServedDataset[] = [];
  // The bytes to read: the data files of the datasets read (not those kept), for the progress's percent.
  let totalBytes = 0;
  for (const step of plan.steps) if (step.kind !== "copy") totalBytes += (await stat(step.found.dataFile).catch(() => undefined))?.size ?? 0;
  const progress = { bytes: 0 };
  const onChunk = options.onProgress === undefined ? undefined : (bytes: number): void => {
    progress.bytes += bytes;
    options.onProgress!({ rows: builder.rowsSoFar, bytes: progress.bytes, totalBytes });
  };
  const failures: ReloadFailure[] = [...plan.failures];
  for (const step of plan.steps) {
    if (step.kind === "copy") {
      const before = served[step.served]!;
      builder.copyDataset(previous!.store, step.served, before.ids);
      datasets.push({ ...before.report, change: step.change });
      next.push(before);
      continue;
    }
    const { found: dataset, input } = step;
    const ids = { locationBase: nextLocation, rowBase: nextRow };
    builder.beginDataset(input, dataset.dataFile, ids);
    let result: DatasetLoadResult;
    try {
      await readData(builder, dataset.dataFile, dataFiles.get(dataset.folder)!, options.chunkBytes ?? 1 << 20, onChunk);
      result = builder.endDataset();
    } catch (error) {
      builder.abortDataset();
      const line = error instanceof CsvSyntaxError ? error.line : 0;
      const column = error instanceof CsvSyntaxError ? error.column : 0;
      if (step.change === "replaced") {
        throw new WaterError(
          "ERR_WATER_DATASET",
          `Cannot reload ${dir}: ${dataset.dataFile}: ${messageOf(error)}; the datasets served before keep serving`,
          { cause: error },
        );
      }
      failures.push({ file: dataset.dataFile, line, column, message: messageOf(error), folder: dataset.folder, kept: false });
      continue;
    }
    nextLocation += result.locations;
    nextRow += result.rows;
    const report: DatasetReport = { folder: input.folder, doi: input.doi, ...result };
    datasets.push({ ...report, change: step.change });
    next.push({ folder: dataset.folder, fingerprint: dataset.fingerprint, id: input.id, doi: input.doi, ids, report });
  }
  const removed = plan.removed.map((index) => {
    const { folder, id, doi } = served[index]!;
    return { folder, id, doi };
  });
  return { store: builder.finish({ issuedIds: issued }), report: { datasets, removed, failures }, served: next };
}

/**
 * Reads a dataset folder's metadata and the identity of its data file: its
 * fingerprint, and whether it can be loaded. The header of a data file that
 * would replace a served dataset is checked now, so that a broken one keeps
 * the version served (a first load finds such a header while reading).
 */
async function findDataset(
  dir: string,
  name: string,
  servedFingerprint: string | undefined,
  dataFiles: Map<string, string>,
  options: LoadDatasetsOptions,
): Promise<FoundDataset> {
  const metadataFile = join(dir, name, "metadata.json");
  const dataFile = join(dir, name, "data.csv");
  const failed = (issue: LoadIssue, fingerprint: string): FoundDataset => ({ folder: name, dataFile, fingerprint, created: Infinity, metadata: { failure: issue } });
  let bytes: Uint8Array;
  try {
    bytes = await readFile(metadataFile);
  } catch (error) {
    return failed({ file: metadataFile, line: 0, column: 0, message: messageOf(error) }, "unreadable");
  }
  const metadataHash = createHash("sha256").update(bytes).digest("hex");
  let input;
  try {
    input = readDatasetMetadata(new TextDecoder().decode(bytes), name);
  } catch (error) {
    return failed({ file: metadataFile, line: 0, column: 0, message: messageOf(error) }, metadataHash);
  }
  const created = Date.parse(String(input.metadata["CreateTimestamp"] ?? ""));
  let handle: FileHandle;
  try {
    handle = await open(dataFile);
  } catch (error) {
    return failed({ file: dataFile, line: 0, column: 0, message: messageOf(error) }, metadataHash);
  }
  try {
    const identity = fileIdentity(await handle.stat({ bigint: true }));
    const fingerprint = `${metadataHash}:${identity}`;
    dataFiles.set(name, identity);
    if (servedFingerprint !== undefined && servedFingerprint !== fingerprint) {
      try {
        await probeHeader(handle, options.maxRecordBytes ?? 1 << 20);
      } catch (error) {
        const line = error instanceof CsvSyntaxError ? error.line : 0;
        const column = error instanceof CsvSyntaxError ? error.column : 0;
        return failed({ file: dataFile, line, column, message: messageOf(error) }, fingerprint);
      }
    }
    return { folder: name, dataFile, fingerprint, created: Number.isNaN(created) ? Infinity : created, metadata: { input } };
  } finally {
    await handle.close();
  }
}

/** What tells one version of a file from another without reading it: a write or a replacement changes one of these. */
function fileIdentity(stats: BigIntStats): string {
  return `${stats.dev}:${stats.ino}:${stats.size}:${stats.mtimeNs}:${stats.ctimeNs}`;
}

/** Reads a data file's first bytes until its header record is whole, and checks it. */
async function probeHeader(handle: FileHandle, maxBytes: number): Promise<void> {
  let buffer = new Uint8Array(64 * 1024);
  let length = 0;
  for (;;) {
    if (length === buffer.length) {
      const bigger = new Uint8Array(buffer.length * 2);
      bigger.set(buffer);
      buffer = bigger;
    }
    const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length);
    length += bytesRead;
    const final = bytesRead === 0;
    if (checkDataHeader(buffer.subarray(0, length), final)) return;
    if (final) return;
    if (length > maxBytes) throw new CsvSyntaxError(`found a header longer than ${maxBytes} bytes`, 1, 1, 0);
  }
}

/**
 * Feeds a data file to the open dataset, refusing a file that is not the
 * one found (replaced since) or that changed while it was read.
 */
async function readData(builder: StoreBuilder, file: string, identity: string, chunkBytes: number, onChunk?: (bytes: number) => void): Promise<void> {
  const handle = await open(file);
  try {
    if (fileIdentity(await handle.stat({ bigint: true })) !== identity) throw changed();
    for await (const chunk of handle.createReadStream({ highWaterMark: chunkBytes, autoClose: false, start: 0 })) {
      builder.push(chunk as Uint8Array);
      onChunk?.((chunk as Uint8Array).length);
    }
    if (fileIdentity(await handle.stat({ bigint: true })) !== identity) throw changed();
  } finally {
    await handle.close();
  }
}

function changed(): WaterError {
  return new WaterError("ERR_WATER_DATASET", "Cannot load the data file: it changed while it was being loaded; load again");
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
