import { createHash, type Hash } from "node:crypto";
import type { CodeArray, Column, PostingIndex } from "../../columnar/mod.ts";
import { isCalendarDate, type Scalar } from "../../odata/mod.ts";
import { ByteDictionary, type ValueCheck } from "./_byte_dictionary.ts";
import { CodeColumn, codeArray, NumberColumnBuilder, placeRows, remapCodes } from "./_code_column.ts";
import { CsvScanner, FIELD_ESCAPED, unescapeField } from "../load/csv_scanner.ts";
import { CsvSyntaxError } from "../errors.ts";
import {
  DERIVED_METADATA_COLUMNS,
  LIST_METADATA_COLUMNS,
  LOCATION_COLUMNS,
  METADATA_COLUMNS,
  NUMERIC_LOCATION_COLUMNS,
  NUMERIC_OBSERVATION_COLUMNS,
  OBSERVATION_COLUMNS,
  REQUIRED_CSV_COLUMNS,
} from "../fields.ts";
import { normalizeCoordinates } from "./normalize_coordinates.ts";
import { parseNumberBytes } from "./_parse_number.ts";
import type { DatasetRecord, IssuedIds } from "./store.ts";
import { WaterStore } from "./store.ts";
import { activityGroupTypeOf } from "../vocabulary.ts";

/** A dataset's metadata, read and checked, ready for {@linkcode StoreBuilder.beginDataset}. */
export interface DatasetInput extends DatasetRecord {
  /** Region ids of every location of the dataset. */
  readonly regionIds: readonly string[];
  /** Region ids of particular locations, by MonitoringLocationID; they replace `regionIds`. */
  readonly locationRegionIds: ReadonlyMap<string, readonly string[]>;
}

/** A problem with one row or with a whole file; line and column are 1-based. */
export interface LoadIssue {
  readonly file: string;
  readonly line: number;
  /** 1-based field number; 0 when the issue is not about one field. */
  readonly column: number;
  /** The header name of the column, when known. */
  readonly field?: string;
  readonly message: string;
}

/** What loading one dataset's data file produced. */
export interface DatasetLoadResult {
  readonly rows: number;
  readonly locations: number;
  readonly skippedRows: number;
  /** The first issues (up to the builder's limit); `skippedRows` counts them all. */
  readonly issues: readonly LoadIssue[];
  /** Header columns that are not DataStream columns, ignored. */
  readonly ignoredColumns: readonly string[];
}

/**
 * Where a dataset's ids start: its locations' ids are `locationBase + 1`
 * onwards, its observations' `rowBase + 1` onwards. Datasets follow one
 * another in ascending ids; a gap between two is ids no row has.
 */
export interface DatasetIds {
  readonly locationBase: number;
  readonly rowBase: number;
}

/** A location as a dataset holds it: its id, its values of `LOCATION_COLUMNS`, its region ids. */
export interface BuiltLocation {
  readonly id: string;
  /** Values in `LOCATION_COLUMNS` order: numbers, text, or null. */
  readonly values: readonly Scalar[];
  readonly regionIds: readonly string[];
}

/**
 * One observation column of a built dataset, over the dataset's rows: text
 * as a dictionary of the dataset's values (`values[0]` is null; the others
 * in the order the data file first had them) with the rows of each
 * (`counts`) and a code per row, or numbers (NaN is null). Without `base`,
 * a code is an index into `values`; with it, see {@linkcode DictionaryBase}.
 */
export type BuiltColumn =
  | { readonly kind: "dict"; readonly values: readonly Scalar[]; readonly codes: CodeArray; readonly counts: Uint32Array; readonly base?: DictionaryBase }
  | { readonly kind: "number"; readonly values: Float64Array };

/**
 * The store dictionary a built dataset's codes are codes of: the dictionary
 * of its column as it was before the dataset joined a store (its first
 * `length` values, known by their `hash`), followed by the dataset's values
 * that were new to it, in their order. A store whose dictionary is that one
 * takes the codes as they are, without a pass over them; any other maps them
 * through `codeOf`.
 */
export interface DictionaryBase {
  /** The values before the dataset's. */
  readonly length: number;
  /** The SHA-256 (hex) of those values, as {@linkcode StoreBuilder} hashes a dictionary. */
  readonly hash: string;
  /** The code of each of `values` in the codes. */
  readonly codeOf: Uint32Array;
}

/**
 * A dataset as read, before it joins a store: its locations, its rows
 * grouped by location, and its observation columns. {@linkcode StoreBuilder.finish}
 * merges the datasets' dictionaries in dataset order, so that a dataset
 * added built ({@linkcode StoreBuilder.addBuiltDataset}) gives the store the
 * same codes as reading its data file again would; a snapshot keeps this.
 */
export interface BuiltDataset {
  readonly rows: number;
  readonly locations: readonly BuiltLocation[];
  /** Rows of each location, in order; they sum to `rows`. */
  readonly locationRows: Uint32Array;
  /** The columns of `OBSERVATION_COLUMNS`, in that order. */
  readonly columns: readonly BuiltColumn[];
  /** The first and last `ActivityStartDate` of the rows (`YYYY-MM-DD`), or none. */
  readonly temporalExtent: readonly string[];
}

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

const STAGE_ROWS = 16_384;
const TIME = /^(?:[01]?[0-9]|2[0-3]):[0-5]?[0-9](?::[0-5]?[0-9](?:\.[0-9]{1,3})?)?$/;
const TIME_ZONE = /^(?:Z|[+-](?:0[0-9]|1[0-9]|2[0-4]):[0-5][0-9])$/;

const CHECKS: Readonly<Record<string, ValueCheck>> = {
  date: (text) => (isCalendarDate(text) ? undefined : `found "${text}", which is not a YYYY-MM-DD date`),
  time: (text) => (TIME.test(text) ? undefined : `found "${text}", which is not a HH:MM[:SS[.sss]] time`),
  zone: (text) => (TIME_ZONE.test(text) ? undefined : `found "${text}", which is not a time zone like -04:00 or Z`),
};

function checkFor(name: string): ValueCheck | undefined {
  if (name.endsWith("Date")) return CHECKS["date"];
  if (name.endsWith("TimeZone")) return CHECKS["zone"];
  if (name.endsWith("Time")) return CHECKS["time"];
  return undefined;
}

