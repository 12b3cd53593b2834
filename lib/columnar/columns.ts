import type { Scalar } from "../odata/mod.ts";

/** Dictionary codes; code 0 always means null. */
export type CodeArray = Uint8Array | Uint16Array | Uint32Array;

/**
 * Rows grouped by key, in compressed sparse row form: the rows of key `k` are
 * `rows[starts[k]]` up to (excluding) `rows[starts[k + 1]]`, ascending.
 */
export interface PostingIndex {
  /** Maps a dictionary code to its key; absent when the keys are the codes. */
  readonly keyOf?: Uint32Array;
  readonly starts: Uint32Array;
  readonly rows: Uint32Array;
}

/** A dictionary-encoded column: `values[codes[row]]`; `values[0]` is null. */
export interface DictColumn {
  readonly kind: "dict";
  readonly codes: CodeArray;
  readonly values: readonly Scalar[];
  readonly index?: PostingIndex;
  /** Rows per code, when known: lets the planner order conditions by selectivity. */
  readonly counts?: Uint32Array;
}

/** A numeric column; `NaN` means null. */
export interface NumberColumn {
  readonly kind: "number";
  readonly values: Float64Array;
}

/**
 * An ascending integer id: the value of a row is `row + offset`, or, with
 * `segments`, `row + segments.offsets[k]` for the rows of segment `k`. Values
 * ascend with rows across segments too (a later segment may skip numbers,
 * never go back), so a comparison selects a range of rows.
 */
export interface RowNumberColumn {
  readonly kind: "rownumber";
  /** The offset of every row, when there are no `segments`. */
  readonly offset: number;
  readonly segments?: RowNumberSegments;
}

/**
 * Runs of rows with their own offset: segment `k` holds rows `starts[k]` up
 * to (excluding) `starts[k + 1]` (the last, up to the table's length); an
 * empty segment starts where the next one does. `starts[0]` is 0.
 */
export interface RowNumberSegments {
  readonly starts: Uint32Array;
  readonly offsets: Float64Array;
}

/**
 * A value of the group a row belongs to. Rows are stored grouped: group `g`
 * holds rows `starts[g]` up to (excluding) `starts[g + 1]`, and `column` is a
 * column over the groups. Groups nest (observations in locations in datasets).
 */
export interface GroupColumn {
  readonly kind: "group";
  readonly starts: Uint32Array;
  readonly column: Column;
}

/** Plain values, one per row, for small tables; an array is a multi-valued field. */
export interface ValuesColumn {
  readonly kind: "values";
  readonly values: readonly (Scalar | readonly Scalar[])[];
}

/** A column of a {@linkcode ColumnTable}, in one of the storage forms the compiler knows. */
export type Column = DictColumn | NumberColumn | RowNumberColumn | GroupColumn | ValuesColumn;

/** Rows `0 .. length - 1` with their columns, by bound field name. */
export interface ColumnTable {
  readonly length: number;
  column(name: string): Column | undefined;
}
