import type { CompiledFilter } from "./compile_filter.ts";
import type { Kernel } from "./_kernels.ts";
import { MAX_BATCH } from "./_kernels.ts";
import { firstRangeEndingAfter, lowerBound } from "./_row_sets.ts";

/** Options of {@linkcode MatchCursor}. */
export interface MatchCursorOptions {
  /**
   * First row to consider.
   * @default {0}
   */
  from?: number;
  /** Called before each batch; throws to stop a query that has run too long. */
  checkpoint?: () => void;
  /**
   * Where the batches go, at least {@linkcode FULL_BATCH} rows, for a caller
   * that reads every match and keeps the buffer for its next cursor: batches
   * are then full from the first, and no buffer is made. The cursor writes
   * it until its walk is over.
   */
  scratch?: Uint32Array;
}

const FIRST_BATCH = 256;

/** Rows of a full batch: what {@linkcode MatchCursorOptions.scratch} must hold at least. */
export const FULL_BATCH = MAX_BATCH;
/** Rows a fused counter takes per call; the checkpoint runs between calls. */
const COUNT_BATCH = 1 << 20;

/**
 * Walks the rows matching a {@linkcode CompiledFilter} in ascending order,
 * batch by batch, touching only the candidate rows. Batches start small, so
 * a short page is cheap, and grow to {@linkcode MAX_BATCH}.
 * @example
 * ```ts
 * const cursor = new MatchCursor(compileFilter(bound, table), { from: 1000 });
 * const page = new Uint32Array(100);
 * const n = cursor.next(page);
 * ```
 */
export class MatchCursor {
  readonly #kernel: Kernel;
  readonly #checkpoint: (() => void) | undefined;
  readonly #ranges: Uint32Array | undefined;
  readonly #rows: Uint32Array | undefined;
  #k = 0;
  #row = 0;
  #i = 0;
  #batch = FIRST_BATCH;
  // Grows with the batch size, so that a short page never zero-fills a large buffer.
  #pending: Uint32Array = new Uint32Array(FIRST_BATCH);
  #pendingAt = 0;
  #pendingEnd = 0;

  /**
   * Starts a walk.
   * @param filter the compiled filter
   * @param options first row and checkpoint
   */
  constructor(filter: CompiledFilter, options: MatchCursorOptions = {}) {
    this.#kernel = filter.kernel;
    this.#checkpoint = options.checkpoint;
    if (options.scratch !== undefined) {
      if (options.scratch.length < MAX_BATCH) {
        throw new RangeError(
          `Cannot use a scratch buffer of ${options.scratch.length} rows: it needs ${MAX_BATCH}`,
        );
      }
      this.#pending = options.scratch;
      this.#batch = MAX_BATCH;
    }
    const candidates = filter.candidates;
    if (candidates === undefined) this.#ranges = Uint32Array.of(0, filter.length);
    else if (candidates.kind === "ranges") this.#ranges = candidates.ranges;
    else this.#rows = candidates.rows;
    if (options.from !== undefined && options.from > 0) this.seek(options.from);
  }

  /**
   * Writes the next matching rows to `out`.
   * @param out where to write rows
   * @param max most rows to write
   * @returns how many were written; fewer than `max` only when the walk is over
   */
  next(out: Uint32Array, max: number = out.length): number {
    let m = 0;
    while (m < max) {
      if (this.#pendingAt < this.#pendingEnd) {
        const take = Math.min(max - m, this.#pendingEnd - this.#pendingAt);
        out.set(this.#pending.subarray(this.#pendingAt, this.#pendingAt + take), m);
        this.#pendingAt += take;
        m += take;
        continue;
      }
      if (!this.#fill()) break;
    }
    return m;
  }

  /**
   * Skips to the first match at or after `row`; a cursor never moves back.
   * @param row the row to skip to
   */
  seek(row: number): void {
    while (this.#pendingAt < this.#pendingEnd && this.#pending[this.#pendingAt]! < row) {
      this.#pendingAt++;
    }
    if (this.#ranges !== undefined) {
      if (row > this.#row) this.#row = row;
      this.#k = Math.max(this.#k, firstRangeEndingAfter(this.#ranges, row));
    } else if (this.#rows !== undefined) {
      this.#i = Math.max(this.#i, lowerBound(this.#rows, row, this.#i));
    }
  }

  /** Runs one batch into the pending buffer; false when no rows are left. */
  #fill(): boolean {
    this.#pendingAt = 0;
    this.#pendingEnd = 0;
    const ranges = this.#ranges;
    if (ranges !== undefined) {
      while (this.#k < ranges.length) {
        const start = Math.max(this.#row, ranges[this.#k]!);
        const end = ranges[this.#k + 1]!;
        if (start >= end) {
          this.#k += 2;
          continue;
        }
        this.#checkpoint?.();
        const n = Math.min(this.#batch, end - start);
        this.#pendingEnd = this.#kernel(null, start, n, this.#buffer(n));
        this.#row = start + n;
        if (this.#row >= end) this.#k += 2;
        this.#grow();
        return true;
      }
      return false;
    }
    const rows = this.#rows!;
    if (this.#i >= rows.length) return false;
    this.#checkpoint?.();
    const n = Math.min(this.#batch, rows.length - this.#i);
    this.#pendingEnd = this.#kernel(rows.subarray(this.#i, this.#i + n), 0, n, this.#buffer(n));
    this.#i += n;
    this.#grow();
    return true;
  }

  #grow(): void {
    if (this.#batch < MAX_BATCH) this.#batch *= 2;
  }

  /** The pending buffer, large enough for a batch of `n` rows. */
  #buffer(n: number): Uint32Array {
    if (this.#pending.length < n) this.#pending = new Uint32Array(this.#batch);
    return this.#pending;
  }
}

/**
 * Counts the rows matching a compiled filter.
 * @param filter the compiled filter
 * @param options first row and checkpoint
 * @returns the number of matching rows
 */
export function countMatches(filter: CompiledFilter, options: MatchCursorOptions = {}): number {
  // A plain loop, without a cursor: counting keeps no rows.
  const from = options.from ?? 0;
  const checkpoint = options.checkpoint;
  const kernel = filter.kernel;
  const buffer = new Uint32Array(MAX_BATCH);
  // A fused counter writes no rows, so it takes long stretches at a time.
  const batch = filter.count === undefined ? MAX_BATCH : COUNT_BATCH;
  const count = filter.count ??
    ((sel: Uint32Array | null, start: number, n: number) => kernel(sel, start, n, buffer));
  const candidates = filter.candidates;
  let total = 0;
  if (candidates === undefined || candidates.kind === "ranges") {
    const ranges = candidates === undefined ? Uint32Array.of(0, filter.length) : candidates.ranges;
    for (let k = firstRangeEndingAfter(ranges, from); k < ranges.length; k += 2) {
      const end = ranges[k + 1]!;
      for (let s = Math.max(from, ranges[k]!); s < end; s += batch) {
        checkpoint?.();
        total += count(null, s, Math.min(batch, end - s));
      }
    }
    return total;
  }
  const rows = candidates.rows;
  for (let i = lowerBound(rows, from); i < rows.length; i += batch) {
    checkpoint?.();
    const n = Math.min(batch, rows.length - i);
    total += count(rows.subarray(i, i + n), 0, n);
  }
  return total;
}