/** An observation column while a dataset is read: the dataset's own dictionary and codes, or numbers. */
interface ObservationSlot {
  readonly name: string;
  readonly numeric: boolean;
  readonly check: ValueCheck | undefined;
  dictionary: ByteDictionary | undefined;
  codes: CodeColumn | undefined;
  numbers: NumberColumnBuilder | undefined;
  readonly stagedCodes: Uint32Array;
  readonly stagedNumbers: Float64Array;
}

type LocationRecord = BuiltLocation;

interface OpenDataset {
  readonly input: DatasetInput;
  readonly file: string;
  readonly locationBase: number;
  readonly ids: DatasetIds;
  header: readonly string[] | undefined;
  /** Per header column: index into the observation slots, or -1. */
  observationTarget: Int32Array;
  /** Per header column: index into LOCATION_COLUMNS, or -1. */
  locationTarget: Int32Array;
  locationIdColumn: number;
  requiredColumns: readonly number[];
  /** Observation columns the file does not have; their values are null. */
  absentSlots: readonly ObservationSlot[];
  ignoredColumns: string[];
  locationDictionary: ByteDictionary;
  /** Local location code (dictionary code) to global location index, -1 until created. */
  localToGlobal: Int32Array;
  /** Local location code of each committed row, for regrouping. */
  rowLocal: Uint32Array;
  rows: number;
  grouped: boolean;
  lastLocal: number;
  staged: number;
  skipped: number;
  issues: LoadIssue[];
  carry: Uint8Array;
  carryLength: number;
  atStart: boolean;
  line: number;
  stopped: boolean;
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
  readonly #maxIssues: number;
  readonly #maxRecord: number;
  readonly #scanner = new CsvScanner();
  readonly #slots: ObservationSlot[];
  readonly #slotIndex: ReadonlyMap<string, number>;
  readonly #datasets: DatasetInput[] = [];
  readonly #datasetLocationStarts: number[] = [0];
  /** Each dataset's id bases, in dataset order. */
  readonly #ids: DatasetIds[] = [];
  /** The last location and observation ids given so far. */
  #lastLocationId = 0;
  #lastRowId = 0;
  readonly #locations: LocationRecord[] = [];
  #locationRowStarts = new Uint32Array(1024);
  #rowCount = 0;
  /**
   * Each dataset as built, in dataset order, its text columns' codes already
   * codes of the store's dictionaries; `finish` puts them one after another.
   */
  #built: BuiltDataset[] = [];
  /** The store's dictionary of each text column (undefined for numbers), grown dataset by dataset. */
  readonly #dictionaries: (StoreDictionary | undefined)[];
  #open: OpenDataset | undefined;
  #scratch = new Uint8Array(4096);
  #finished = false;

