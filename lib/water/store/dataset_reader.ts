// One cohesive structure, over 600 lines on purpose: DatasetReader is one
// streaming CSV reader whose stages share its state (the scanner, the
// observation slots, the dataset open, the scratch buffer), fed chunk by
// chunk. What stands alone lives beside it: the CSV scanner, the value
// checks, the store's columns and dictionaries.
import type { Scalar } from "../../odata/mod.ts";
import { CsvSyntaxError } from "../errors.ts";
import {
  LOCATION_COLUMNS,
  NUMERIC_LOCATION_COLUMNS,
  NUMERIC_OBSERVATION_COLUMNS,
  OBSERVATION_COLUMNS,
  REQUIRED_CSV_COLUMNS,
} from "../fields.ts";
import { CsvScanner, FIELD_ESCAPED, unescapeField } from "../load/csv_scanner.ts";
import { ByteDictionary, type ValueCheck } from "./_byte_dictionary.ts";
import { CodeColumn, countCodes, NumberColumnBuilder } from "./_code_column.ts";
import { parseNumberBytes } from "./_parse_number.ts";
import { valueCheckFor } from "./_value_checks.ts";
import {
  type BuiltColumn,
  type BuiltDataset,
  type BuiltLocation,
  temporalExtentOf,
} from "./built_dataset.ts";
import { checkHeaderNames } from "./check_data_header.ts";
import type { DatasetRecord } from "./store.ts";

/** A dataset's metadata, read and checked, ready for `StoreBuilder.beginDataset`. */
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
  /** The first issues (up to the reader's limit); `skippedRows` counts them all. */
  readonly issues: readonly LoadIssue[];
  /** Header columns that are not DataStream columns, ignored. */
  readonly ignoredColumns: readonly string[];
}

const STAGE_ROWS = 16_384;

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

interface OpenDataset {
  readonly input: DatasetInput;
  readonly file: string;
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
  /** The dataset's locations, in the order the file first has them. */
  readonly locations: BuiltLocation[];
  /** Local location code (dictionary code) to the location's index in `locations`, -1 until created. */
  locationIndex: Int32Array;
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

/** What reading a dataset gave: the dataset, and its row and issue counts. */
export interface DatasetRead {
  readonly input: DatasetInput;
  readonly built: BuiltDataset;
  readonly result: DatasetLoadResult;
}

/**
 * Reads datasets, one at a time, from the raw bytes of their DataStream CSV
 * files into {@linkcode BuiltDataset}s: the validation and columnar staging
 * behind `StoreBuilder`'s `beginDataset`, `push` and `endDataset`. Rows are
 * checked as they are read (a wrong field count, an empty required field, a
 * bad number, date, time or time zone, a quoting error); a bad row is
 * skipped and reported with its file, line and column, and the rest of the
 * file still loads. Rows are staged in fixed buffers and appended to
 * typed-array columns in bulk; at the end of a dataset its rows are
 * regrouped by location if the file interleaved them. One reader serves
 * dataset after dataset, reusing its staging buffers.
 */
export class DatasetReader {
  readonly #maxIssues: number;
  readonly #maxRecord: number;
  readonly #scanner = new CsvScanner();
  readonly #slots: ObservationSlot[];
  readonly #slotIndex: ReadonlyMap<string, number>;
  #open: OpenDataset | undefined;
  #scratch = new Uint8Array(4096);

