import type { Column, Scalar } from "../odata/mod.ts";
import { ODataError, rowNumberReader } from "../odata/mod.ts";
import type { CollectionField, CollectionSchema } from "./fields.ts";
import { formatCsvField } from "./format_csv.ts";
import type { WaterStore } from "./store.ts";

/** Writes one field of one row; `row` is at the collection's level. */
export type FieldWriter = (row: number, location: number, dataset: number) => string;

/** The selected fields of a query, ready to write rows as JSON or CSV. */
export interface RowWriter {
  readonly fields: readonly CollectionField[];
  /** Writes the rows as comma-separated JSON objects (no brackets). */
  json(rows: ArrayLike<number>): string;
  /**
   * Writes the rows as comma-separated JSON objects straight into bytes,
   * equal to `json`'s text in UTF-8: precomputed fragments (each field's
   * name with each dictionary value) are copied, numbers written as digits.
   * @returns the bytes, and where each row's object starts (`starts[k]`) and ends (`ends[k]`)
   */
  jsonBytes(rows: ArrayLike<number>): { readonly block: Uint8Array; readonly starts: Uint32Array; readonly ends: Uint32Array };
  /** Writes the rows as CSV records. */
  csv(rows: ArrayLike<number>): string;
  /** The CSV header record. */
  csvHeader(): string;
}

const jsonCache = new WeakMap<object, readonly string[]>();
const csvCache = new WeakMap<object, readonly string[]>();

/**
 * Resolves `$select` against a collection: names are case-sensitive; none
 * means all fields in the default order.
 * @param collection the collection
 * @param select the `$select` names
 * @returns the fields in the order given
 * @throws {ODataError} `ERR_ODATA_UNKNOWN_FIELD` naming the field in `target`
 */
export function selectFields(
  collection: CollectionSchema,
  select: readonly string[] | undefined,
): readonly CollectionField[] {
  if (select === undefined || (select.length === 1 && select[0] === "*")) return collection.select;
  return select.map((name) => {
    const field = collection.select.find((f) => f.name === name);
    if (field !== undefined) return field;
    const filterOnly = collection.filter.has(name);
    const near = collection.select.find((f) => f.name.toLowerCase() === name.toLowerCase());
    const hint = filterOnly
      ? `; it can be used in $filter but not in $select`
      : near === undefined
      ? ""
      : `; names are case-sensitive: did you mean "${near.name}"?`;
    throw new ODataError("ERR_ODATA_UNKNOWN_FIELD", `Cannot select "${name}" from ${collection.name}${hint}`, {
      target: name,
    });
  });
}

/**
 * Builds a writer for a collection's rows with the selected fields.
 * Dictionary values are encoded once and cached, so writing a row is mostly
 * string concatenation.
 * @param store the store
 * @param collection the collection
 * @param fields the selected fields
 * @returns the writer
 */