  /**
   * Creates an empty builder.
   * @param options issue and record limits
   */
  constructor(options: StoreBuilderOptions = {}) {
    this.#maxIssues = options.maxIssuesPerFile ?? 100;
    this.#maxRecord = options.maxRecordBytes ?? 1 << 20;
    this.#slots = OBSERVATION_COLUMNS.map((name) => {
      const numeric = NUMERIC_OBSERVATION_COLUMNS.has(name);
      return {
        name,
        numeric,
        check: checkFor(name),
        dictionary: undefined,
        codes: undefined,
        numbers: undefined,
        stagedCodes: new Uint32Array(numeric ? 0 : STAGE_ROWS),
        stagedNumbers: new Float64Array(numeric ? STAGE_ROWS : 0),
      };
    });
    this.#slotIndex = new Map(this.#slots.map((slot, i) => [slot.name, i]));
    this.#dictionaries = this.#slots.map((slot) => (slot.numeric ? undefined : newStoreDictionary()));
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
    if (this.#open !== undefined || this.#finished) {
      throw new TypeError("Cannot begin a dataset: another is open or the store is finished");
    }
    const checked = this.#checkIds(ids);
    // Each dataset gets dictionaries of its own: what it adds to the store does not depend on the datasets before it.
    for (const slot of this.#slots) {
      slot.dictionary = slot.numeric ? undefined : new ByteDictionary(slot.check);
      slot.codes = slot.numeric ? undefined : new CodeColumn();
      slot.numbers = slot.numeric ? new NumberColumnBuilder() : undefined;
    }
    this.#open = {
      input,
      file,
      ids: checked,
      locationBase: this.#locations.length,
      header: undefined,
      observationTarget: new Int32Array(0),
      locationTarget: new Int32Array(0),
      locationIdColumn: -1,
      requiredColumns: [],
      absentSlots: [],
      ignoredColumns: [],
      locationDictionary: new ByteDictionary(),
      localToGlobal: new Int32Array(64).fill(-1),
      rowLocal: new Uint32Array(1024),
      rows: 0,
      grouped: true,
      lastLocal: 0,
      staged: 0,
      skipped: 0,
      issues: [],
      carry: new Uint8Array(0),
      carryLength: 0,
      atStart: true,
      line: 1,
      stopped: false,
    };
  }

  /**
   * Feeds the next bytes of the open dataset's data file.
   * @param chunk bytes, in file order
   * @throws {CsvSyntaxError} for a header that cannot be used (the dataset must then be aborted)
   */
  push(bytes: Uint8Array): void {
    const open = this.#requireOpen();
    if (open.stopped || bytes.length === 0) return;
    // A plain Uint8Array view keeps byte access monomorphic (a Node Buffer is a subclass).
    const chunk = bytes.constructor === Uint8Array ? bytes : new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length);
    let buf: Uint8Array;
    let limit: number;
    if (open.carryLength > 0) {
      const needed = open.carryLength + chunk.length;
      if (open.carry.length < needed) {
        const bigger = new Uint8Array(Math.max(needed, open.carry.length * 2));
        bigger.set(open.carry.subarray(0, open.carryLength));
        open.carry = bigger;
      }
      open.carry.set(chunk, open.carryLength);
      buf = open.carry;
      limit = needed;
    } else {
      buf = chunk;
      limit = chunk.length;
    }
    const pos = this.#consume(open, buf, 0, limit, false);
    const rest = limit - pos;
    if (rest > this.#maxRecord) {
      this.#fileIssue(open, `found a record longer than ${this.#maxRecord} bytes (is a quote never closed?); ` +
        "the rest of the file is skipped");
      open.stopped = true;
      open.carryLength = 0;
      return;
    }
    if (buf === open.carry) {
      open.carry.copyWithin(0, pos, limit);
    } else {
      if (open.carry.length < rest) open.carry = new Uint8Array(Math.max(rest, 65_536));
      open.carry.set(buf.subarray(pos, limit));
    }
    open.carryLength = rest;
  }

  /**
   * Ends the open dataset: reads what is left, regroups rows by location if
   * needed, and adds the dataset to the store.
   * @returns the dataset's row and issue counts
   * @throws {CsvSyntaxError} for a missing or unusable header (the dataset must then be aborted)
   */
  endDataset(): DatasetLoadResult {
    const open = this.#requireOpen();
    if (!open.stopped && open.carryLength > 0) this.#consume(open, open.carry, 0, open.carryLength, true);
    if (open.header === undefined) {
      throw new CsvSyntaxError("found no header row", 1, 1, 0);
    }
    this.#flush(open);
    if (!open.grouped) this.#regroup(open);
    const locationCount = this.#locations.length - open.locationBase;
    const counts = new Uint32Array(locationCount);
    for (let i = 0; i < open.rows; i++) counts[open.localToGlobal[open.rowLocal[i]!]! - open.locationBase]!++;
    const columns = this.#slots.map((slot): BuiltColumn => {
      if (slot.numeric) return { kind: "number", values: slot.numbers!.finish() };
      const dictionary = slot.dictionary!;
      dictionary.seal();
      const codes = slot.codes!.finish();
      return { kind: "dict", values: dictionary.values, codes, counts: countCodes(codes, dictionary.size) };
    });
    for (const slot of this.#slots) {
      slot.dictionary = undefined;
      slot.codes = undefined;
      slot.numbers = undefined;
    }
    this.#open = undefined;
    this.#addBuilt(open.input, open.ids, {
      rows: open.rows,
      locations: this.#locations.slice(open.locationBase),
      locationRows: counts,
      columns,
      temporalExtent: temporalExtentOf(columns[this.#slotIndex.get("ActivityStartDate")!]),
    }, false);
    return {
      rows: open.rows,
      locations: locationCount,
      skippedRows: open.skipped,
      issues: open.issues,
      ignoredColumns: open.ignoredColumns,
    };
  }

  /** Drops the open dataset and everything read from it, e.g. after a read error. */
  abortDataset(): void {
    const open = this.#open;
    if (open === undefined) return;
    open.staged = 0;
    for (const slot of this.#slots) {
      slot.dictionary = undefined;
      slot.codes = undefined;
      slot.numbers = undefined;
    }
    this.#locations.length = open.locationBase;
    this.#open = undefined;
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
    if (built === undefined) throw new RangeError(`Cannot give built dataset ${index}: the builder has ${this.#built.length}`);
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
    if (this.#open !== undefined || this.#finished) {
      throw new TypeError("Cannot add a dataset: another is open or the store is finished");
    }
    checkBuilt(built);
    this.#addBuilt(input, this.#checkIds(ids), built, true);
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
  copyDataset(source: WaterStore, dataset: number, ids?: DatasetIds): { readonly rows: number; readonly locations: number } {
    if (this.#open !== undefined || this.#finished) {
      throw new TypeError("Cannot copy a dataset: another is open or the store is finished");
    }
    const record = source.datasets[dataset];
    if (record === undefined) throw new RangeError(`Cannot copy dataset ${dataset}: the store has ${source.datasetCount}`);
    const checked = this.#checkIds(ids);
    const metadata: Record<string, string | readonly string[] | null> = {};
    for (const [name, value] of Object.entries(record.metadata)) if (!DERIVED_METADATA_COLUMNS.has(name)) metadata[name] = value;
    const input: DatasetInput = { id: record.id, doi: record.doi, folder: record.folder, metadata, regionIds: [], locationRegionIds: new Map() };
    const locationFrom = source.datasetLocationStarts[dataset]!;
    const locationTo = source.datasetLocationStarts[dataset + 1]!;
    const rowFrom = source.locationRowStarts[locationFrom]!;
    const rowTo = source.locationRowStarts[locationTo]!;
    const locationColumns = LOCATION_COLUMNS.map((name) => source.column(`location.${name}`));
    const regions = source.column("location.RegionId");
    const locations: LocationRecord[] = [];
    const locationRows = new Uint32Array(locationTo - locationFrom);
    for (let l = locationFrom; l < locationTo; l++) {
      const values = locationColumns.map((column) => (column === undefined ? null : scalarAt(column, l)));
      locations.push({
        id: String(values[0]),
        values,
        regionIds: regions?.kind === "values" ? (regions.values[l] as readonly string[]) : [],
      });
      locationRows[l - locationFrom] = source.locationRowStarts[l + 1]! - source.locationRowStarts[l]!;
    }
    const columns = this.#slots.map((slot) => copyColumn(slot.numeric, source.column(`observation.${slot.name}`), rowFrom, rowTo));
    const rows = rowTo - rowFrom;
    const temporalExtent = temporalExtentOf(columns[this.#slotIndex.get("ActivityStartDate")!]);
    this.#addBuilt(input, checked, { rows, locations, locationRows, columns, temporalExtent }, true);
    return { rows, locations: locationTo - locationFrom };
  }

  /**
   * Adds a built dataset whose ids are checked, its text columns' codes
   * made codes of the store's dictionaries; its locations are in place
   * already when it was read here.
   */
  #addBuilt(input: DatasetInput, ids: DatasetIds, dataset: BuiltDataset, addLocations: boolean): void {
    const columns = dataset.columns.map((column, s) => (column.kind === "dict" ? joinDictionary(this.#dictionaries[s]!, column) : column));
    const built: BuiltDataset = { ...dataset, columns };
    const base = this.#locations.length - (addLocations ? 0 : built.locations.length);
    if (addLocations) for (const location of built.locations) this.#locations.push(location);
    this.#reserveLocationStarts(base + built.locations.length + 1);
    for (let l = 0; l < built.locations.length; l++) {
      this.#locationRowStarts[base + l + 1] = this.#locationRowStarts[base + l]! + built.locationRows[l]!;
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
   */
  finish(options: FinishOptions = {}): WaterStore {
    if (this.#open !== undefined) throw new TypeError("Cannot finish the store: a dataset is still open");
    this.#finished = true;
    const columns = new Map<string, Column>();
    const extents = this.#built.map((built) => built.temporalExtent);
    this.#addObservationColumns(columns);
    this.#addLocationColumns(columns);
    const datasets = this.#datasets.map((d, i) => ({ id: d.id, doi: d.doi, folder: d.folder, metadata: { ...d.metadata, TemporalExtent: extents[i]! } }));
    this.#addDatasetColumns(columns, datasets);
    this.#addIdColumns(columns);
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

  /** The ids a new dataset starts from: as given, checked, or right after the last dataset's. */
  #checkIds(ids: DatasetIds | undefined): DatasetIds {
    if (ids === undefined) return { locationBase: this.#lastLocationId, rowBase: this.#lastRowId };
    const { locationBase, rowBase } = ids;
    if (!Number.isSafeInteger(locationBase) || !Number.isSafeInteger(rowBase) || locationBase < this.#lastLocationId || rowBase < this.#lastRowId) {
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

  /**
   * The `Id` columns: row numbers plus one while every dataset's ids follow
   * the previous one's, else row numbers plus an offset per dataset.
   */
  #addIdColumns(columns: Map<string, Column>): void {
    const starts = this.#datasetLocationStarts;
    const count = this.#datasets.length;
    const locationStarts = new Uint32Array(count);
    const rowStarts = new Uint32Array(count);
    const locationOffsets = new Float64Array(count);
    const rowOffsets = new Float64Array(count);
    let contiguous = true;
    for (let d = 0; d < count; d++) {
      const ids = this.#ids[d]!;
      locationStarts[d] = starts[d]!;
      rowStarts[d] = this.#locationRowStarts[starts[d]!]!;
      locationOffsets[d] = ids.locationBase - locationStarts[d]! + 1;
      rowOffsets[d] = ids.rowBase - rowStarts[d]! + 1;
      if (locationOffsets[d] !== 1 || rowOffsets[d] !== 1) contiguous = false;
    }
    columns.set("location.Id", contiguous ? { kind: "rownumber", offset: 1 } : { kind: "rownumber", offset: 1, segments: { starts: locationStarts, offsets: locationOffsets } });
    columns.set("observation.Id", contiguous ? { kind: "rownumber", offset: 1 } : { kind: "rownumber", offset: 1, segments: { starts: rowStarts, offsets: rowOffsets } });
  }

  /** Rows added so far, the open dataset's included: what a load's progress counts. */
  get rowsSoFar(): number {
    return this.#rowCount + (this.#open?.rows ?? 0);
  }

  #requireOpen(): OpenDataset {
    if (this.#open === undefined) throw new TypeError("Cannot read data: no dataset is open");
    return this.#open;
  }

  /** Scans whole records in `buf[pos..limit)`; returns where the first incomplete one starts. */
  #consume(open: OpenDataset, buf: Uint8Array, start: number, limit: number, final: boolean): number {
    let pos = start;
    if (open.atStart) {
      if (limit - pos < 3 && !final) return pos;
      if (buf[pos] === 0xef && buf[pos + 1] === 0xbb && buf[pos + 2] === 0xbf) pos += 3;
      open.atStart = false;
    }
    const scanner = this.#scanner;
    while (pos < limit) {
      scanner.line = open.line;
      let next: number;
      try {
        next = scanner.scan(buf, pos, limit, final);
      } catch (error) {
        if (!(error instanceof CsvSyntaxError) || open.header === undefined) throw error;
        next = this.#skipBadRecord(open, buf, pos, limit, final, error);
        if (next === -1) return pos;
        pos = next;
        continue;
      }
      if (next === -1) return pos;
      const breaks = scanner.lineBreaks;
      if (open.header === undefined) {
        this.#readHeader(open, buf);
      } else if (!(scanner.count === 1 && scanner.starts[0] === scanner.ends[0])) {
        this.#readRow(open, buf);
      }
      open.line += breaks;
      pos = next;
    }
    return pos;
  }

  #skipBadRecord(
    open: OpenDataset,
    buf: Uint8Array,
    pos: number,
    limit: number,
    final: boolean,
    error: CsvSyntaxError,
  ): number {
    const lineEnd = buf.indexOf(0x0a, error.offset);
    if (lineEnd === -1 || lineEnd >= limit) {
      if (!final) return -1;
      this.#issue(open, error.line, error.column, error.message.replace(/^Cannot parse CSV at [^:]*: /, ""));
      open.line += countLineBreaks(buf, pos, limit);
      return limit;
    }
    this.#issue(open, error.line, error.column, error.message.replace(/^Cannot parse CSV at [^:]*: /, ""));
    open.line += countLineBreaks(buf, pos, lineEnd + 1);
    return lineEnd + 1;
  }

  #readHeader(open: OpenDataset, buf: Uint8Array): void {
    const scanner = this.#scanner;
    const names: string[] = [];
    for (let f = 0; f < scanner.count; f++) {
      names.push(new TextDecoder().decode(this.#fieldBytes(buf, f)).trim());
    }
    const seen = checkHeaderNames(names);
    open.header = names;
    open.observationTarget = new Int32Array(names.length).fill(-1);
    open.locationTarget = new Int32Array(names.length).fill(-1);
    const locationColumns: readonly string[] = LOCATION_COLUMNS;
    names.forEach((name, f) => {
      const slot = this.#slotIndex.get(name);
      if (slot !== undefined) open.observationTarget[f] = slot;
      const location = locationColumns.indexOf(name);
      if (location !== -1) open.locationTarget[f] = location;
      if (name === "MonitoringLocationID") open.locationIdColumn = f;
      if (slot === undefined && location === -1 && name !== "DatasetName") open.ignoredColumns.push(name);
    });
    open.requiredColumns = REQUIRED_CSV_COLUMNS.map((name) => names.indexOf(name));
    open.absentSlots = this.#slots.filter((slot) => !seen.has(slot.name));
  }

  // Where field `f` of the scanned record lies, unescaped: set by #locate.
  #fieldBuf: Uint8Array = new Uint8Array(0);
  #fieldStart = 0;
  #fieldEnd = 0;

  /** Points #fieldBuf/#fieldStart/#fieldEnd at field `f`, unescaping it into scratch if needed. */
  #locate(buf: Uint8Array, f: number): void {
    const scanner = this.#scanner;
    const start = scanner.starts[f]!;
    const end = scanner.ends[f]!;
    if (scanner.kinds[f] !== FIELD_ESCAPED) {
      this.#fieldBuf = buf;
      this.#fieldStart = start;
      this.#fieldEnd = end;
      return;
    }
    if (this.#scratch.length < end - start) this.#scratch = new Uint8Array(end - start);
    this.#fieldBuf = this.#scratch;
    this.#fieldStart = 0;
    this.#fieldEnd = unescapeField(buf, start, end, this.#scratch);
  }

  /** The bytes of field `f` of the scanned record, unescaped (a view; for rare paths). */
  #fieldBytes(buf: Uint8Array, f: number): Uint8Array {
    this.#locate(buf, f);
    return this.#fieldBuf.subarray(this.#fieldStart, this.#fieldEnd);
  }

  #readRow(open: OpenDataset, buf: Uint8Array): void {
    const scanner = this.#scanner;
    const header = open.header!;
    if (scanner.count !== header.length) {
      this.#issue(open, open.line, Math.min(scanner.count, header.length) + 1,
        `found ${scanner.count} fields but the header has ${header.length}`);
      return;
    }
    for (const f of open.requiredColumns) {
      if (scanner.starts[f] === scanner.ends[f]) {
        this.#issue(open, open.line, f + 1, `found "${header[f]}" empty; it is required`, header[f]);
        return;
      }
    }
    const local = this.#locationOf(open, buf);
    if (local < 0) return;
    const at = open.staged;
    const starts = scanner.starts;
    const ends = scanner.ends;
    const kinds = scanner.kinds;
    const targets = open.observationTarget;
    for (let f = 0; f < header.length; f++) {
      const target = targets[f]!;
      if (target === -1) continue;
      const slot = this.#slots[target]!;
      let fieldBuf = buf;
      let start = starts[f]!;
      let end = ends[f]!;
      if (start === end) {
        // An empty field is null: the commonest case, decided without a lookup.
        if (slot.numeric) slot.stagedNumbers[at] = Number.NaN;
        else slot.stagedCodes[at] = 0;
        continue;
      }
      if (kinds[f] === FIELD_ESCAPED) {
        this.#locate(buf, f);
        fieldBuf = this.#fieldBuf;
        start = this.#fieldStart;
        end = this.#fieldEnd;
      }
      if (slot.numeric) {
        const value = parseNumberBytes(fieldBuf, start, end);
        if (value === undefined) {
          this.#issue(open, open.line, f + 1, `found "${text(this.#fieldBytes(buf, f))}", which is not a number`, header[f]);
          return;
        }
        slot.stagedNumbers[at] = value;
      } else {
        const code = slot.dictionary!.codeOf(fieldBuf, start, end);
        if (code < 0) {
          this.#issue(open, open.line, f + 1, slot.dictionary!.error, header[f]);
          return;
        }
        slot.stagedCodes[at] = code;
      }
    }
    for (const slot of open.absentSlots) {
      if (slot.numeric) slot.stagedNumbers[at] = Number.NaN;
      else slot.stagedCodes[at] = 0;
    }
    if (open.rows >= open.rowLocal.length) {
      const bigger = new Uint32Array(open.rowLocal.length * 2);
      bigger.set(open.rowLocal);
      open.rowLocal = bigger;
    }
    open.rowLocal[open.rows++] = local;
    if (local < open.lastLocal) open.grouped = false;
    open.lastLocal = local;
    open.staged++;
    if (open.staged === STAGE_ROWS) this.#flush(open);
  }

  /** The local location code of the current row, creating the location on first sight; -1 when refused. */
  #locationOf(open: OpenDataset, buf: Uint8Array): number {
    this.#locate(buf, open.locationIdColumn);
    const local = open.locationDictionary.codeOf(this.#fieldBuf, this.#fieldStart, this.#fieldEnd);
    if (local < 0) {
      this.#issue(open, open.line, open.locationIdColumn + 1, open.locationDictionary.error, "MonitoringLocationID");
      return -1;
    }
    if (local >= open.localToGlobal.length) {
      const bigger = new Int32Array(open.localToGlobal.length * 2).fill(-1);
      bigger.set(open.localToGlobal);
      open.localToGlobal = bigger;
    }
    if (open.localToGlobal[local] !== -1) return local;
    const values: Scalar[] = LOCATION_COLUMNS.map(() => null);
    const header = open.header!;
    for (let f = 0; f < header.length; f++) {
      const target = open.locationTarget[f]!;
      if (target === -1) continue;
      const name = LOCATION_COLUMNS[target]!;
      const bytes = this.#fieldBytes(buf, f);
      if (NUMERIC_LOCATION_COLUMNS.has(name)) {
        const value = parseNumberBytes(bytes, 0, bytes.length);
        const limit = name === "MonitoringLocationLatitude" ? 90 : name === "MonitoringLocationLongitude" ? 180 : Infinity;
        if (value === undefined || Math.abs(value) > limit) {
          const what = limit === Infinity ? "a number" : `a number from -${limit} to ${limit}`;
          this.#issue(open, open.line, f + 1, `found "${text(bytes)}", which is not ${what}`, name);
          return -1;
        }
        values[target] = Number.isNaN(value) ? null : value;
      } else {
        const decoded = bytes.length === 0 ? null : new TextDecoder("utf-8", { fatal: false }).decode(bytes);
        values[target] = decoded;
      }
    }
    const id = String(values[0]);
    open.localToGlobal[local] = this.#locations.length;
    this.#locations.push({
      id,
      values,
      regionIds: open.input.locationRegionIds.get(id) ?? open.input.regionIds,
    });
    return local;
  }

  #flush(open: OpenDataset): void {
    const n = open.staged;
    if (n === 0) return;
    for (const slot of this.#slots) {
      if (slot.numeric) slot.numbers!.append(slot.stagedNumbers, n);
      else slot.codes!.append(slot.stagedCodes, n, slot.dictionary!.size);
    }
    open.staged = 0;
  }

  /** Reorders the open dataset's rows so that each location's rows are contiguous. */
  #regroup(open: OpenDataset): void {
    const n = open.rows;
    const localCount = open.locationDictionary.size;
    const starts = new Uint32Array(localCount + 1);
    for (let i = 0; i < n; i++) starts[open.rowLocal[i]! + 1]!++;
    for (let k = 0; k < localCount; k++) starts[k + 1]! += starts[k]!;
    const perm = new Uint32Array(n);
    const sorted = new Uint32Array(n);
    for (let i = 0; i < n; i++) {
      const local = open.rowLocal[i]!;
      const at = starts[local]!++;
      perm[at] = i;
      sorted[at] = local;
    }
    for (const slot of this.#slots) {
      slot.codes?.permute(0, perm);
      slot.numbers?.permute(0, perm);
    }
    open.rowLocal = sorted;
    open.grouped = true;
  }

  #reserveLocationStarts(size: number): void {
    if (size <= this.#locationRowStarts.length) return;
    const bigger = new Uint32Array(Math.max(size, this.#locationRowStarts.length * 2));
    bigger.set(this.#locationRowStarts);
    this.#locationRowStarts = bigger;
  }

  #issue(open: OpenDataset, line: number, column: number, message: string, field?: string): void {
    open.skipped++;
    if (open.issues.length >= this.#maxIssues) return;
    open.issues.push({ file: open.file, line, column, ...(field === undefined ? {} : { field }), message });
  }

  #fileIssue(open: OpenDataset, message: string): void {
    open.issues.push({ file: open.file, line: open.line, column: 0, message });
  }

  /**
   * The observation columns: each dataset's numbers, or codes of the store's
   * dictionary, one after another (widened where the dictionary outgrew a
   * dataset's code width), with the rows per code summed. Each dataset's
   * columns are let go of once copied.
   */
  #addObservationColumns(columns: Map<string, Column>): void {
    const rows = this.#rowCount;
    let activityType: { codes: CodeArray; values: readonly Scalar[]; counts: Uint32Array } | undefined;
    let startDate: { codes: CodeArray; values: readonly Scalar[]; counts: Uint32Array } | undefined;
    const parts: (BuiltColumn | undefined)[][] = this.#built.map((dataset) => [...dataset.columns]);
    this.#built = [];
    this.#slots.forEach((slot, s) => {
      const key = `observation.${slot.name}`;
      const dictionary = this.#dictionaries[s];
      const values = dictionary?.values ?? [];
      const counts = new Uint32Array(values.length);
      const numbers = dictionary === undefined ? new Float64Array(rows) : undefined;
      const codes = dictionary === undefined ? undefined : codeArray(values.length - 1, rows);
      let at = 0;
      for (const part of parts) {
        const column = part[s]!;
        part[s] = undefined;
        if (column.kind === "number") {
          numbers!.set(column.values, at);
          at += column.values.length;
          continue;
        }
        codes!.set(column.codes, at);
        at += column.codes.length;
        const codeOf = column.base!.codeOf;
        for (let l = 0; l < codeOf.length; l++) counts[codeOf[l]!]! += column.counts[l]!;
      }
      if (at !== rows) throw new TypeError(`Cannot finish the store: ${slot.name} has ${at} rows, not ${rows}`);
      if (numbers !== undefined) {
        columns.set(key, { kind: "number", values: numbers });
        return;
      }
      const indexed = slot.name === "CharacteristicName" || slot.name === "ActivityMediaName";
      columns.set(key, {
        kind: "dict",
        codes: codes!,
        values,
        counts,
        ...(indexed ? { index: buildPostings(codes!, counts, values.length, undefined) } : {}),
      });
      if (slot.name === "ActivityType") activityType = { codes: codes!, values, counts };
      if (slot.name === "ActivityStartDate") startDate = { codes: codes!, values, counts };
    });
    if (activityType !== undefined) {
      const groups = activityType.values.map((value) => (value === null ? null : activityGroupTypeOf(String(value))));
      columns.set("observation.ActivityGroupType", derivedColumn(activityType.codes, groups, activityType.counts));
    }
    if (startDate !== undefined) {
      const years = startDate.values.map((value) => (value === null ? null : Number(String(value).slice(0, 4))));
      columns.set("observation.ActivityStartYear", derivedColumn(startDate.codes, years, startDate.counts));
    }
  }

  #addLocationColumns(columns: Map<string, Column>): void {
    const locations = this.#locations;
    LOCATION_COLUMNS.forEach((name, i) => {
      const values = locations.map((location) => location.values[i] ?? null);
      columns.set(
        `location.${name}`,
        NUMERIC_LOCATION_COLUMNS.has(name) ? numberColumn(values) : dictColumn(values),
      );
    });
    const normalized = locations.map((location) =>
      normalizeCoordinates(
        (location.values[2] as number | null) ?? Number.NaN,
        (location.values[3] as number | null) ?? Number.NaN,
        location.values[4] as string | null,
      )
    );
    columns.set("location.LatitudeNormalized", numberColumn(normalized.map((c) => c.latitude)));
    columns.set("location.LongitudeNormalized", numberColumn(normalized.map((c) => c.longitude)));
    columns.set(
      "location.HorizontalCoordinateReferenceSystemNormalized",
      dictColumn(locations.map(() => "WGS84")),
    );
    columns.set("location.RegionId", { kind: "values", values: locations.map((location) => location.regionIds) });
  }

  #addDatasetColumns(columns: Map<string, Column>, datasets: readonly { readonly id: string; readonly metadata: Readonly<Record<string, string | readonly string[] | null>> }[]): void {
    columns.set("dataset.Id", { kind: "values", values: datasets.map((d) => d.id) });
    for (const name of METADATA_COLUMNS) {
      const values = datasets.map((d) => {
        const value = d.metadata[name] ?? null;
        if (name.endsWith("Timestamp")) return typeof value === "string" ? Date.parse(value) : null;
        if (LIST_METADATA_COLUMNS.has(name)) return Array.isArray(value) ? value : [];
        return value;
      });
      columns.set(`dataset.${name}`, { kind: "values", values: values as (Scalar | readonly Scalar[])[] });
    }
  }
}

