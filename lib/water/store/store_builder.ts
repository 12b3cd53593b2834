import { NUMERIC_OBSERVATION_COLUMNS, OBSERVATION_COLUMNS } from "../fields.ts";
import { copyStoreDataset } from "./_copy_dataset.ts";
import { storeColumns } from "./_store_columns.ts";
import { StoreDictionary } from "./_store_dictionary.ts";
import {
  type BuiltDataset,
  type BuiltLocation,
  checkBuiltDataset,
  type DatasetIds,
} from "./built_dataset.ts";
import { type DatasetInput, type DatasetLoadResult, DatasetReader } from "./dataset_reader.ts";
import type { IssuedIds } from "./store.ts";
import { WaterStore } from "./store.ts";

/** Options of {@linkcode StoreBuilder.finish}. */
export interface FinishOptions {
  /**
   * The highest ids handed out before, by the stores this one replaces, so
   * that the store can tell their retired ids (see `WaterStore.isRetiredId`).
   * @default {{ location: 0, observation: 0 }}
   */
  issuedIds?: IssuedIds;
}

/** Options of {@linkcode StoreBuilder}. */
export interface StoreBuilderOptions {
  /**
   * Issues kept per data file; the rest are only counted.
   * @default {100}
   */
  maxIssuesPerFile?: number;
  /**
   * Longest record, in bytes, before a file is given up on (e.g. a quote never closed).
   * @default {1048576}
   */
  maxRecordBytes?: number;
}

/**
 * Builds a {@linkcode WaterStore} from datasets, one at a time, fed as raw
 * bytes of their DataStream CSV files. Rows are checked as they are read (a
 * wrong field count, an empty required field, a bad number, date, time or
 * time zone, a quoting error); a bad row is skipped and reported with its
 * file, line and column, and the rest of the file still loads. Rows are
 * staged in fixed buffers and appended to typed-array columns in bulk; at
 * the end of a dataset its rows are regrouped by location if the file
 * interleaved them.
 *
 * Reading a data file is the {@linkcode DatasetReader}'s; the builder places
 * each dataset's ids, joins its text columns to the store's dictionaries
 * (`StoreDictionary`) and, at {@linkcode finish}, puts the store's columns
 * and posting indexes together.
 * @example
 * ```ts
 * const builder = new StoreBuilder();
 * builder.beginDataset(input, "data/datasets/a/data.csv");
 * builder.push(bytes);
 * const result = builder.endDataset();
 * const store = builder.finish();
 * ```
 */
export class StoreBuilder {
  readonly #reader: DatasetReader;
  /** Where the open dataset's ids start. */
  #openIds: DatasetIds | undefined;
  readonly #datasets: DatasetInput[] = [];
  readonly #datasetLocationStarts: number[] = [0];
  /** Each dataset's id bases, in dataset order. */
  readonly #ids: DatasetIds[] = [];
  /** The last location and observation ids given so far. */
  #lastLocationId = 0;
  #lastRowId = 0;
  readonly #locations: BuiltLocation[] = [];
  #locationRowStarts = new Uint32Array(1024);
  #rowCount = 0;
  /**
   * Each dataset as built, in dataset order, its text columns' codes already
   * codes of the store's dictionaries; `finish` puts them one after another.
   */
  #built: BuiltDataset[] = [];
  /** The store's dictionary of each text column (undefined for numbers), grown dataset by dataset. */
  readonly #dictionaries: (StoreDictionary | undefined)[];
  #finished = false;