  /**
   * Creates a reader with no dataset open.
   * @param maxIssues issues kept per data file; the rest are only counted
   * @param maxRecord longest record, in bytes, before a file is given up on
   */
  constructor(maxIssues: number, maxRecord: number) {
    this.#maxIssues = maxIssues;
    this.#maxRecord = maxRecord;
    this.#slots = OBSERVATION_COLUMNS.map((name) => {
      const numeric = NUMERIC_OBSERVATION_COLUMNS.has(name);
      return {
        name,
        numeric,
        check: valueCheckFor(name),
        dictionary: undefined,
        codes: undefined,
        numbers: undefined,
        stagedCodes: new Uint32Array(numeric ? 0 : STAGE_ROWS),
        stagedNumbers: new Float64Array(numeric ? STAGE_ROWS : 0),
      };
    });
    this.#slotIndex = new Map(this.#slots.map((slot, i) => [slot.name, i]));
  }

  /** Whether a dataset is open. */
  get isOpen(): boolean {
    return this.#open !== undefined;
  }

  /** Rows read so far of the open dataset; 0 when none is open. */
  get rows(): number {
    return this.#open?.rows ?? 0;
  }

  /**
   * Starts a dataset; its data file's bytes follow through {@linkcode push}.
   * The caller sees that no dataset is open.
   * @param input the dataset's checked metadata
   * @param file the data file's path, for issues
   */
  begin(input: DatasetInput, file: string): void {
    // Each dataset gets dictionaries of its own: what it adds to the store does not depend on the datasets before it.
    for (const slot of this.#slots) {
      slot.dictionary = slot.numeric ? undefined : new ByteDictionary(slot.check);
      slot.codes = slot.numeric ? undefined : new CodeColumn();
      slot.numbers = slot.numeric ? new NumberColumnBuilder() : undefined;
    }
    this.#open = {
      input,
      file,
      header: undefined,
      observationTarget: new Int32Array(0),
      locationTarget: new Int32Array(0),
      locationIdColumn: -1,
      requiredColumns: [],
      absentSlots: [],
      ignoredColumns: [],
      locationDictionary: new ByteDictionary(),
      locations: [],
      locationIndex: new Int32Array(64).fill(-1),
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
   * @param bytes the next bytes, in file order
   * @throws {CsvSyntaxError} for a header that cannot be used (the dataset must then be aborted)
   */
  push(bytes: Uint8Array): void {
    const open = this.#requireOpen();
    if (open.stopped || bytes.length === 0) return;
    // A plain Uint8Array view keeps byte access monomorphic (a Node Buffer is a subclass).
    const chunk = bytes.constructor === Uint8Array
      ? bytes
      : new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length);
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
      this.#fileIssue(
        open,
        `found a record longer than ${this.#maxRecord} bytes (is a quote never closed?); ` +
          "the rest of the file is skipped",
      );
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
   * Ends the open dataset: reads what is left and regroups rows by location if needed.
   * @returns the dataset as built (its text columns coded by its own dictionaries), and its row and issue counts
   * @throws {CsvSyntaxError} for a missing or unusable header (the dataset must then be aborted)
   * @throws {TypeError} when no dataset is open
   */
  end(): DatasetRead {
    const open = this.#requireOpen();
    if (!open.stopped && open.carryLength > 0) {
      this.#consume(open, open.carry, 0, open.carryLength, true);
    }
    if (open.header === undefined) {
      throw new CsvSyntaxError("found no header row", 1, 1, 0);
    }
    this.#flush(open);
    if (!open.grouped) this.#regroup(open);
    const locationCount = open.locations.length;
    const counts = new Uint32Array(locationCount);
    for (let i = 0; i < open.rows; i++) counts[open.locationIndex[open.rowLocal[i]!]!]!++;
    const columns = this.#slots.map((slot): BuiltColumn => {
      if (slot.numeric) return { kind: "number", values: slot.numbers!.finish() };
      const dictionary = slot.dictionary!;
      dictionary.seal();
      const codes = slot.codes!.finish();
      return {
        kind: "dict",
        values: dictionary.values,
        codes,
        counts: countCodes(codes, dictionary.size),
      };
    });
    for (const slot of this.#slots) {
      slot.dictionary = undefined;
      slot.codes = undefined;
      slot.numbers = undefined;
    }
    this.#open = undefined;
    const built: BuiltDataset = {
      rows: open.rows,
      locations: open.locations,
      locationRows: counts,
      columns,
      temporalExtent: temporalExtentOf(columns[this.#slotIndex.get("ActivityStartDate")!]),
    };
    const result: DatasetLoadResult = {
      rows: open.rows,
      locations: locationCount,
      skippedRows: open.skipped,
      issues: open.issues,
      ignoredColumns: open.ignoredColumns,
    };
    return { input: open.input, built, result };
  }

  /** Drops the open dataset and everything read from it, e.g. after a read error. */
  abort(): void {
    const open = this.#open;
    if (open === undefined) return;
    open.staged = 0;
    for (const slot of this.#slots) {
      slot.dictionary = undefined;
      slot.codes = undefined;
      slot.numbers = undefined;
    }
    this.#open = undefined;
  }

  #requireOpen(): OpenDataset {
    if (this.#open === undefined) throw new TypeError("Cannot read data: no dataset is open");
    return this.#open;
  }

  /** Scans whole records in `buf[pos..limit)`; returns where the first incomplete one starts. */
  #consume(
    open: OpenDataset,
    buf: Uint8Array,
    start: number,
    limit: number,
    final: boolean,
  ): number {
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
      this.#issue(
        open,
        error.line,
        error.column,
        error.message.replace(/^Cannot parse CSV at [^:]*: /, ""),
      );
      open.line += countLineBreaks(buf, pos, limit);
      return limit;
    }
    this.#issue(
      open,
      error.line,
      error.column,
      error.message.replace(/^Cannot parse CSV at [^:]*: /, ""),
    );
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
      if (slot === undefined && location === -1 && name !== "DatasetName") {
        open.ignoredColumns.push(name);
      }
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
      this.#issue(
        open,
        open.line,
        Math.min(scanner.count, header.length) + 1,
        `found ${scanner.count} fields but the header has ${header.length}`,
      );
      return;
    }
    for (const f of open.requiredColumns) {
      if (scanner.starts[f] === scanner.ends[f]) {
        this.#issue(
          open,
          open.line,
          f + 1,
          `found "${header[f]}" empty; it is required`,
          header[f],
        );
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
          this.#issue(
            open,
            open.line,
            f + 1,
            `found "${text(this.#fieldBytes(buf, f))}", which is not a number`,
            header[f],
          );
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
      this.#issue(
        open,
        open.line,
        open.locationIdColumn + 1,
        open.locationDictionary.error,
        "MonitoringLocationID",
      );
      return -1;
    }
    if (local >= open.locationIndex.length) {
      const bigger = new Int32Array(open.locationIndex.length * 2).fill(-1);
      bigger.set(open.locationIndex);
      open.locationIndex = bigger;
    }
    if (open.locationIndex[local] !== -1) return local;
    const values: Scalar[] = LOCATION_COLUMNS.map(() => null);
    const header = open.header!;
    for (let f = 0; f < header.length; f++) {
      const target = open.locationTarget[f]!;
      if (target === -1) continue;
      const name = LOCATION_COLUMNS[target]!;
      const bytes = this.#fieldBytes(buf, f);
      if (NUMERIC_LOCATION_COLUMNS.has(name)) {
        const value = parseNumberBytes(bytes, 0, bytes.length);
        const limit = name === "MonitoringLocationLatitude"
          ? 90
          : name === "MonitoringLocationLongitude"
          ? 180
          : Infinity;
        if (value === undefined || Math.abs(value) > limit) {
          const what = limit === Infinity ? "a number" : `a number from -${limit} to ${limit}`;
          this.#issue(open, open.line, f + 1, `found "${text(bytes)}", which is not ${what}`, name);
          return -1;
        }
        values[target] = Number.isNaN(value) ? null : value;
      } else {
        const decoded = bytes.length === 0
          ? null
          : new TextDecoder("utf-8", { fatal: false }).decode(bytes);
        values[target] = decoded;
      }
    }
    const id = String(values[0]);
    open.locationIndex[local] = open.locations.length;
    open.locations.push({
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

  #issue(open: OpenDataset, line: number, column: number, message: string, field?: string): void {
    open.skipped++;
    if (open.issues.length >= this.#maxIssues) return;
    open.issues.push({
      file: open.file,
      line,
      column,
      ...(field === undefined ? {} : { field }),
      message,
    });
  }

  #fileIssue(open: OpenDataset, message: string): void {
    open.issues.push({ file: open.file, line: open.line, column: 0, message });
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