/**
 * Checks a data file's header names as loading does: no name twice, every
 * required column there.
 * @returns the names, as a set
 * @throws {CsvSyntaxError} naming the column at fault
 */
function checkHeaderNames(names: readonly string[]): Set<string> {
  const seen = new Set<string>();
  for (let f = 0; f < names.length; f++) {
    if (seen.has(names[f]!)) {
      throw new CsvSyntaxError(`found column "${names[f]}" twice in the header`, 1, f + 1, 0);
    }
    seen.add(names[f]!);
  }
  for (const required of REQUIRED_CSV_COLUMNS) {
    if (!seen.has(required)) {
      throw new CsvSyntaxError(`found no "${required}" column in the header; it is required`, 1, names.length + 1, 0);
    }
  }
  return seen;
}

/**
 * Checks the header of a DataStream data file from its first bytes, as
 * {@linkcode StoreBuilder} would when loading it, without loading anything.
 * @param bytes the file's first bytes
 * @param final whether they are the whole file
 * @returns true when the header is there and usable; false when it goes on past `bytes`
 * @throws {CsvSyntaxError} for a header that cannot be used, or none
 */
export function checkDataHeader(bytes: Uint8Array, final: boolean): boolean {
  if (bytes.length < 3 && !final) return false;
  const start = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
  if (bytes.length - start === 0) {
    if (final) throw new CsvSyntaxError("found no header row", 1, 1, 0);
    return false;
  }
  const scanner = new CsvScanner();
  if (scanner.scan(bytes, start, bytes.length, final) === -1) return false;
  const names: string[] = [];
  const scratch = new Uint8Array(bytes.length);
  for (let f = 0; f < scanner.count; f++) {
    const from = scanner.starts[f]!;
    const to = scanner.ends[f]!;
    const field = scanner.kinds[f] === FIELD_ESCAPED ? scratch.subarray(0, unescapeField(bytes, from, to, scratch)) : bytes.subarray(from, to);
    names.push(new TextDecoder().decode(field).trim());
  }
  checkHeaderNames(names);
  return true;
}

