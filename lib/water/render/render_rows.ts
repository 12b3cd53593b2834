import { type Column, rowNumberReader } from "../../columnar/mod.ts";
import { ODataError, type Scalar } from "../../odata/mod.ts";
import type { CollectionField, CollectionSchema } from "../fields.ts";
import { formatCsvField } from "./format_csv.ts";
import { createJsonRowBytes, type JsonRowBlock } from "./_json_row_bytes.ts";
import type { WaterStore } from "../store/store.ts";

/** Writes one field of one row; `row` is at the collection's level. */
export type FieldWriter = (row: number, location: number, dataset: number) => string;

/** The selected fields of a query, ready to write rows as JSON or CSV. */
export interface RowWriter {
  readonly fields: readonly CollectionField[];
  /** Writes the rows as comma-separated JSON objects (no brackets). */
  json(rows: ArrayLike<number>): string;
  /**
   * Writes the rows as comma-separated JSON objects straight into bytes,
   * equal to `json`'s text in UTF-8, between `head` and `tail` when given
   * (so that a page is one block): the fields of a row are copied as a few
   * precomputed fragments (see _json_row_bytes.ts), numbers written as digits;
   * into `scratch` (the bytes then a view of it) when they are expected to fit.
   * @returns the bytes, and where each row's object starts (`starts[k]`) and ends (`ends[k]`)
   */
  jsonBytes(
    rows: ArrayLike<number>,
    head?: Uint8Array,
    tail?: Uint8Array,
    scratch?: Uint8Array,
  ): JsonRowBlock;
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
    throw new ODataError(
      "ERR_ODATA_UNKNOWN_FIELD",
      `Cannot select "${name}" from ${collection.name}${hint}`,
      {
        target: name,
      },
    );
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
  const jsonBytes = createJsonRowBytes(store, collection.level, fields);
  const csv = fields.map((field) => writerFor(store, field, "csv"));
  const prefixes = fields.map((field, i) => `${i === 0 ? "{" : ","}${JSON.stringify(field.name)}:`);
  const level = collection.level;
  const place = (
    rows: ArrayLike<number>,
    visit: (row: number, location: number, dataset: number) => void,
  ) => {
    let location = -1;
    let dataset = -1;
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i]!;
      if (level === "observation") {
        if (
          location < 0 || row < store.locationRowStarts[location]! ||
          row >= store.locationRowStarts[location + 1]!
        ) {
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
        for (let f = 0; f < json.length; f++) {
          out += prefixes[f]! + json[f]!(row, location, dataset);
        }
        out += "}";
      });
      return out;
    },
    jsonBytes,
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
    const values = store.datasets.map((d) =>
      encode(name === "Id" ? d.id : d.metadata[name] ?? null)
    );
    return (_row, _location, dataset) => values[dataset]!;
  }
  const column = store.column(source.key);
  if (column === undefined) {
    throw new TypeError(`Cannot write field "${field.name}": no column ${source.key}`);
  }
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

function encodeJson(value: Scalar | readonly string[]): string {
  return JSON.stringify(value);
}

function encodeCsv(value: Scalar | readonly string[]): string {
  if (Array.isArray(value)) return formatCsvField(value.join(", "));
  return formatCsvField(value as Scalar);
}
