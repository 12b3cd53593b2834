// Batch kernels. A kernel filters a batch of rows and writes the matching ones,
// ascending, to `out`, returning how many. The batch is either the contiguous
// rows `start .. start + n - 1` (when `sel` is null) or `sel[0 .. n - 1]`.
// Kernels may run in place (`out === sel`): they never write ahead of what
// they read. Each storage form has its own small function so that every loop
// stays monomorphic for the JIT.

import { firstRangeEndingAfter, lowerBound } from "./_row_sets.ts";

/** A compiled condition over a batch of rows. */
export type Kernel = (
  sel: Uint32Array | null,
  start: number,
  n: number,
  out: Uint32Array,
) => number;

/** Largest batch a kernel is given. */
export const MAX_BATCH = 8192;

export function constantKernel(value: boolean): Kernel {
  if (!value) return () => 0;
  return function all(sel, start, n, out) {
    if (sel === null) {
      for (let i = 0; i < n; i++) out[i] = start + i;
    } else if (sel !== out) {
      out.set(sel.subarray(0, n));
    }
    return n;
  };
}

// The loops live in top-level functions that take their arrays as
// parameters: no closure context to reload, one input form per function, so
// type feedback stays stable whatever other queries have run. The kernels
// below are thin dispatchers over them.

function tableRange8(
  c: Uint8Array,
  t: Uint8Array,
  start: number,
  n: number,
  out: Uint32Array,
): number {
  let m = 0;
  for (let r = start, end = start + n; r < end; r++) if (t[c[r]!] !== 0) out[m++] = r;
  return m;
}

function tableSel8(
  c: Uint8Array,
  t: Uint8Array,
  sel: Uint32Array,
  n: number,
  out: Uint32Array,
): number {
  let m = 0;
  for (let i = 0; i < n; i++) {
    const r = sel[i]!;
    if (t[c[r]!] !== 0) out[m++] = r;
  }
  return m;
}

function tableRange16(
  c: Uint16Array,
  t: Uint8Array,
  start: number,
  n: number,
  out: Uint32Array,
): number {
  let m = 0;
  for (let r = start, end = start + n; r < end; r++) if (t[c[r]!] !== 0) out[m++] = r;
  return m;
}

function tableSel16(
  c: Uint16Array,
  t: Uint8Array,
  sel: Uint32Array,
  n: number,
  out: Uint32Array,
): number {
  let m = 0;
  for (let i = 0; i < n; i++) {
    const r = sel[i]!;
    if (t[c[r]!] !== 0) out[m++] = r;
  }
  return m;
}

function tableRange32(
  c: Uint32Array,
  t: Uint8Array,
  start: number,
  n: number,
  out: Uint32Array,
): number {
  let m = 0;
  for (let r = start, end = start + n; r < end; r++) if (t[c[r]!] !== 0) out[m++] = r;
  return m;
}

function tableSel32(
  c: Uint32Array,
  t: Uint8Array,
  sel: Uint32Array,
  n: number,
  out: Uint32Array,
): number {
  let m = 0;
  for (let i = 0; i < n; i++) {
    const r = sel[i]!;
    if (t[c[r]!] !== 0) out[m++] = r;
  }
  return m;
}

function eqRange8(c: Uint8Array, k: number, start: number, n: number, out: Uint32Array): number {
  let m = 0;
  for (let r = start, end = start + n; r < end; r++) if (c[r] === k) out[m++] = r;
  return m;
}

function eqSel8(c: Uint8Array, k: number, sel: Uint32Array, n: number, out: Uint32Array): number {
  let m = 0;
  for (let i = 0; i < n; i++) {
    const r = sel[i]!;
    if (c[r] === k) out[m++] = r;
  }
  return m;
}

function eqRange16(c: Uint16Array, k: number, start: number, n: number, out: Uint32Array): number {
  let m = 0;
  for (let r = start, end = start + n; r < end; r++) if (c[r] === k) out[m++] = r;
  return m;
}