/** A location column's value as the loader first read it: a number, text, or null. */
function scalarAt(column: Column, row: number): Scalar {
  switch (column.kind) {
    case "dict":
      return column.values[column.codes[row]!] ?? null;
    case "number": {
      const value = column.values[row]!;
      return Number.isNaN(value) ? null : value;
    }
    default:
      throw new TypeError(`Cannot copy a ${column.kind} location column`);
  }
}

function text(bytes: Uint8Array): string {
  return new TextDecoder().decode(bytes.subarray(0, 80));
}

function countLineBreaks(buf: Uint8Array, from: number, to: number): number {
  let n = 0;
  for (let i = from; i < to; i++) if (buf[i] === 0x0a) n++;
  return n;
}

/**
 * The first and last day of a dataset's `ActivityStartDate` column, from its
 * dictionary: the values some row has (dates compare as text).
 */
function temporalExtentOf(column: BuiltColumn | undefined): readonly string[] {
  if (column?.kind !== "dict") return [];
  let first: string | undefined;
  let last: string | undefined;
  for (let code = 1; code < column.values.length; code++) {
    const value = column.values[code];
    if (column.counts[code] === 0 || typeof value !== "string" || value === "") continue;
    const day = value.slice(0, 10);
    if (first === undefined || day < first) first = day;
    if (last === undefined || day > last) last = day;
  }
  return first === undefined ? [] : [first, last!];
}


