import type { Scalar } from "./schema.ts";

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

/** A sequential integer id: the value of a row is `row + offset`. */
export interface RowNumberColumn {
  readonly kind: "rownumber";
  readonly offset: number;
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