function eqSel16(c: Uint16Array, k: number, sel: Uint32Array, n: number, out: Uint32Array): number {
  let m = 0;
  for (let i = 0; i < n; i++) {
    const r = sel[i]!;
    if (c[r] === k) out[m++] = r;
  }
  return m;
}

function eqRange32(c: Uint32Array, k: number, start: number, n: number, out: Uint32Array): number {
  let m = 0;
  for (let r = start, end = start + n; r < end; r++) if (c[r] === k) out[m++] = r;
  return m;
}

function eqSel32(c: Uint32Array, k: number, sel: Uint32Array, n: number, out: Uint32Array): number {
  let m = 0;
  for (let i = 0; i < n; i++) {
    const r = sel[i]!;
    if (c[r] === k) out[m++] = r;
  }
  return m;
}

function betweenRange(
  v: Float64Array,
  lo: number,
  hi: number,
  start: number,
  n: number,
  out: Uint32Array,
): number {
  let m = 0;
  for (let r = start, end = start + n; r < end; r++) {
    const x = v[r]!;
    if (x >= lo && x <= hi) out[m++] = r;
  }
  return m;
}

function betweenSel(
  v: Float64Array,
  lo: number,
  hi: number,
  sel: Uint32Array,
  n: number,
  out: Uint32Array,
): number {
  let m = 0;
  for (let i = 0; i < n; i++) {
    const r = sel[i]!;
    const x = v[r]!;
    if (x >= lo && x <= hi) out[m++] = r;
  }
  return m;
}

export function dict8Kernel(codes: Uint8Array, table: Uint8Array): Kernel {
  return (sel, start, n, out) =>
    sel === null ? tableRange8(codes, table, start, n, out) : tableSel8(codes, table, sel, n, out);
}

export function dict16Kernel(codes: Uint16Array, table: Uint8Array): Kernel {
  return (sel, start, n, out) =>
    sel === null
      ? tableRange16(codes, table, start, n, out)
      : tableSel16(codes, table, sel, n, out);
}

export function dict32Kernel(codes: Uint32Array, table: Uint8Array): Kernel {
  return (sel, start, n, out) =>
    sel === null
      ? tableRange32(codes, table, start, n, out)
      : tableSel32(codes, table, sel, n, out);
}

export function eq8Kernel(codes: Uint8Array, code: number): Kernel {
  return (sel, start, n, out) =>
    sel === null ? eqRange8(codes, code, start, n, out) : eqSel8(codes, code, sel, n, out);
}

export function eq16Kernel(codes: Uint16Array, code: number): Kernel {
  return (sel, start, n, out) =>
    sel === null ? eqRange16(codes, code, start, n, out) : eqSel16(codes, code, sel, n, out);
}

export function eq32Kernel(codes: Uint32Array, code: number): Kernel {
  return (sel, start, n, out) =>
    sel === null ? eqRange32(codes, code, start, n, out) : eqSel32(codes, code, sel, n, out);
}

/** Keeps rows whose value is within `[lo, hi]`; NaN (null) never is. */
export function numberRangeKernel(values: Float64Array, lo: number, hi: number): Kernel {
  return (sel, start, n, out) =>
    sel === null
      ? betweenRange(values, lo, hi, start, n, out)
      : betweenSel(values, lo, hi, sel, n, out);
}

/** Keeps rows for which `test(row)` holds; the slow path for rare forms. */
export function rowTestKernel(test: (row: number) => boolean): Kernel {
  return function rowTest(sel, start, n, out) {
    let m = 0;
    if (sel === null) {
      for (let r = start, end = start + n; r < end; r++) if (test(r)) out[m++] = r;
    } else {
      for (let i = 0; i < n; i++) {
        const r = sel[i]!;
        if (test(r)) out[m++] = r;
      }
    }
    return m;
  };
}