export function createRowWriter(
  store: WaterStore,
  collection: CollectionSchema,
  fields: readonly CollectionField[],
): RowWriter {
  const json = fields.map((field) => writerFor(store, field, "json"));
  const bytes = fields.map((field, i) => byteWriterFor(store, field, `${i === 0 ? "{" : ","}${JSON.stringify(field.name)}:`));
  /** Bytes a row took last time, a little over: the next block is sized once, not grown. */
  let rowBytes = 256;
  const csv = fields.map((field) => writerFor(store, field, "csv"));
  const prefixes = fields.map((field, i) => `${i === 0 ? "{" : ","}${JSON.stringify(field.name)}:`);
  const level = collection.level;
  const place = (rows: ArrayLike<number>, visit: (row: number, location: number, dataset: number) => void) => {
    let location = -1;
    let dataset = -1;
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i]!;
      if (level === "observation") {
        if (location < 0 || row < store.locationRowStarts[location]! || row >= store.locationRowStarts[location + 1]!) {
          location = store.locationOfRow(row);
          dataset = store.datasetOfLocation(location);
        }
      } else if (level === "location") {
        location = row;
        dataset = store.datasetOfLocation(row);
      } else {
        dataset = row;
      }
      visit(row, location, dataset);
    }
  };
  return {
    fields,
    json(rows) {
      let out = "";
      place(rows, (row, location, dataset) => {
        if (out !== "") out += ",";
        for (let f = 0; f < json.length; f++) out += prefixes[f]! + json[f]!(row, location, dataset);
        out += "}";
      });
      return out;
    },
    jsonBytes(rows) {
      const out = new ByteOut(rows.length * rowBytes);
      const starts = new Uint32Array(rows.length);
      const ends = new Uint32Array(rows.length);
      let k = 0;
      place(rows, (row, location, dataset) => {
        if (k > 0) out.byte(0x2c);
        starts[k] = out.at;
        for (let f = 0; f < bytes.length; f++) bytes[f]!(row, location, dataset, out);
        out.byte(0x7d);
        ends[k++] = out.at;
      });
      if (rows.length > 0) rowBytes = Math.ceil((out.at / rows.length) * 1.1) + 8;
      // Trimmed when the guess was far too big: the render cache keeps the block as long as any of its rows.
      const block = out.at < out.buf.length * 0.8 ? out.buf.slice(0, out.at) : out.buf.subarray(0, out.at);
      return { block, starts, ends };
    },
    csv(rows) {
      let out = "";
      place(rows, (row, location, dataset) => {
        for (let f = 0; f < csv.length; f++) {
          if (f > 0) out += ",";
          out += csv[f]!(row, location, dataset);
        }
        out += "\r\n";
      });
      return out;
    },
    csvHeader() {
      return fields.map((field) => formatCsvField(field.name)).join(",") + "\r\n";
    },
  };
}

function writerFor(store: WaterStore, field: CollectionField, format: "json" | "csv"): FieldWriter {
  const source = field.source;
  const encode = format === "json" ? encodeJson : encodeCsv;
  if (source.level === "dataset") {
    const name = source.key.slice("dataset.".length);
    const values = store.datasets.map((d) => encode(name === "Id" ? d.id : d.metadata[name] ?? null));
    return (_row, _location, dataset) => values[dataset]!;
  }
  const column = store.column(source.key);
  if (column === undefined) throw new TypeError(`Cannot write field "${field.name}": no column ${source.key}`);
  const pick = source.level === "location"
    ? (_row: number, location: number) => location
    : (row: number) => row;
  return columnWriter(column, encode, format === "json" ? jsonCache : csvCache, pick);
}

function columnWriter(
  column: Column,
  encode: (value: Scalar | readonly string[]) => string,
  cache: WeakMap<object, readonly string[]>,
  pick: (row: number, location: number) => number,
): FieldWriter {
  switch (column.kind) {
    case "dict": {
      let encoded = cache.get(column.values);
      if (encoded === undefined) {
        encoded = column.values.map((value) => encode(value));
        cache.set(column.values, encoded);
      }
      const table = encoded;
      const codes = column.codes;
      return (row, location) => table[codes[pick(row, location)]!]!;
    }
    case "number": {
      const values = column.values;
      const empty = encode(null);
      return (row, location) => {
        const v = values[pick(row, location)]!;
        return v === v ? String(v) : empty;
      };
    }
    case "rownumber": {
      const read = rowNumberReader(column);
      return (row, location) => String(read(pick(row, location)));
    }
    default:
      throw new TypeError(`Cannot write a ${column.kind} column`);
  }
}

/** A growing byte buffer the row writer copies fragments into. */
class ByteOut {
  buf: Uint8Array;
  at = 0;

  constructor(capacity: number) {
    this.buf = new Uint8Array(Math.max(1024, capacity));
  }

