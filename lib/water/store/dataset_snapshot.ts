import { createHash } from "node:crypto";
import type { CodeArray } from "../../columnar/mod.ts";
import type { Scalar } from "../../odata/mod.ts";
import { WaterError } from "../errors.ts";
import {
  LOCATION_COLUMNS,
  NUMERIC_LOCATION_COLUMNS,
  NUMERIC_OBSERVATION_COLUMNS,
  OBSERVATION_COLUMNS,
} from "../fields.ts";
import type { BuiltColumn, BuiltDataset, BuiltLocation } from "./built_dataset.ts";
import type { DatasetInput, DatasetLoadResult, LoadIssue } from "./dataset_reader.ts";

/**
 * The snapshot format. A snapshot of another format is not read (its data
 * file is read instead): raise it whenever what a snapshot holds, or what
 * reading a data file makes of it, changes.
 */
export const SNAPSHOT_FORMAT = 1;

/** A dataset as built from its data file, and what the file it was built from was. */
export interface DatasetSnapshot {
  /**
   * What the snapshot was made from: the data file's identity and the
   * options it was read with. A snapshot is read back only under the same key.
   */
  readonly key: string;
  /** What reading the data file reported: rows, locations, skipped rows and their issues. */
  readonly result: DatasetLoadResult;
  readonly built: BuiltDataset;
}

/** Options of {@linkcode decodeDatasetSnapshot}. */
export interface DecodeDatasetSnapshotOptions {
  /** The key the snapshot must have been made under (see {@linkcode DatasetSnapshot.key}). */
  readonly key: string;
  /** The dataset's metadata as read now: its locations' region ids come from it. */
  readonly input: DatasetInput;
  /** The data file's path now, for the issues reported. */
  readonly file: string;
}

const MAGIC = new TextEncoder().encode("TRIBSNAP");
/** The byte order of the typed arrays, as this machine writes 0x01020304. */
const BYTE_ORDER = new Uint8Array(Uint32Array.of(0x01020304).buffer);
/**
 * The fixed part: magic (8 bytes), format (u32 LE), byte order (4), header
 * length (u32 LE), reserved (4), SHA-256 of the key (32), SHA-256 of
 * everything after the fixed part (32). The header (JSON) follows, then the
 * sections, each at a multiple of 8 bytes from the start of the file.
 */
const FIXED = 88;
const utf8 = new TextEncoder();

/** Where a section lies: its offset from the first section, in bytes. */
type Offset = number;

interface DictHeader {
  readonly values: readonly Scalar[];
  readonly width: 1 | 2 | 4;
  readonly codes: Offset;
  readonly counts: Offset;
  readonly base?: { readonly length: number; readonly hash: string; readonly codeOf: Offset };
}

interface SnapshotHeader {
  readonly rows: number;
  readonly result: DatasetLoadResult;
  readonly temporalExtent: readonly string[];
  readonly locations: {
    readonly count: number;
    /** Rows of each location: u32 per location. */
    readonly rows: Offset;
    /** Per location column: its values (text or null), or its numbers (f64 per location, NaN for null). */
    readonly columns:
      readonly ({ readonly values: readonly (string | null)[] } | { readonly numbers: Offset })[];
  };
  /**
   * Per observation column: its dictionary, code width, codes and rows per
   * code (u32), and the store dictionary its codes are of (its code of each
   * value, u32); or its numbers (f64).
   */
  readonly columns: readonly (DictHeader | { readonly numbers: Offset })[];
}

/**
 * Writes a built dataset as snapshot bytes: a fixed part with checksums, a
 * JSON header (the report, dictionaries, location text) and the typed arrays
 * as they are in memory, each 8-byte aligned, so that reading one back is
 * making views over the file's bytes. The arrays are not copied: the chunks
 * returned are views of them, to write one after another (e.g. `writev`).
 * @param snapshot the dataset, its report and its key
 * @returns the snapshot's bytes, in chunks
 * @example
 * ```ts
 * const chunks = encodeDatasetSnapshot({ key, result, built: builder.builtDataset(0) });
 * await handle.writev(chunks);
 * ```
 */
