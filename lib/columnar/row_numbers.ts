import type { RowNumberColumn } from "./columns.ts";

// Reading a row-number column both ways: a row's number, and the rows a
// number bounds. Values ascend with rows, so both are a search over the
// segments (few: one per dataset, say), never over the rows.

/**
 * The segment that holds a row: the last one starting at or before it (an
 * empty segment starts where the next one does, so the non-empty one wins).
 */
function segmentOf(starts: Uint32Array, row: number): number {
  let lo = 0;
  let hi = starts.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (starts[mid]! <= row) lo = mid + 1;
    else hi = mid;
  }
  return Math.max(0, lo - 1);
}

/**
 * The value of one row of a row-number column.
 * @param column the column
 * @param row the row
 * @returns its number
 */
export function rowNumberAt(column: RowNumberColumn, row: number): number {
  const segments = column.segments;
  if (segments === undefined) return row + column.offset;
  return row + segments.offsets[segmentOf(segments.starts, row)]!;
}

/**
 * A reader of a row-number column for rows read mostly in ascending order (a
 * page): the segment of the last row is tried first, so a row costs a
 * comparison or two rather than a search.
 * @param column the column
 * @returns a function from a row to its number
 */
export function rowNumberReader(column: RowNumberColumn): (row: number) => number {
  const segments = column.segments;
  if (segments === undefined) {
    const offset = column.offset;
    return (row) => row + offset;
  }
  const { starts, offsets } = segments;
  let k = 0;
  return (row) => {
    if (row < starts[k]! || (k + 1 < starts.length && row >= starts[k + 1]!)) {
      k = segmentOf(starts, row);
    }
    return row + offsets[k]!;
  };
}

/**
 * How many rows of a row-number column have a number below a value: the
 * first row whose number is `value` or more.
 * @param column the column
 * @param length rows of the table
 * @param value any number
 * @returns a row count from 0 to `length`
 */
export function rowsBelow(column: RowNumberColumn, length: number, value: number): number {
  const clamp = (row: number, from: number, to: number): number =>
    Math.min(to, Math.max(from, row));
  if (Number.isNaN(value)) return 0;
  const segments = column.segments;
  if (segments === undefined) return clamp(Math.ceil(value - column.offset), 0, length);
  const { starts, offsets } = segments;
  for (let k = 0; k < starts.length; k++) {
    const from = Math.min(length, starts[k]!);
    const to = k + 1 < starts.length ? Math.min(length, starts[k + 1]!) : length;
    if (from === to) continue;
    // The segment's numbers are from + offset .. to - 1 + offset; later segments' are larger.
    if (to - 1 + offsets[k]! < value) continue;
    return clamp(Math.ceil(value - offsets[k]!), from, to);
  }
  return length;
}

/**
 * The row of a row-number column that has a number.
 * @param column the column
 * @param length rows of the table
 * @param value the number
 * @returns the row, or -1 when no row has it
 */
export function rowWithNumber(column: RowNumberColumn, length: number, value: number): number {
  if (!Number.isInteger(value)) return -1;
  const row = rowsBelow(column, length, value);
  return row < length && rowNumberAt(column, row) === value ? row : -1;
}
