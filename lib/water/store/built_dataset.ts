import type { CodeArray } from "../../columnar/mod.ts";
import type { Scalar } from "../../odata/mod.ts";
import { NUMERIC_OBSERVATION_COLUMNS, OBSERVATION_COLUMNS } from "../fields.ts";

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
  | {
    readonly kind: "dict";
    readonly values: readonly Scalar[];
    readonly codes: CodeArray;
    readonly counts: Uint32Array;
    readonly base?: DictionaryBase;
  }
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
  /** The SHA-256 (hex) of those values, as `StoreBuilder` hashes a dictionary. */
  readonly hash: string;
  /** The code of each of `values` in the codes. */
  readonly codeOf: Uint32Array;
}

/**
 * A dataset as read, before it joins a store: its locations, its rows
 * grouped by location, and its observation columns. `StoreBuilder.finish`
 * merges the datasets' dictionaries in dataset order, so that a dataset
 * added built (`StoreBuilder.addBuiltDataset`) gives the store the
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

/**
 * Checks that a built dataset holds together: columns of the right kinds and
 * lengths, rows per location and per code summing to its rows (without a
 * pass over the rows: a snapshot's checksum vouches for its codes).
 */
export function checkBuiltDataset(built: BuiltDataset): void {
  const fail = (what: string): never => {
    throw new TypeError(`Cannot add a built dataset: ${what}`);
  };
  if (built.locations.length !== built.locationRows.length) {
    fail("its locations and their row counts disagree");
  }
  let total = 0;
  for (const count of built.locationRows) total += count;
  if (total !== built.rows) fail(`its locations hold ${total} rows, not ${built.rows}`);
  if (built.columns.length !== OBSERVATION_COLUMNS.length) {
    fail(`it has ${built.columns.length} columns, not ${OBSERVATION_COLUMNS.length}`);
  }
  built.columns.forEach((column, s) => {
    const name = OBSERVATION_COLUMNS[s]!;
    if ((column.kind === "number") !== NUMERIC_OBSERVATION_COLUMNS.has(name)) {
      fail(`its ${name} column is of the wrong kind`);
    }
    const length = column.kind === "number" ? column.values.length : column.codes.length;
    if (length !== built.rows) fail(`its ${name} column has ${length} rows, not ${built.rows}`);
    if (column.kind === "dict") {
      let counted = 0;
      for (const count of column.counts) counted += count;
      const { values, counts, base } = column;
      if (
        values[0] !== null || counts.length !== values.length || counted !== built.rows ||
        (base !== undefined && base.codeOf.length !== values.length)
      ) {
        fail(`its ${name} dictionary is malformed`);
      }
    }
  });
}

/**
 * The first and last day of a dataset's `ActivityStartDate` column, from its
 * dictionary: the values some row has (dates compare as text).
 */
export function temporalExtentOf(column: BuiltColumn | undefined): readonly string[] {
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