export function encodeDatasetSnapshot(snapshot: DatasetSnapshot): Uint8Array[] {
  const { built } = snapshot;
  const sections: Uint8Array[] = [];
  let end = 0;
  const place = (array: Uint8Array | Uint16Array | Uint32Array | Float64Array): Offset => {
    const at = align(end);
    if (at > end) sections.push(new Uint8Array(at - end));
    sections.push(new Uint8Array(array.buffer, array.byteOffset, array.byteLength));
    end = at + array.byteLength;
    return at;
  };
  const locationRows = place(built.locationRows);
  const locationColumns = LOCATION_COLUMNS.map((name, i) => {
    if (NUMERIC_LOCATION_COLUMNS.has(name)) {
      return {
        numbers: place(
          Float64Array.from(built.locations, (location) => numberOrNaN(location.values[i])),
        ),
      };
    }
    return { values: built.locations.map((location) => textOrNull(location.values[i])) };
  });
  const columns = built.columns.map((column): DictHeader | { numbers: Offset } => {
    if (column.kind === "number") return { numbers: place(column.values) };
    const { values, codes, counts, base } = column;
    const dict = {
      values,
      width: codes.BYTES_PER_ELEMENT as 1 | 2 | 4,
      codes: place(codes),
      counts: place(counts),
    };
    return base === undefined
      ? dict
      : { ...dict, base: { length: base.length, hash: base.hash, codeOf: place(base.codeOf) } };
  });
  const header: SnapshotHeader = {
    rows: built.rows,
    result: snapshot.result,
    temporalExtent: built.temporalExtent,
    locations: { count: built.locations.length, rows: locationRows, columns: locationColumns },
    columns,
  };
  const headerBytes = utf8.encode(JSON.stringify(header));
  const dataStart = align(FIXED + headerBytes.length);
  const body = [headerBytes, new Uint8Array(dataStart - FIXED - headerBytes.length), ...sections];
  const digest = createHash("sha256");
  for (const chunk of body) digest.update(chunk);
  const fixed = new Uint8Array(FIXED);
  const view = new DataView(fixed.buffer);
  fixed.set(MAGIC, 0);
  view.setUint32(8, SNAPSHOT_FORMAT, true);
  fixed.set(BYTE_ORDER, 12);
  view.setUint32(16, headerBytes.length, true);
  fixed.set(createHash("sha256").update(snapshot.key).digest(), 24);
  fixed.set(digest.digest(), 56);
  return [fixed, ...body];
}

/**
 * Whether the first bytes of a snapshot say it is of this format and was
 * made under `key`, without reading or checking the rest.
 * @param head at least the snapshot's first {@linkcode SNAPSHOT_HEAD_BYTES} bytes
 * @param key the key it must have
 * @returns true when it may be read back under `key`
 */
export function snapshotMatches(head: Uint8Array, key: string): boolean {
  return fixedProblem(head, key) === undefined;
}

/** Bytes {@linkcode snapshotMatches} needs. */
export const SNAPSHOT_HEAD_BYTES = FIXED;

/**
 * Reads snapshot bytes back into a built dataset, with typed arrays that are
 * views over `bytes` (copied once first only if `bytes` is not 8-byte
 * aligned). Everything is checked before use: the format, the byte order,
 * the key, the SHA-256 of the whole, and the header's shape and offsets.
 * @param bytes the whole snapshot
 * @param options the key it must have, the dataset's metadata now, the data file's path now
 * @returns the dataset, its report and its key
 * @throws {WaterError} `ERR_WATER_SNAPSHOT` for a snapshot of another format,
 * byte order or key, or one that is damaged or cut short
 */
export function decodeDatasetSnapshot(
  bytes: Uint8Array,
  options: DecodeDatasetSnapshotOptions,
): DatasetSnapshot {
  const problem = fixedProblem(bytes, options.key);
  if (problem !== undefined) throw damaged(problem);
  const headerLength = new DataView(bytes.buffer, bytes.byteOffset, FIXED).getUint32(16, true);
  if (FIXED + headerLength > bytes.length) throw damaged("it is shorter than its header says");
  const digest = createHash("sha256").update(bytes.subarray(FIXED)).digest();
  if (!equalBytes(digest, bytes.subarray(56, 88))) {
    throw damaged("its checksum does not match its bytes");
  }
  let header: SnapshotHeader;
  try {
    header = JSON.parse(
      new TextDecoder().decode(bytes.subarray(FIXED, FIXED + headerLength)),
    ) as SnapshotHeader;
  } catch (cause) {
    throw damaged(`its header is not JSON: ${String(cause)}`);
  }
  // Views need their element size's alignment: one copy if the bytes came unaligned.
  const aligned = bytes.byteOffset % 8 === 0 ? bytes : bytes.slice();
  const dataStart = align(FIXED + headerLength);
  try {
    return readHeader(header, aligned, dataStart, options);
  } catch (cause) {
    if (cause instanceof WaterError) throw cause;
    throw damaged(`its header does not hold together: ${String(cause)}`);
  }
}

