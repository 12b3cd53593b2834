/**
 * Sets of row numbers, ascending: `ranges` holds `[start, end)` pairs, sorted,
 * disjoint and not touching; `rows` holds sorted distinct rows.
 */
export type RowSet =
  | { readonly kind: "ranges"; readonly ranges: Uint32Array }
  | { readonly kind: "rows"; readonly rows: Uint32Array };

export const EMPTY_SET: RowSet = { kind: "rows", rows: new Uint32Array(0) };

/** Number of rows in a set. */
export function sizeOf(set: RowSet): number {
  if (set.kind === "rows") return set.rows.length;
  let total = 0;
  const r = set.ranges;
  for (let k = 0; k < r.length; k += 2) total += r[k + 1]! - r[k]!;
  return total;
}

/** Index of the first element of a sorted array that is >= value. */
export function lowerBound(
  sorted: Uint32Array,
  value: number,
  from = 0,
  to = sorted.length,
): number {
  let lo = from;
  let hi = to;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Index (even) of the first range whose end is > row. */
export function firstRangeEndingAfter(ranges: Uint32Array, row: number): number {
  let lo = 0;
  let hi = ranges.length >>> 1;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (ranges[2 * mid + 1]! <= row) lo = mid + 1;
    else hi = mid;
  }
  return 2 * lo;
}

/** Builds a ranges set from possibly touching sorted pairs, merging neighbours. */
export function rangesFrom(pairs: readonly number[]): RowSet {
  const out: number[] = [];
  for (let k = 0; k < pairs.length; k += 2) {
    const s = pairs[k]!;
    const e = pairs[k + 1]!;
    if (e <= s) continue;
    if (out.length > 0 && out[out.length - 1]! >= s) {
      out[out.length - 1] = Math.max(out[out.length - 1]!, e);
    } else {
      out.push(s, e);
    }
  }
  return { kind: "ranges", ranges: Uint32Array.from(out) };
}

function rowsToRanges(rows: Uint32Array): Uint32Array {
  const out: number[] = [];
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i]!;
    if (out.length > 0 && out[out.length - 1] === r) out[out.length - 1] = r + 1;
    else out.push(r, r + 1);
  }
  return Uint32Array.from(out);
}

/** Intersection of two sets. */
export function intersect(a: RowSet, b: RowSet): RowSet {
  if (a.kind === "ranges" && b.kind === "ranges") return intersectRanges(a.ranges, b.ranges);
  if (a.kind === "rows" && b.kind === "rows") return intersectRows(a.rows, b.rows);
  const rows = a.kind === "rows" ? a.rows : (b as { rows: Uint32Array }).rows;
  const ranges = a.kind === "ranges" ? a.ranges : (b as { ranges: Uint32Array }).ranges;
  return { kind: "rows", rows: rowsWithin(rows, ranges) };
}

/** Rows of a sorted list that fall inside sorted ranges; one range costs no copy. */
export function rowsWithin(rows: Uint32Array, ranges: Uint32Array): Uint32Array {
  if (ranges.length === 2) {
    return rows.subarray(lowerBound(rows, ranges[0]!), lowerBound(rows, ranges[1]!));
  }
  const parts: Uint32Array[] = [];
  let total = 0;
  let from = 0;
  for (let k = 0; k < ranges.length && from < rows.length; k += 2) {
    const lo = lowerBound(rows, ranges[k]!, from);
    const hi = lowerBound(rows, ranges[k + 1]!, lo);
    if (hi > lo) {
      parts.push(rows.subarray(lo, hi));
      total += hi - lo;
    }
    from = hi;
  }
  if (parts.length === 1) return parts[0]!;
  const out = new Uint32Array(total);
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

function intersectRanges(a: Uint32Array, b: Uint32Array): RowSet {
  const out: number[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const s = Math.max(a[i]!, b[j]!);
    const e = Math.min(a[i + 1]!, b[j + 1]!);
    if (s < e) out.push(s, e);
    if (a[i + 1]! < b[j + 1]!) i += 2;
    else j += 2;
  }
  return { kind: "ranges", ranges: Uint32Array.from(out) };
}

function intersectRows(a: Uint32Array, b: Uint32Array): RowSet {
  const out = new Uint32Array(Math.min(a.length, b.length));
  let n = 0;
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const x = a[i]!;
    const y = b[j]!;
    if (x === y) {
      out[n++] = x;
      i++;
      j++;
    } else if (x < y) {
      i = lowerBound(a, y, i + 1);
    } else {
      j = lowerBound(b, x, j + 1);
    }
  }
  return { kind: "rows", rows: out.subarray(0, n) };
}

/** Union of two sets. */
export function union(a: RowSet, b: RowSet): RowSet {
  if (a.kind === "rows" && b.kind === "rows") {
    return { kind: "rows", rows: unionRows(a.rows, b.rows) };
  }
  const x = a.kind === "ranges" ? a.ranges : rowsToRanges(a.rows);
  const y = b.kind === "ranges" ? b.ranges : rowsToRanges(b.rows);
  const pairs: number[] = [];
  let i = 0;
  let j = 0;
  while (i < x.length || j < y.length) {
    if (j >= y.length || (i < x.length && x[i]! <= y[j]!)) {
      pairs.push(x[i]!, x[i + 1]!);
      i += 2;
    } else {
      pairs.push(y[j]!, y[j + 1]!);
      j += 2;
    }
  }
  return rangesFrom(pairs);
}

/** Union of two sorted distinct row lists. */
export function unionRows(a: Uint32Array, b: Uint32Array): Uint32Array {
  const out = new Uint32Array(a.length + b.length);
  let n = 0;
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const x = a[i]!;
    const y = b[j]!;
    if (x < y) {
      out[n++] = x;
      i++;
    } else if (y < x) {
      out[n++] = y;
      j++;
    } else {
      out[n++] = x;
      i++;
      j++;
    }
  }
  while (i < a.length) out[n++] = a[i++]!;
  while (j < b.length) out[n++] = b[j++]!;
  return out.subarray(0, n);
}