  /**
   * Creates an empty builder.
   * @param options issue and record limits
   */
  constructor(options: StoreBuilderOptions = {}) {
    this.#reader = new DatasetReader(
      options.maxIssuesPerFile ?? 100,
      options.maxRecordBytes ?? 1 << 20,
    );
    this.#dictionaries = OBSERVATION_COLUMNS.map((
      name,
    ) => (NUMERIC_OBSERVATION_COLUMNS.has(name) ? undefined : new StoreDictionary()));
  }

  /**
   * Starts a dataset; its data file's bytes follow through {@linkcode push}.
   * @param input the dataset's checked metadata
   * @param file the data file's path, for issues
   * @param ids where its ids start; by default right after the previous dataset's
   * @throws {TypeError} when a dataset is already open or the builder is finished
   * @throws {RangeError} when `ids` would not come after the previous dataset's ids
   */
  beginDataset(input: DatasetInput, file: string, ids?: DatasetIds): void {
    if (this.#reader.isOpen || this.#finished) {
      throw new TypeError("Cannot begin a dataset: another is open or the store is finished");
    }
    this.#openIds = this.#checkIds(ids);
    this.#reader.begin(input, file);
  }

  /**
   * Feeds the next bytes of the open dataset's data file.
   * @param bytes the next bytes, in file order
   * @throws {CsvSyntaxError} for a header that cannot be used (the dataset must then be aborted)
   * @throws {TypeError} when no dataset is open
   */
  push(bytes: Uint8Array): void {
    this.#reader.push(bytes);
  }

  /**
   * Ends the open dataset: reads what is left, regroups rows by location if
   * needed, and adds the dataset to the store.
   * @returns the dataset's row and issue counts
   * @throws {CsvSyntaxError} for a missing or unusable header (the dataset must then be aborted)
   * @throws {TypeError} when no dataset is open
   */
  endDataset(): DatasetLoadResult {
    const { input, built, result } = this.#reader.end();
    const ids = this.#openIds!;
    this.#openIds = undefined;
    this.#addBuilt(input, ids, built);
    return result;
  }

  /** Drops the open dataset and everything read from it, e.g. after a read error. */
  abortDataset(): void {
    this.#reader.abort();
    this.#openIds = undefined;
  }

  /** Datasets added so far, the open one left out. */
  get datasetCount(): number {
    return this.#built.length;
  }

  /**
   * A dataset added so far as it was built (from its data file, a copy or a
   * snapshot), e.g. to keep it in a snapshot.
   * @param index its index in the order datasets were added
   * @returns the dataset
   * @throws {TypeError} after {@linkcode finish}, which lets go of them
   * @throws {RangeError} for an index out of range
   */
  builtDataset(index: number): BuiltDataset {
    if (this.#finished) throw new TypeError("Cannot give a built dataset: the store is finished");
    const built = this.#built[index];
    if (built === undefined) {
      throw new RangeError(
        `Cannot give built dataset ${index}: the builder has ${this.#built.length}`,
      );
    }
    return built;
  }

  /**
   * Adds a dataset already built, e.g. read back from a snapshot: the store
   * then holds what reading its data file would have given it. Codes with a
   * `base` that is this store's dictionary as it is now are taken as they
   * are (a snapshot read back in the order it was written: no pass over its
   * rows); others are mapped.
   * @param input the dataset's checked metadata
   * @param built its locations and columns
   * @param ids where its ids start; by default right after the previous dataset's
   * @throws {TypeError} when a dataset is open or the builder is finished, or `built` does not hold together
   * @throws {RangeError} when `ids` would not come after the previous dataset's ids
   */
  addBuiltDataset(input: DatasetInput, built: BuiltDataset, ids?: DatasetIds): void {
    if (this.#reader.isOpen || this.#finished) {
      throw new TypeError("Cannot add a dataset: another is open or the store is finished");
    }
    checkBuiltDataset(built);
    this.#addBuilt(input, this.#checkIds(ids), built);
  }

  /**
   * Adds a dataset of another store as it is there: its metadata, its
   * locations and its observations in the same order, so that with the same
   * `ids` every row keeps its id. Nothing is read or checked again (a reload
   * keeps an unchanged dataset, or the old version of a broken one, this way).
   * @param source the store that holds it
   * @param dataset its index there
   * @param ids where its ids start; by default right after the previous dataset's
   * @returns its row and location counts
   * @throws {TypeError} when a dataset is open or the builder is finished
   * @throws {RangeError} for an unknown dataset, or `ids` that would not come after the previous dataset's ids
   */
  copyDataset(
    source: WaterStore,
    dataset: number,
    ids?: DatasetIds,
  ): { readonly rows: number; readonly locations: number } {
    if (this.#reader.isOpen || this.#finished) {
      throw new TypeError("Cannot copy a dataset: another is open or the store is finished");
    }
    const record = source.datasets[dataset];
    if (record === undefined) {
      throw new RangeError(`Cannot copy dataset ${dataset}: the store has ${source.datasetCount}`);
    }
    const checked = this.#checkIds(ids);
    const { input, built } = copyStoreDataset(source, dataset, record);
    this.#addBuilt(input, checked, built);
    return { rows: built.rows, locations: built.locations.length };
  }

  /**
   * Adds a built dataset whose ids are checked: its locations and rows in
   * place, its text columns' codes made codes of the store's dictionaries.
   */
  #addBuilt(input: DatasetInput, ids: DatasetIds, dataset: BuiltDataset): void {
    const columns = dataset.columns.map((
      column,
      s,
    ) => (column.kind === "dict" ? this.#dictionaries[s]!.join(column) : column));
    const built: BuiltDataset = { ...dataset, columns };
    const base = this.#locations.length;
    for (const location of built.locations) this.#locations.push(location);
    this.#reserveLocationStarts(base + built.locations.length + 1);
    for (let l = 0; l < built.locations.length; l++) {
      this.#locationRowStarts[base + l + 1] = this.#locationRowStarts[base + l]! +
        built.locationRows[l]!;
    }
    this.#rowCount += built.rows;
    this.#built.push(built);
    this.#commit(input, ids, built.locations.length, built.rows);
  }

  /**
   * Builds the store: merges the datasets' columns, builds the location and
   * dataset columns, derived fields and posting indexes.
   * @param options the ids handed out before
   * @returns the store
   * @throws {TypeError} when a dataset is still open
   */
  finish(options: FinishOptions = {}): WaterStore {
    if (this.#reader.isOpen) {
      throw new TypeError("Cannot finish the store: a dataset is still open");
    }
    this.#finished = true;
    const extents = this.#built.map((built) => built.temporalExtent);
    // The datasets' columns, each let go of once copied into the store's.
    const observations = this.#built.map((dataset) => [...dataset.columns]);
    this.#built = [];
    const datasets = this.#datasets.map((d, i) => ({
      id: d.id,
      doi: d.doi,
      folder: d.folder,
      metadata: { ...d.metadata, TemporalExtent: extents[i]! },
    }));
    const columns = storeColumns({
      observations,
      dictionaries: this.#dictionaries,
      rows: this.#rowCount,
      locations: this.#locations,
      datasets,
      datasetLocationStarts: this.#datasetLocationStarts,
      locationRowStarts: this.#locationRowStarts,
      ids: this.#ids,
    });
    const locationCount = this.#locations.length;
    const issued = options.issuedIds ?? { location: 0, observation: 0 };
    return new WaterStore({
      datasets,
      datasetLocationStarts: Uint32Array.from(this.#datasetLocationStarts),
      locationRowStarts: this.#locationRowStarts.slice(0, locationCount + 1),
      columns,
      issuedIds: {
        location: Math.max(issued.location, this.#lastLocationId),
        observation: Math.max(issued.observation, this.#lastRowId),
      },
    });
  }

  /** Rows added so far, the open dataset's included: what a load's progress counts. */
  get rowsSoFar(): number {
    return this.#rowCount + this.#reader.rows;
  }

  /** The ids a new dataset starts from: as given, checked, or right after the last dataset's. */
  #checkIds(ids: DatasetIds | undefined): DatasetIds {
    if (ids === undefined) return { locationBase: this.#lastLocationId, rowBase: this.#lastRowId };
    const { locationBase, rowBase } = ids;
    if (
      !Number.isSafeInteger(locationBase) || !Number.isSafeInteger(rowBase) ||
      locationBase < this.#lastLocationId || rowBase < this.#lastRowId
    ) {
      throw new RangeError(
        `Cannot place a dataset at location ids ${locationBase} and observation ids ${rowBase}: ` +
          `ids must ascend, and the last dataset ends at ${this.#lastLocationId} and ${this.#lastRowId}`,
      );
    }
    return ids;
  }

  /** Adds a dataset whose locations and rows are in place. */
  #commit(input: DatasetInput, ids: DatasetIds, locations: number, rows: number): void {
    this.#datasets.push(input);
    this.#datasetLocationStarts.push(this.#locations.length);
    this.#ids.push(ids);
    this.#lastLocationId = ids.locationBase + locations;
    this.#lastRowId = ids.rowBase + rows;
  }

  #reserveLocationStarts(size: number): void {
    if (size <= this.#locationRowStarts.length) return;
    const bigger = new Uint32Array(Math.max(size, this.#locationRowStarts.length * 2));
    bigger.set(this.#locationRowStarts);
    this.#locationRowStarts = bigger;
  }
}
