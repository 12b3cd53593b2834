import type { Scalar } from "../../odata/mod.ts";
import { compareResultValues } from "../../odata/_internal.ts";

// The result of an aggregation held column by column: a few typed arrays
// rather than an array and a boxed number per group and value, so that a
// result costs the garbage collector next to nothing, whether it is read
// once or kept for the pages after the first.

/** One column of grouped results: a value per group. */
export type GroupedColumn =
  /** Codes of a grouping property, and the value of each code. */
  | { readonly kind: "codes"; readonly codes: Int32Array; readonly values: readonly Scalar[] }
  /** Numbers; `NaN` stands for null. */
  | { readonly kind: "numbers"; readonly values: Float64Array }
  /** Any values (the least text of a group, say). */
  | { readonly kind: "values"; readonly values: readonly Scalar[] };

/** Groups of an aggregation: the grouping properties' columns, then the aggregates'. */
export interface GroupedColumns {
  /** Groups, in the order they were met. */
  readonly count: number;
  /** How many of the columns, first, are grouping properties. */
  readonly keys: number;
  readonly columns: readonly GroupedColumn[];
  /**
   * The groups ordered by the grouping properties, ascending (null first;
   * see `compareResultValues`), groups with equal values in the order met.
   */
  readonly order: Uint32Array;
}

/**
 * A group's value in a column.
 * @param column the column
 * @param g the group
 * @returns its value
 */
export function cellOf(column: GroupedColumn, g: number): Scalar {
  switch (column.kind) {
    case "codes":
      return column.values[column.codes[g]!]!;
    case "numbers": {
      const value = column.values[g]!;
      return value === value ? value : null;
    }
    case "values":
      return column.values[g]!;
  }
}

/**
 * Rows of groups, each the values of every column.
 * @param grouped the groups
 * @param groups which, in which order (by default all, in the order met)
 * @returns one row per group
 */
export function groupedRows(grouped: GroupedColumns, groups?: ArrayLike<number>): Scalar[][] {
  const columns = grouped.columns;
  const count = groups === undefined ? grouped.count : groups.length;
  const out = new Array<Scalar[]>(count);
  for (let i = 0; i < count; i++) {
    const g = groups === undefined ? i : groups[i]!;
    const row = new Array<Scalar>(columns.length);
    for (let c = 0; c < columns.length; c++) row[c] = cellOf(columns[c]!, g);
    out[i] = row;
  }
  return out;
}

/** Ranks of the values of a values array, by the array (the dictionaries' are the store's, kept). */
const ranksByValues = new WeakMap<readonly Scalar[], Int32Array>();

/**
 * The rank of each value of an array in ascending order: equal values have
 * equal ranks, null ranks first.
 */
function ranksOf(values: readonly Scalar[]): Int32Array {
  let ranks = ranksByValues.get(values);
  if (ranks === undefined) {
    const indices = Array.from({ length: values.length }, (_, i) => i);
    indices.sort((a, b) => compareResultValues(values[a]!, values[b]!));
    ranks = new Int32Array(values.length);
    let rank = 0;
    for (let i = 0; i < indices.length; i++) {
      if (i > 0 && compareResultValues(values[indices[i - 1]!]!, values[indices[i]!]!) !== 0) {
        rank++;
      }
      ranks[indices[i]!] = rank;
    }
    ranksByValues.set(values, ranks);
  }
  return ranks;
}

/**
 * The groups in ascending order of their grouping properties, the groups
 * of equal values in the order met (what a stable sort of the rows by
 * `compareResultValues` gives). Each key of a group becomes the rank of its
 * value. Where the combinations of ranks are few beside the groups, the
 * groups are counted out by combination (a counting sort, linear); where
 * the ranks of each key are, by the rank of each key, last key first (a
 * stable radix sort); otherwise, when the ranks and the group fit in one
 * exact double, each group is one number (ranks, then the group) and the
 * numbers are sorted.
 * @param count groups
 * @param keys the grouping properties' columns
 * @returns the groups in order
 */
export function orderGroups(count: number, keys: readonly GroupedColumn[]): Uint32Array {
  let order = new Uint32Array(count);
  for (let g = 0; g < count; g++) order[g] = g;
  if (keys.length === 0 || count < 2) return order;
  const ranked: { ranks: Int32Array; codes: Int32Array }[] = [];
  let space = count;
  let spread = 0;
  for (const column of keys) {
    if (column.kind !== "codes") return order.sort(compareCells(keys));
    const ranks = ranksOf(column.values);
    ranked.push({ ranks, codes: column.codes });
    space *= Math.max(1, ranks.length);
    spread += ranks.length;
  }
  if (space / count <= 4 * count + 1024) {
    // One counting sort by the ranks together (groups, the order met, within a combination).
    const combined = new Int32Array(count);
    const { ranks, codes } = ranked[0]!;
    for (let g = 0; g < count; g++) combined[g] = ranks[codes[g]!]!;
    for (let k = 1; k < ranked.length; k++) {
      const { ranks, codes } = ranked[k]!;
      const size = ranks.length;
      for (let g = 0; g < count; g++) combined[g] = combined[g]! * size + ranks[codes[g]!]!;
    }
    const starts = new Int32Array(space / count + 1);
    for (let g = 0; g < count; g++) starts[combined[g]! + 1]!++;
    for (let r = 1; r < starts.length; r++) starts[r]! += starts[r - 1]!;
    for (let g = 0; g < count; g++) order[starts[combined[g]!]!++] = g;
    return order;
  }
  if (spread <= 4 * count) {
    // Distributed by the rank of each key, last first: a stable radix sort.
    let next = new Uint32Array(count);
    for (let k = ranked.length - 1; k >= 0; k--) {
      const { ranks, codes } = ranked[k]!;
      const starts = new Uint32Array(ranks.length + 1);
      for (let g = 0; g < count; g++) starts[ranks[codes[g]!]! + 1]!++;
      for (let r = 0; r < ranks.length; r++) starts[r + 1]! += starts[r]!;
      for (let i = 0; i < count; i++) {
        const g = order[i]!;
        next[starts[ranks[codes[g]!]!]!++] = g;
      }
      [order, next] = [next, order];
    }
    return order;
  }
  if (space > Number.MAX_SAFE_INTEGER) return order.sort(compareCells(keys));
  const sortable = new Float64Array(count);
  for (let g = 0; g < count; g++) {
    let key = 0;
    for (let k = 0; k < ranked.length; k++) {
      const { ranks, codes } = ranked[k]!;
      key = key * ranks.length + ranks[codes[g]!]!;
    }
    sortable[g] = key * count + g;
  }
  sortable.sort();
  for (let i = 0; i < count; i++) order[i] = sortable[i]! % count;
  return order;
}

function compareCells(keys: readonly GroupedColumn[]): (a: number, b: number) => number {
  return (a, b) => {
    for (const column of keys) {
      const order = compareResultValues(cellOf(column, a), cellOf(column, b));
      if (order !== 0) return order;
    }
    return a - b;
  };
}