/**
 * A column's dictionary in a store being built: its values, a running hash
 * of them, and their codes by value, made only once a dataset needs its
 * codes mapped (datasets whose codes are the dictionary's never do).
 */
interface StoreDictionary {
  readonly values: Scalar[];
  codeOf: Map<Scalar, number> | undefined;
  readonly hash: Hash;
}

function newStoreDictionary(): StoreDictionary {
  const dictionary: StoreDictionary = { values: [], codeOf: undefined, hash: createHash("sha256") };
  appendValue(dictionary, null);
  return dictionary;
}

function codesByValue(dictionary: StoreDictionary): Map<Scalar, number> {
  if (dictionary.codeOf === undefined) dictionary.codeOf = new Map(dictionary.values.map((value, code) => [value, code]));
  return dictionary.codeOf;
}

function appendValue(dictionary: StoreDictionary, value: Scalar): number {
  const code = dictionary.values.length;
  appendValues(dictionary, [value]);
  return code;
}

function appendValues(dictionary: StoreDictionary, values: readonly Scalar[]): void {
  if (values.length === 0) return;
  const codeOf = dictionary.codeOf;
  for (const value of values) {
    const code = dictionary.values.push(value) - 1;
    codeOf?.set(value, code);
  }
  // One JSON text a value, each on its own line: the hash tells one sequence of values from any other.
  dictionary.hash.update(`${values.map((value) => JSON.stringify(value)).join("\n")}\n`);
}