/** Keeps rows inside sorted `[start, end)` pairs. */
export function rangesKernel(ranges: Uint32Array): Kernel {
  const length = ranges.length;
  return function inRanges(sel, start, n, out) {
    if (n === 0) return 0;
    let m = 0;
    if (sel === null) {
      const end = start + n;
      for (let k = firstRangeEndingAfter(ranges, start); k < length; k += 2) {
        const s = Math.max(ranges[k]!, start);
        if (s >= end) break;
        const e = Math.min(ranges[k + 1]!, end);
        for (let r = s; r < e; r++) out[m++] = r;
      }
      return m;
    }
    let k = firstRangeEndingAfter(ranges, sel[0]!);
    for (let i = 0; i < n && k < length; i++) {
      const r = sel[i]!;
      while (k < length && ranges[k + 1]! <= r) k += 2;
      if (k < length && ranges[k]! <= r) out[m++] = r;
    }
    return m;
  };
}

/** Keeps rows that are in a sorted list. */
export function rowListKernel(rows: Uint32Array): Kernel {
  return function inRows(sel, start, n, out) {
    if (n === 0) return 0;
    let m = 0;
    if (sel === null) {
      const lo = lowerBound(rows, start);
      const hi = lowerBound(rows, start + n, lo);
      for (let j = lo; j < hi; j++) out[m++] = rows[j]!;
      return m;
    }
    let j = lowerBound(rows, sel[0]!);
    for (let i = 0; i < n && j < rows.length; i++) {
      const r = sel[i]!;
      while (j < rows.length && rows[j]! < r) j++;
      if (rows[j] === r) out[m++] = r;
    }
    return m;
  };
}

export function andKernel(children: readonly Kernel[]): Kernel {
  const first = children[0]!;
  const rest = children.slice(1);
  return function and(sel, start, n, out) {
    let m = first(sel, start, n, out);
    for (let c = 0; c < rest.length && m > 0; c++) m = rest[c]!(out, 0, m, out);
    return m;
  };
}

export function orKernel(children: readonly Kernel[]): Kernel {
  let acc = new Uint32Array(MAX_BATCH);
  let merged = new Uint32Array(MAX_BATCH);
  const remaining = new Uint32Array(MAX_BATCH);
  const hits = new Uint32Array(MAX_BATCH);
  return function or(sel, start, n, out) {
    let a = children[0]!(sel, start, n, acc);
    let left = subtract(sel, start, n, acc, a, remaining);
    for (let c = 1; c < children.length && left > 0; c++) {
      const h = children[c]!(remaining, 0, left, hits);
      if (h === 0) continue;
      a = mergeSorted(acc, a, hits, h, merged);
      [acc, merged] = [merged, acc];
      left = subtract(remaining, 0, left, hits, h, remaining);
    }
    out.set(acc.subarray(0, a));
    return a;
  };
}

export function notKernel(child: Kernel): Kernel {
  const hits = new Uint32Array(MAX_BATCH);
  return function not(sel, start, n, out) {
    const h = child(sel, start, n, hits);
    return subtract(sel, start, n, hits, h, out);
  };
}

/** Writes the batch minus `sub` (a sorted subset of it) to `out`; may run in place. */
function subtract(
  sel: Uint32Array | null,
  start: number,
  n: number,
  sub: Uint32Array,
  subLength: number,
  out: Uint32Array,
): number {
  let m = 0;
  let j = 0;
  for (let i = 0; i < n; i++) {
    const r = sel === null ? start + i : sel[i]!;
    if (j < subLength && sub[j] === r) {
      j++;
      continue;
    }
    out[m++] = r;
  }
  return m;
}

function mergeSorted(
  a: Uint32Array,
  an: number,
  b: Uint32Array,
  bn: number,
  out: Uint32Array,
): number {
  let i = 0;
  let j = 0;
  let m = 0;
  while (i < an && j < bn) {
    if (a[i]! < b[j]!) out[m++] = a[i++]!;
    else out[m++] = b[j++]!;
  }
  while (i < an) out[m++] = a[i++]!;
  while (j < bn) out[m++] = b[j++]!;
  return m;
}