function readHeader(
  header: SnapshotHeader,
  bytes: Uint8Array,
  dataStart: number,
  options: DecodeDatasetSnapshotOptions,
): DatasetSnapshot {
  const rows = header.rows;
  const count = header.locations.count;
  if (!isCount(rows) || !isCount(count)) throw damaged("its row or location count is not a count");
  const view = <T>(
    make: (buffer: ArrayBufferLike, offset: number, length: number) => T,
    size: number,
    offset: unknown,
    length: number,
  ): T => {
    if (!isCount(offset) || offset % 8 !== 0 || dataStart + offset + length * size > bytes.length) {
      throw damaged("a section lies outside it");
    }
    return make(bytes.buffer, bytes.byteOffset + dataStart + offset, length);
  };
  const u32 = (offset: unknown, length: number): Uint32Array =>
    view((b, o, n) => new Uint32Array(b, o, n), 4, offset, length);
  const f64 = (offset: unknown, length: number): Float64Array =>
    view((b, o, n) => new Float64Array(b, o, n), 8, offset, length);
  const locationRows = u32(header.locations.rows, count);
  if (header.locations.columns.length !== LOCATION_COLUMNS.length) {
    throw damaged("it has another set of location columns");
  }
  const locationColumns = header.locations.columns.map((column, i): readonly Scalar[] => {
    if (NUMERIC_LOCATION_COLUMNS.has(LOCATION_COLUMNS[i]!)) {
      if (!("numbers" in column)) throw damaged(`its ${LOCATION_COLUMNS[i]} column is not numbers`);
      return Array.from(
        f64(column.numbers, count),
        (value) => (Number.isNaN(value) ? null : value),
      );
    }
    if (!("values" in column) || !Array.isArray(column.values) || column.values.length !== count) {
      throw damaged(`its ${LOCATION_COLUMNS[i]} column is not text`);
    }
    return column.values;
  });
  const { input } = options;
  const locations: BuiltLocation[] = [];
  for (let l = 0; l < count; l++) {
    const values = locationColumns.map((column) => column[l] ?? null);
    const id = String(values[0]);
    locations.push({ id, values, regionIds: input.locationRegionIds.get(id) ?? input.regionIds });
  }
  if (header.columns.length !== OBSERVATION_COLUMNS.length) {
    throw damaged("it has another set of observation columns");
  }
  const columns = header.columns.map((column, s): BuiltColumn => {
    const name = OBSERVATION_COLUMNS[s]!;
    if (NUMERIC_OBSERVATION_COLUMNS.has(name)) {
      if (!("numbers" in column)) throw damaged(`its ${name} column is not numbers`);
      return { kind: "number", values: f64(column.numbers, rows) };
    }
    if (!("values" in column) || !Array.isArray(column.values) || column.values[0] !== null) {
      throw damaged(`its ${name} column is not text`);
    }
    const width = column.width;
    let codes: CodeArray;
    if (width === 1) codes = view((b, o, n) => new Uint8Array(b, o, n), 1, column.codes, rows);
    else if (width === 2) {
      codes = view((b, o, n) => new Uint16Array(b, o, n), 2, column.codes, rows);
    } else if (width === 4) {
      codes = view((b, o, n) => new Uint32Array(b, o, n), 4, column.codes, rows);
    } else throw damaged(`its ${name} codes have no width`);
    const counts = u32(column.counts, column.values.length);
    const base = column.base;
    if (base === undefined) return { kind: "dict", values: column.values, codes, counts };
    if (!isCount(base.length) || typeof base.hash !== "string") {
      throw damaged(`its ${name} dictionary base is malformed`);
    }
    return {
      kind: "dict",
      values: column.values,
      codes,
      counts,
      base: {
        length: base.length,
        hash: base.hash,
        codeOf: u32(base.codeOf, column.values.length),
      },
    };
  });
  const result = header.result;
  if (
    typeof result !== "object" || result === null || !Array.isArray(result.issues) ||
    result.rows !== rows || result.locations !== count
  ) {
    throw damaged("its report does not match its rows");
  }
  const issues: LoadIssue[] = result.issues.map((issue) => ({ ...issue, file: options.file }));
  return {
    key: options.key,
    result: { ...result, issues },
    built: { rows, locations, locationRows, columns, temporalExtent: header.temporalExtent },
  };
}

/** What is wrong with a snapshot's fixed part for `key`, if anything. */
function fixedProblem(bytes: Uint8Array, key: string): string | undefined {
  if (bytes.length < FIXED) return "it is cut short";
  if (!equalBytes(bytes.subarray(0, 8), MAGIC)) return "it is not a snapshot";
  const format = new DataView(bytes.buffer, bytes.byteOffset, FIXED).getUint32(8, true);
  if (format !== SNAPSHOT_FORMAT) return `it is of format ${format}, not ${SNAPSHOT_FORMAT}`;
  if (!equalBytes(bytes.subarray(12, 16), BYTE_ORDER)) {
    return "it was written on a machine of the other byte order";
  }
  if (!equalBytes(bytes.subarray(24, 56), createHash("sha256").update(key).digest())) {
    return "it is of another version of its data file";
  }
  return undefined;
}

function damaged(why: string): WaterError {
  return new WaterError("ERR_WATER_SNAPSHOT", `Cannot use the dataset snapshot: ${why}`);
}

function align(offset: number): number {
  return Math.ceil(offset / 8) * 8;
}

function isCount(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0;
}

function numberOrNaN(value: Scalar | undefined): number {
  return typeof value === "number" ? value : Number.NaN;
}

function textOrNull(value: Scalar | undefined): string | null {
  return value === null || value === undefined ? null : String(value);
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