/**
 * A built dataset's text column joined to the store's dictionary of that
 * column: the dictionary gets the dataset's new values (in the dataset's
 * order), and the result's codes are codes of the dictionary. Codes whose
 * base is the dictionary as it is are kept as they are; others are mapped.
 */
function joinDictionary(dictionary: StoreDictionary, column: Extract<BuiltColumn, { kind: "dict" }>): BuiltColumn {
  const length = dictionary.values.length;
  const hash = dictionary.hash.copy().digest("hex");
  const { values, base } = column;
  if (base !== undefined && base.length === length && base.hash === hash && appendNew(dictionary, values, base.codeOf)) {
    return { ...column, base: { length, hash, codeOf: base.codeOf } };
  }
  const codeOf = new Uint32Array(values.length);
  const known = codesByValue(dictionary);
  for (let l = 1; l < values.length; l++) {
    const value = values[l] ?? null;
    codeOf[l] = known.get(value) ?? appendValue(dictionary, value);
  }
  // Codes of the base to codes of the store: through the value each has in `values`.
  let map = codeOf;
  if (base !== undefined) {
    let max = 0;
    for (let l = 0; l < base.codeOf.length; l++) max = Math.max(max, base.codeOf[l]!);
    map = new Uint32Array(max + 1);
    for (let l = 0; l < values.length; l++) map[base.codeOf[l]!] = codeOf[l]!;
  }
  const codes = codeArray(dictionary.values.length - 1, column.codes.length);
  let same = true;
  for (let code = 0; code < map.length && same; code++) same = map[code] === code;
  // The same codes (e.g. the first dataset's): copied, widened if need be.
  if (same) codes.set(column.codes);
  else remapCodes(codes, 0, column.codes, map);
  return { kind: "dict", values, codes, counts: column.counts, base: { length, hash, codeOf } };
}