  #grow(needed: number): void {
    const bigger = new Uint8Array(Math.max(this.buf.length * 2, this.at + needed));
    bigger.set(this.buf.subarray(0, this.at));
    this.buf = bigger;
  }

  byte(value: number): void {
    if (this.at >= this.buf.length) this.#grow(1);
    this.buf[this.at++] = value;
  }

  bytes(fragment: Uint8Array): void {
    const n = fragment.length;
    if (this.at + n > this.buf.length) this.#grow(n);
    const buf = this.buf;
    let at = this.at;
    // Short fragments (most) are cheaper copied by hand than through set().
    if (n <= 16) for (let i = 0; i < n; i++) buf[at++] = fragment[i]!;
    else {
      buf.set(fragment, at);
      at += n;
    }
    this.at = at;
  }

  /** ASCII text (numbers as JavaScript writes them): one byte a character. */
  ascii(text: string): void {
    const n = text.length;
    if (this.at + n > this.buf.length) this.#grow(n);
    const buf = this.buf;
    let at = this.at;
    for (let i = 0; i < n; i++) buf[at++] = text.charCodeAt(i);
    this.at = at;
  }
}

/** Writes one field of one row, its name first, as UTF-8 bytes. */
type ByteField = (row: number, location: number, dataset: number, out: ByteOut) => void;

const utf8 = new TextEncoder();
const byteCache = new WeakMap<object, Map<string, readonly Uint8Array[]>>();

function byteWriterFor(store: WaterStore, field: CollectionField, prefix: string): ByteField {
  const source = field.source;
  if (source.level === "dataset") {
    const name = source.key.slice("dataset.".length);
    const values = store.datasets.map((d) => utf8.encode(prefix + encodeJson(name === "Id" ? d.id : d.metadata[name] ?? null)));
    return (_row, _location, dataset, out) => out.bytes(values[dataset]!);
  }
  const column = store.column(source.key);
  if (column === undefined) throw new TypeError(`Cannot write field "${field.name}": no column ${source.key}`);
  const atLocation = source.level === "location";
  switch (column.kind) {
    case "dict": {
      // The name and the value in one fragment a code, kept per dictionary and name.
      let byName = byteCache.get(column.values);
      if (byName === undefined) byteCache.set(column.values, (byName = new Map()));
      let table = byName.get(prefix);
      if (table === undefined) byName.set(prefix, (table = column.values.map((value) => utf8.encode(prefix + encodeJson(value)))));
      const fragments = table;
      const codes = column.codes;
      return atLocation
        ? (_row, location, _dataset, out) => out.bytes(fragments[codes[location]!]!)
        : (row, _location, _dataset, out) => out.bytes(fragments[codes[row]!]!);
    }
    case "number": {
      const values = column.values;
      const name = utf8.encode(prefix);
      const empty = utf8.encode(prefix + "null");
      if (atLocation) {
        // A location's number repeats on each of its rows: written once, then copied.
        const fragments: (Uint8Array | undefined)[] = new Array(values.length);
        return (_row, location, _dataset, out) => {
          let fragment = fragments[location];
          if (fragment === undefined) {
            const v = values[location]!;
            fragments[location] = fragment = v === v ? utf8.encode(prefix + String(v)) : empty;
          }
          out.bytes(fragment);
        };
      }
      return (row, location, _dataset, out) => {
        const v = values[atLocation ? location : row]!;
        if (v !== v) {
          out.bytes(empty);
          return;
        }
        out.bytes(name);
        out.ascii(String(v));
      };
    }
    case "rownumber": {
      const read = rowNumberReader(column);
      const name = utf8.encode(prefix);
      return (row, location, _dataset, out) => {
        out.bytes(name);
        out.ascii(String(read(atLocation ? location : row)));
      };
    }
    default:
      throw new TypeError(`Cannot write a ${column.kind} column`);
  }
}

function encodeJson(value: Scalar | readonly string[]): string {
  return JSON.stringify(value);
}

function encodeCsv(value: Scalar | readonly string[]): string {
  if (Array.isArray(value)) return formatCsvField(value.join(", "));
  return formatCsvField(value as Scalar);
}
