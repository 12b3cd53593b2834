import { createHash } from "node:crypto";
import { type FileHandle, open, readdir, readFile, rm, stat } from "node:fs/promises";
import type { BigIntStats, Dirent } from "node:fs";
import { join } from "node:path";
import {
  type DatasetSnapshot,
  decodeDatasetSnapshot,
  encodeDatasetSnapshot,
} from "../store/dataset_snapshot.ts";
import { CsvSyntaxError, WaterError } from "../errors.ts";
import {
  type DatasetChange,
  type DatasetReport,
  type FoundDataset,
  planReload,
  type ReloadFailure,
  type ReloadStep,
  type ServedDataset,
} from "./plan_reload.ts";
import { readDatasetMetadata } from "./read_dataset_metadata.ts";
import {
  probeSnapshot,
  readWholeFile,
  snapshotPath,
  writeFileAtomically,
} from "./_snapshot_files.ts";
import type { WaterStore } from "../store/store.ts";
import { checkDataHeader } from "../store/check_data_header.ts";
import type { DatasetLoadResult, LoadIssue } from "../store/dataset_reader.ts";
import { StoreBuilder, type StoreBuilderOptions } from "../store/store_builder.ts";

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
  /**
   * For a dataset read (added or replaced), with `snapshotDir`: `read` when
   * it came from its snapshot, `written` when it came from its data file and
   * its snapshot was written; absent otherwise.
   */
  readonly snapshot?: "read" | "written";
}