/**
 * Appends a dataset's values new to the dictionary, when its base is the
 * dictionary (same length, same hash, so the same values): those whose code
 * is at least the dictionary's length, which must be the codes that follow
 * it, in order.
 * @returns false, changing nothing, when they are not
 */
function appendNew(dictionary: StoreDictionary, values: readonly Scalar[], codeOf: Uint32Array): boolean {
  const length = dictionary.values.length;
  if (codeOf.length !== values.length || codeOf[0] !== 0) return false;
  const added: Scalar[] = [];
  for (let l = 1; l < values.length; l++) {
    const code = codeOf[l]!;
    if (code < length) continue;
    if (code !== length + added.length) return false;
    added.push(values[l] ?? null);
  }
  appendValues(dictionary, added);
  return true;
}

/**
 * A store's column over rows `from .. to - 1`, as a built dataset's column:
 * numbers as they are (a view), text with a dictionary of the values these
 * rows have, in the order they first have them.
 */
function copyColumn(numeric: boolean, column: Column | undefined, from: number, to: number): BuiltColumn {
  if (numeric) {
    return { kind: "number", values: column?.kind === "number" ? column.values.subarray(from, to) : new Float64Array(to - from).fill(Number.NaN) };
  }
  const n = to - from;
  if (column?.kind !== "dict") return { kind: "dict", values: [null], codes: new Uint8Array(n), counts: Uint32Array.of(n) };
  const source = column.codes;
  // Old code to new code, made on first sight of each.
  const mapped = new Int32Array(column.values.length).fill(-1);
  mapped[0] = 0;
  const values: Scalar[] = [null];
  const wide = new Uint32Array(n);
  for (let i = 0; i < n; i++) {
    const old = source[from + i]!;
    let code = mapped[old]!;
    if (code === -1) {
      code = mapped[old] = values.length;
      values.push(column.values[old] ?? null);
    }
    wide[i] = code;
  }
  const codes = codeArray(values.length - 1, n);
  codes.set(wide);
  return { kind: "dict", values, codes, counts: countCodes(codes, values.length) };
}

/**
 * Checks that a built dataset holds together: columns of the right kinds and
 * lengths, rows per location and per code summing to its rows (without a
 * pass over the rows: a snapshot's checksum vouches for its codes).
 */
function checkBuilt(built: BuiltDataset): void {
  const fail = (what: string): never => {
    throw new TypeError(`Cannot add a built dataset: ${what}`);
  };
  if (built.locations.length !== built.locationRows.length) fail("its locations and their row counts disagree");
  let total = 0;
  for (const count of built.locationRows) total += count;
  if (total !== built.rows) fail(`its locations hold ${total} rows, not ${built.rows}`);
  if (built.columns.length !== OBSERVATION_COLUMNS.length) fail(`it has ${built.columns.length} columns, not ${OBSERVATION_COLUMNS.length}`);
  built.columns.forEach((column, s) => {
    const name = OBSERVATION_COLUMNS[s]!;
    if ((column.kind === "number") !== NUMERIC_OBSERVATION_COLUMNS.has(name)) fail(`its ${name} column is of the wrong kind`);
    const length = column.kind === "number" ? column.values.length : column.codes.length;
    if (length !== built.rows) fail(`its ${name} column has ${length} rows, not ${built.rows}`);
    if (column.kind === "dict") {
      let counted = 0;
      for (const count of column.counts) counted += count;
      const { values, counts, base } = column;
      if (values[0] !== null || counts.length !== values.length || counted !== built.rows || (base !== undefined && base.codeOf.length !== values.length)) {
        fail(`its ${name} dictionary is malformed`);
      }
    }
  });
}

/** Rows per code. */
function countCodes(codes: CodeArray, size: number): Uint32Array {
  const counts = new Uint32Array(size);
  for (let r = 0; r < codes.length; r++) counts[codes[r]!]!++;
  return counts;
}

/** A dictionary column sharing another's codes, with values mapped, and postings by distinct value. */
function derivedColumn(codes: CodeArray, values: readonly Scalar[], counts: Uint32Array): Column {
  const keys = new Map<Scalar, number>();
  const keyOf = new Uint32Array(values.length);
  values.forEach((value, code) => {
    let key = keys.get(value);
    if (key === undefined) {
      key = keys.size;
      keys.set(value, key);
    }
    keyOf[code] = key;
  });
  return { kind: "dict", codes, values, counts, index: buildPostings(codes, counts, keys.size, keyOf) };
}

/**
 * Builds a posting index by counting sort, O(rows): the rows per code are
 * known, so one pass over the codes places every row.
 */
function buildPostings(codes: CodeArray, counts: Uint32Array, keys: number, keyOf: Uint32Array | undefined): PostingIndex {
  const starts = new Uint32Array(keys + 1);
  for (let code = 0; code < counts.length; code++) starts[(keyOf === undefined ? code : keyOf[code]!) + 1]! += counts[code]!;
  for (let k = 0; k < keys; k++) starts[k + 1]! += starts[k]!;
  const fill = starts.slice(0, keys);
  const rows = new Uint32Array(codes.length);
  const keyOfCode = keyOf ?? Uint32Array.from(counts, (_, code) => code);
  placeRows(codes, keyOfCode, fill, rows);
  return { ...(keyOf === undefined ? {} : { keyOf }), starts, rows };
}

/** A dictionary column from plain values (location-level columns). */
function dictColumn(values: readonly Scalar[]): Column {
  const dictionary: Scalar[] = [null];
  const codesOf = new Map<Scalar, number>([[null, 0]]);
  const size = new Set(values).size + 1;
  const codes: CodeArray = size <= 0x100
    ? new Uint8Array(values.length)
    : size <= 0x10000
    ? new Uint16Array(values.length)
    : new Uint32Array(values.length);
  values.forEach((value, i) => {
    let code = codesOf.get(value);
    if (code === undefined) {
      code = dictionary.length;
      dictionary.push(value);
      codesOf.set(value, code);
    }
    codes[i] = code;
  });
  return { kind: "dict", codes, values: dictionary, counts: countCodes(codes, dictionary.length) };
}

function numberColumn(values: readonly (Scalar | undefined)[]): Column {
  return { kind: "number", values: Float64Array.from(values, (v) => (typeof v === "number" ? v : Number.NaN)) };
}