/** What a load or reload produced, compared with what was served before (nothing, for a first load). */
export interface ReloadReport extends LoadReport {
  /** The datasets now served, in id order. */
  readonly datasets: readonly ChangedDataset[];
  /** Datasets served before whose folder is gone. */
  readonly removed: readonly {
    readonly folder: string;
    readonly id: string;
    readonly doi: string;
  }[];
  /** Folders that could not be loaded, and whether the version served before keeps serving. */
  readonly failures: readonly ReloadFailure[];
  /** Snapshots found damaged (their data file was read instead) or that could not be written; each a sentence. */
  readonly snapshotNotes: readonly string[];
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
   * the data files (and snapshots) to read.
   */
  onProgress?: (state: LoadProgress) => void;
  /**
   * A folder for the datasets' snapshots: each dataset read from its data
   * file is written there as built, and read back from there instead of its
   * data file while that file is the same (device, inode, size, modification
   * and change times; see `encodeDatasetSnapshot`). A snapshot that is
   * damaged is reported and its data file read. Empty or absent: no snapshots.
   */
  snapshotDir?: string;
  /**
   * Whether a datasets folder that does not exist is loaded as none (an
   * empty store) rather than refused: for a default folder that a new
   * project does not have yet, and may make before a reload.
   * @default {false}
   */
  optionalFolder?: boolean;
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
export function loadDatasets(
  dir: string,
  options: LoadDatasetsOptions = {},
): Promise<LoadedDatasets> {
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
 * @throws {WaterError} `ERR_WATER_DATASET` when `dir` cannot be read (unless
 * `optionalFolder` and it does not exist), or a changed dataset's data file
 * changed again or could not be read while it was loaded (the store before
 * then keeps serving)
 */
export async function reloadDatasets(
  dir: string,
  previous: LoadedDatasets | undefined,
  options: LoadDatasetsOptions = {},
): Promise<LoadedDatasets> {
  let entries: Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (cause) {
    const code = (cause as NodeJS.ErrnoException).code;
    if (options.optionalFolder !== true || (code !== "ENOENT" && code !== "ENOTDIR")) {
      throw new WaterError(
        "ERR_WATER_DATASET",
        `Cannot read the datasets folder ${dir}: ${String(cause)}`,
        { cause },
      );
    }
    entries = [];
  }
  const folders: string[] = [];
  for (const entry of entries) {
    // Dataset folders may be symbolic links, e.g. to share data between servers.
    const linked = entry.isSymbolicLink() &&
      (await stat(join(dir, entry.name)).catch(() => undefined))?.isDirectory();
    if (entry.isDirectory() || linked === true) folders.push(entry.name);
  }
  const served = previous?.served ?? [];
  const servedFingerprints = new Map(
    served.map((dataset) => [dataset.folder, dataset.fingerprint]),
  );
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
  const snapshotDir = options.snapshotDir ?? "";
  const snapshots = snapshotDir === ""
    ? undefined
    : await findSnapshots(plan.steps, snapshotDir, dataFiles, options);
  // The bytes to read: the data files (or snapshots) of the datasets read (not those kept), for the progress's percent.
  let totalBytes = 0;
  for (const step of plan.steps) {
    if (step.kind === "copy") continue;
    totalBytes += snapshots?.sizeOf(step) ?? (await stat(step.found.dataFile).catch(() =>
      undefined
    ))?.size ?? 0;
  }
  const progress = { bytes: 0 };
  const onChunk = options.onProgress === undefined ? undefined : (bytes: number): void => {
    progress.bytes += bytes;
    options.onProgress!({ rows: builder.rowsSoFar, bytes: progress.bytes, totalBytes });
  };
  const failures: ReloadFailure[] = [...plan.failures];
  const snapshotNotes: string[] = [];
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
    const cached = await snapshots?.read(step);
    if (cached !== undefined && "snapshot" in cached) {
      let added = false;
      try {
        builder.addBuiltDataset(input, cached.snapshot.built, ids);
        added = true;
      } catch (error) {
        snapshotNotes.push(
          `Dataset snapshot ${cached.path} not used (${
            messageOf(error)
          }); ${dataset.dataFile} read instead`,
        );
      }
      if (added) {
        onChunk?.(cached.size);
        const result = cached.snapshot.result;
        nextLocation += result.locations;
        nextRow += result.rows;
        const report: DatasetReport = { folder: input.folder, doi: input.doi, ...result };
        datasets.push({ ...report, change: step.change, snapshot: "read" });
        next.push({
          folder: dataset.folder,
          fingerprint: dataset.fingerprint,
          id: input.id,
          doi: input.doi,
          ids,
          report,
        });
        continue;
      }
    }
    if (cached !== undefined) {
      // Its snapshot was counted; its data file is read after all.
      if ("note" in cached) snapshotNotes.push(cached.note);
      totalBytes += (await stat(dataset.dataFile).catch(() => undefined))?.size ?? 0;
    }
    builder.beginDataset(input, dataset.dataFile, ids);
    let result: DatasetLoadResult;
    try {
      await readData(
        builder,
        dataset.dataFile,
        dataFiles.get(dataset.folder)!,
        options.chunkBytes ?? 1 << 20,
        onChunk,
      );
      result = builder.endDataset();
    } catch (error) {
      builder.abortDataset();
      const line = error instanceof CsvSyntaxError ? error.line : 0;
      const column = error instanceof CsvSyntaxError ? error.column : 0;
      if (step.change === "replaced") {
        throw new WaterError(
          "ERR_WATER_DATASET",
          `Cannot reload ${dir}: ${dataset.dataFile}: ${
            messageOf(error)
          }; the datasets served before keep serving`,
          { cause: error },
        );
      }
      failures.push({
        file: dataset.dataFile,
        line,
        column,
        message: messageOf(error),
        folder: dataset.folder,
        kept: false,
      });
      continue;
    }
    nextLocation += result.locations;
    nextRow += result.rows;
    let written = false;
    if (snapshotDir !== "") {
      const path = snapshotPath(snapshotDir, dataset.dataFile);
      const key = snapshotKey(dataFiles.get(dataset.folder)!, options);
      try {
        await writeFileAtomically(
          path,
          encodeDatasetSnapshot({
            key,
            result,
            built: builder.builtDataset(builder.datasetCount - 1),
          }),
        );
        written = true;
      } catch (error) {
        snapshotNotes.push(`Dataset snapshot ${path} not written: ${messageOf(error)}`);
      }
    }
    const report: DatasetReport = { folder: input.folder, doi: input.doi, ...result };
    datasets.push({
      ...report,
      change: step.change,
      ...(written ? { snapshot: "written" as const } : {}),
    });
    next.push({
      folder: dataset.folder,
      fingerprint: dataset.fingerprint,
      id: input.id,
      doi: input.doi,
      ids,
      report,
    });
  }
  const removed = plan.removed.map((index) => {
    const { folder, id, doi } = served[index]!;
    return { folder, id, doi };
  });
  // A removed dataset's snapshot goes with it (the folder may be shared: only the snapshots of this folder's datasets are ours to remove).
  if (snapshotDir !== "") {
    for (const { folder } of removed) {
      const path = snapshotPath(snapshotDir, join(dir, folder, "data.csv"));
      try {
        await rm(path, { force: true });
      } catch (error) {
        snapshotNotes.push(
          `Dataset snapshot ${path} of removed ${folder} not deleted: ${messageOf(error)}`,
        );
      }
    }
  }
  return {
    store: builder.finish({ issuedIds: issued }),
    report: { datasets, removed, failures, snapshotNotes },
    served: next,
  };
}

/** Snapshots read ahead of the datasets that need them, a few at a time. */
const SNAPSHOTS_AHEAD = 4;

/** A snapshot as read: the dataset, or why it cannot be used. */
type SnapshotOutcome =
  | { readonly snapshot: DatasetSnapshot; readonly path: string; readonly size: number }
  | { readonly note: string };

/** What a data file's snapshot must have been made under: the file's identity and the options that shape what reading it gives. */
function snapshotKey(identity: string, options: LoadDatasetsOptions): string {
  return JSON.stringify({
    data: identity,
    maxIssuesPerFile: options.maxIssuesPerFile ?? 100,
    maxRecordBytes: options.maxRecordBytes ?? 1 << 20,
  });
}

/**
 * Finds the snapshots of the datasets a load reads whose first bytes say
 * they are of their data file as found, and reads them when asked, up to
 * {@linkcode SNAPSHOTS_AHEAD} ahead in the steps' order, so that reading and
 * checking one overlaps with the next.
 */
async function findSnapshots(
  steps: readonly ReloadStep[],
  dir: string,
  dataFiles: ReadonlyMap<string, string>,
  options: LoadDatasetsOptions,
): Promise<
  {
    sizeOf(step: ReloadStep): number | undefined;
    read(step: ReloadStep): Promise<SnapshotOutcome> | undefined;
  }
> {
  const found = new Map<ReloadStep, { path: string; key: string; size: number; index: number }>();
  const order: ReloadStep[] = [];
  await Promise.all(steps.map(async (step) => {
    if (step.kind === "copy") return;
    const path = snapshotPath(dir, step.found.dataFile);
    const key = snapshotKey(dataFiles.get(step.found.folder)!, options);
    const size = await probeSnapshot(path, key);
    if (size !== undefined) found.set(step, { path, key, size, index: 0 });
  }));
  for (const step of steps) {
    const entry = found.get(step);
    if (entry === undefined) continue;
    entry.index = order.length;
    order.push(step);
  }
  const reads = new Map<ReloadStep, Promise<SnapshotOutcome>>();
  const start = (step: ReloadStep): void => {
    if (reads.has(step) || step.kind === "copy") return;
    const { path, key } = found.get(step)!;
    const { input, found: dataset } = step;
    reads.set(
      step,
      readWholeFile(path).then(
        (bytes): SnapshotOutcome => {
          try {
            return {
              snapshot: decodeDatasetSnapshot(bytes, { key, input, file: dataset.dataFile }),
              path,
              size: bytes.length,
            };
          } catch (error) {
            return {
              note: `Dataset snapshot ${path} not used (${
                messageOf(error)
              }); ${dataset.dataFile} read instead`,
            };
          }
        },
        (error: unknown): SnapshotOutcome => ({
          note: `Dataset snapshot ${path} not read (${
            messageOf(error)
          }); ${dataset.dataFile} read instead`,
        }),
      ),
    );
  };
  return {
    sizeOf: (step) => found.get(step)?.size,
    read: (step) => {
      const entry = found.get(step);
      if (entry === undefined) return undefined;
      for (let k = entry.index; k < Math.min(order.length, entry.index + SNAPSHOTS_AHEAD); k++) {
        start(order[k]!);
      }
      const outcome = reads.get(step)!;
      // Read once: the buffer goes with the store built from it.
      reads.delete(step);
      return outcome;
    },
  };
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
  const failed = (issue: LoadIssue, fingerprint: string): FoundDataset => ({
    folder: name,
    dataFile,
    fingerprint,
    created: Infinity,
    metadata: { failure: issue },
  });
  let bytes: Uint8Array;
  try {
    bytes = await readFile(metadataFile);
  } catch (error) {
    return failed(
      { file: metadataFile, line: 0, column: 0, message: messageOf(error) },
      "unreadable",
    );
  }
  const metadataHash = createHash("sha256").update(bytes).digest("hex");
  let input;
  try {
    input = readDatasetMetadata(new TextDecoder().decode(bytes), name);
  } catch (error) {
    return failed(
      { file: metadataFile, line: 0, column: 0, message: messageOf(error) },
      metadataHash,
    );
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
    return {
      folder: name,
      dataFile,
      fingerprint,
      created: Number.isNaN(created) ? Infinity : created,
      metadata: { input },
    };
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
    if (length > maxBytes) {
      throw new CsvSyntaxError(`found a header longer than ${maxBytes} bytes`, 1, 1, 0);
    }
  }
}

/**
 * Feeds a data file to the open dataset, refusing a file that is not the
 * one found (replaced since) or that changed while it was read.
 */
async function readData(
  builder: StoreBuilder,
  file: string,
  identity: string,
  chunkBytes: number,
  onChunk?: (bytes: number) => void,
): Promise<void> {
  const handle = await open(file);
  try {
    if (fileIdentity(await handle.stat({ bigint: true })) !== identity) throw changed();
    for await (
      const chunk of handle.createReadStream({
        highWaterMark: chunkBytes,
        autoClose: false,
        start: 0,
      })
    ) {
      builder.push(chunk as Uint8Array);
      onChunk?.((chunk as Uint8Array).length);
    }
    if (fileIdentity(await handle.stat({ bigint: true })) !== identity) throw changed();
  } finally {
    await handle.close();
  }
}

function changed(): WaterError {
  return new WaterError(
    "ERR_WATER_DATASET",
    "Cannot load the data file: it changed while it was being loaded; load again",
  );
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
