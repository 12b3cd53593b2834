import type { CodeArray, ColumnTable } from "../../columnar/mod.ts";
import type { BoundApply, Scalar } from "../../odata/mod.ts";
import { WaterError } from "../errors.ts";
import { sourceOf } from "./_expr_sources.ts";
import { BATCH, type Keyer, keyerOf } from "./_aggregate_keys.ts";
import { type Accumulator, grown, type Output, planOf } from "./_aggregate_accumulators.ts";
import { giveFloats, giveInts, takeInts } from "./_scratch_arrays.ts";
import {
  type GroupedColumn,
  type GroupedColumns,
  groupedRows,
  orderGroups,
} from "./grouped_columns.ts";

/** Options of {@linkcode aggregateRows}. */
export interface AggregateRowsOptions {
  /**
   * Most groups; one more stops the aggregation with `ERR_WATER_TOO_MANY_GROUPS`.
   * @default {100000}
   */
  maxGroups?: number;
  /**
   * Most distinct (value, group) pairs a `countdistinct` keeps; one more stops
   * the aggregation with `ERR_WATER_TOO_MANY_GROUPS` (a JavaScript Set holds
   * some 16.7 million at most, and each costs memory).
   * @default {8388608}
   */
  maxDistinct?: number;
}

/** The matching rows, ascending, batch by batch (a `MatchCursor`). */
export interface RowCursor {
  /**
   * Writes the next rows.
   * @param out where the rows go
   * @param max most rows to write
   * @returns how many were written; fewer than `max` only at the end
   */
  next(out: Uint32Array, max?: number): number;
}

/** Groups at most, unless the caller says otherwise. */
export const MAX_GROUPS = 100_000;

/** Distinct (value, group) pairs a `countdistinct` keeps at most, unless the caller says otherwise. */
export const MAX_DISTINCT = 8_388_608;

/** Largest key space that gets a dense array from keys to groups (4 MiB of Int32). */
const DENSE_SLOTS = 1 << 20;

/** Groups room is made for at first, at most: a dense key space smaller than this gets room for every key. */
const FIRST_CAPACITY = 4096;

// A batch's rows, keys and groups, used by one aggregation after another
// (an aggregation runs to its end without yielding): new ones for each
// would cost allocations and garbage collections that cost more than a
// small aggregation.
const ROWS = new Uint32Array(BATCH);
const GROUP_OF = new Int32Array(BATCH);
const KEYS: Int32Array[] = [];

/**
 * Groups and aggregates the rows a cursor gives, as a bound `$apply` says:
 * the engine behind `$apply` on the water collections. It reads the rows in
 * batches; each grouping property gives each row of a batch a key (the
 * dictionary code of its value, mapped to one key per distinct value, so
 * `year(ActivityStartDate)` costs a lookup; a hash for numbers and
 * expressions of several fields; an integer column of a small range, its
 * value less the least); the keys give the group, through a dense array when
 * the key space is small and a hash otherwise; and the aggregates add the
 * batch to per-group typed arrays: those of one value expression (sum,
 * average, min, max) read its values once and update in one loop, and
 * `$count` is the rows the grouping counted. No object is made per row.
 *
 * Sums and averages are compensated (Neumaier's variant of Kahan
 * summation): the error of a sum of n values is at most about
 * 2ε|sum| + nε²Σ|x| (ε = 2⁻⁵³), independent of n to first order; an average
 * adds one rounding. Null values (and `NaN`) are left out of every aggregate
 * but `$count`; a `sum`, `average`, `min` or `max` of no values is null and a
 * `countdistinct` of none is 0. `aggregate(...)` without `groupby` answers one
 * row even for no rows.
 * @param table the rows' columns, by the names the apply was bound with
 * @param cursor the matching rows, ascending
 * @param apply the bound `$apply` (aggregated)
 * @param options the group limit
 * @returns one row per group, in the order the groups were met: the
 * grouping properties' values, then the aggregates
 * @throws {WaterError} `ERR_WATER_TOO_MANY_GROUPS` above `maxGroups`
 * @example
 * ```ts
 * const apply = bindApply(parseApply("groupby((LocationId), aggregate(ResultValue with average as M))"), schema);
 * const rows = aggregateRows(table, new MatchCursor(compileFilter(apply.filter, table)), apply);
 * ```
 */
export function aggregateRows(
  table: ColumnTable,
  cursor: RowCursor,
  apply: BoundApply,
  options: AggregateRowsOptions = {},
): Scalar[][] {
  return groupedRows(aggregateColumns(table, cursor, apply, options));
}

/**
 * What {@linkcode aggregateRows} computes, as columns (see `GroupedColumns`):
 * no array or boxed number per group.
 * @param table the rows' columns, by the names the apply was bound with
 * @param cursor the matching rows, ascending
 * @param apply the bound `$apply` (aggregated)
 * @param options the group limit
 * @returns the groups: the grouping properties' columns, then the aggregates'
 * @throws {WaterError} `ERR_WATER_TOO_MANY_GROUPS` above `maxGroups`
 */
export function aggregateColumns(
  table: ColumnTable,
  cursor: RowCursor,
  apply: BoundApply,
  options: AggregateRowsOptions = {},
): GroupedColumns {
  const maxGroups = options.maxGroups ?? MAX_GROUPS;
  const keyers = apply.groups.map((group) => keyerOf(sourceOf(group.value, table)));
  const maxDistinct = options.maxDistinct ?? MAX_DISTINCT;
  const plan = planOf(apply.aggregates, table, maxGroups, maxDistinct);
  const accumulators = plan.accumulators;
  const groups = new GroupTable(keyers, maxGroups, accumulators);
  try {
    if (keyers.length === 0) groups.only();
    aggregateBatches(cursor, keyers, groups, accumulators);
    return groups.columns(keyers, plan.outputs);
  } finally {
    // The result is a copy: the per-group arrays serve the next aggregation.
    groups.release();
  }
}

/** Reads the rows batch by batch, giving each its group and adding it to the accumulators. */
function aggregateBatches(
  cursor: RowCursor,
  keyers: readonly Keyer[],
  groups: GroupTable,
  accumulators: readonly Accumulator[],
): void {
  const rows = ROWS;
  const groupOf = GROUP_OF;
  while (KEYS.length < keyers.length) KEYS.push(new Int32Array(BATCH));
  const keys = KEYS.slice(0, keyers.length);
  const direct = keyers.length === 1 ? keyers[0]!.direct() : undefined;
  if (direct !== undefined && groups.dense) {
    // One key of a row-level dictionary: its codes give the groups directly.
    const byCode = takeInts(direct.codeCount, -1);
    for (;;) {
      const n = cursor.next(rows, BATCH);
      if (n > 0) {
        groups.assignCodes(direct.codes, direct.canonical, byCode, rows, n, groupOf);
        for (let a = 0; a < accumulators.length; a++) accumulators[a]!.add(rows, n, groupOf);
      }
      if (n < BATCH) break;
    }
    giveInts(byCode);
    return;
  }
  for (;;) {
    const n = cursor.next(rows, BATCH);
    if (n > 0) {
      for (let k = 0; k < keyers.length; k++) keyers[k]!.fill(rows, n, keys[k]!);
      groups.assign(keys, n, groupOf);
      for (let a = 0; a < accumulators.length; a++) accumulators[a]!.add(rows, n, groupOf);
    }
    if (n < BATCH) break;
  }
}

/**
 * The groups met so far: from the keys of a row to its group, and back; and
 * the rows of each group (what `$count` answers).
 */
class GroupTable {
  readonly #maxGroups: number;
  readonly #accumulators: readonly Accumulator[];
  readonly #strides: number[];
  readonly #dense: Int32Array | undefined;
  readonly #hash: Map<number, number> | undefined;
  readonly #text: Map<string, number> | undefined;
  #keys: Int32Array[];
  #capacity = 0;
  /** Rows of each group. */
  sizes = new Float64Array(0);
  count = 0;

  constructor(keyers: readonly Keyer[], maxGroups: number, accumulators: readonly Accumulator[]) {
    this.#maxGroups = maxGroups;
    this.#accumulators = accumulators;
    // A key space of the sizes of fixed keyers; an open keyer never gives more keys than there are groups.
    this.#strides = [];
    let space = 1;
    for (const keyer of keyers) {
      this.#strides.push(space);
      space *= keyer.fixed ? Math.max(1, keyer.size) : maxGroups + 2;
    }
    const fixed = keyers.every((keyer) => keyer.fixed);
    if (fixed && space <= DENSE_SLOTS) this.#dense = takeInts(space, -1);
    else if (space <= Number.MAX_SAFE_INTEGER) this.#hash = new Map();
    else this.#text = new Map();
    this.#keys = keyers.map(() => new Int32Array(0));
    // Room for every key of a small dense space at once, rather than growing to it.
    const first = this.#dense === undefined ? 256 : Math.min(space, FIRST_CAPACITY);
    this.#reserve(Math.max(1, Math.min(first, maxGroups)));
  }

  /** Whether keys find their group through a dense array. */
  get dense(): boolean {
    return this.#dense !== undefined;
  }

  /**
   * Gives each row of a batch its group, for one key read from a dictionary
   * column's codes: a code's group is found once, then kept in `byCode`.
   */
  assignCodes(
    codes: CodeArray,
    canonical: Int32Array | undefined,
    byCode: Int32Array,
    rows: Uint32Array,
    n: number,
    out: Int32Array,
  ): void {
    const dense = this.#dense!;
    let sizes = this.sizes;
    for (let i = 0; i < n; i++) {
      const code = codes[rows[i]!]!;
      let g = byCode[code]!;
      if (g < 0) {
        const key = canonical === undefined ? code : canonical[code]!;
        g = dense[key]!;
        if (g < 0) {
          g = this.#add1(key, 0);
          dense[key] = g;
          sizes = this.sizes;
        }
        byCode[code] = g;
      }
      sizes[g]!++;
      out[i] = g;
    }
  }

  /** Gives back the per-group arrays, the accumulators' too (see _scratch_arrays.ts). */
  release(): void {
    for (const keys of this.#keys) giveInts(keys);
    giveFloats(this.sizes);
    if (this.#dense !== undefined) giveInts(this.#dense);
    for (const accumulator of this.#accumulators) accumulator.release();
  }

  /** Makes the one group of an aggregation without grouping properties. */
  only(): void {
    this.#dense![0] = this.#add([], 0);
  }

  /** Gives each row of a batch its group (made when new), and counts the rows of each. */
  assign(keys: readonly Int32Array[], n: number, out: Int32Array): void {
    const dense = this.#dense;
    if (dense !== undefined && keys.length <= 2) {
      if (keys.length === 0) this.#assignNone(n, out);
      else if (keys.length === 1) this.#assignOne(dense, keys[0]!, n, out);
      else this.#assignTwo(dense, keys[0]!, keys[1]!, n, out);
      return;
    }
    if (this.#text !== undefined) {
      for (let i = 0; i < n; i++) out[i] = this.#textGroup(keys, i);
    } else {
      this.#assignSlots(keys, n, out);
    }
    const sizes = this.sizes;
    for (let i = 0; i < n; i++) sizes[out[i]!]!++;
  }

  #assignNone(n: number, out: Int32Array): void {
    out.fill(0, 0, n);
    this.sizes[0]! += n;
  }

  // The one- and two-key paths count a run of rows of one key (a
  // location's rows come together) in a register, and look its group up
  // once: a group's size is not stored and loaded back a row at a time.

  #assignOne(dense: Int32Array, keys: Int32Array, n: number, out: Int32Array): void {
    let last = -1;
    let g = -1;
    let run = 0;
    for (let i = 0; i < n; i++) {
      const slot = keys[i]!;
      if (slot !== last) {
        if (run > 0) this.sizes[g]! += run;
        run = 0;
        last = slot;
        g = dense[slot]!;
        if (g < 0) {
          g = this.#add1(slot, 0);
          dense[slot] = g;
        }
      }
      run++;
      out[i] = g;
    }
    if (run > 0) this.sizes[g]! += run;
  }

  #assignTwo(
    dense: Int32Array,
    first: Int32Array,
    second: Int32Array,
    n: number,
    out: Int32Array,
  ): void {
    const stride = this.#strides[1]!;
    let last = -1;
    let g = -1;
    let run = 0;
    for (let i = 0; i < n; i++) {
      const slot = first[i]! + second[i]! * stride;
      if (slot !== last) {
        if (run > 0) this.sizes[g]! += run;
        run = 0;
        last = slot;
        g = dense[slot]!;
        if (g < 0) {
          g = this.#add1(first[i]!, second[i]!);
          dense[slot] = g;
        }
      }
      run++;
      out[i] = g;
    }
    if (run > 0) this.sizes[g]! += run;
  }

  #assignSlots(keys: readonly Int32Array[], n: number, out: Int32Array): void {
    const strides = this.#strides;
    const width = keys.length;
    const dense = this.#dense;
    const hash = this.#hash;
    for (let i = 0; i < n; i++) {
      let slot = 0;
      for (let k = 0; k < width; k++) slot += keys[k]![i]! * strides[k]!;
      let g = dense === undefined ? (hash!.get(slot) ?? -1) : dense[slot]!;
      if (g < 0) {
        g = this.#add(keys, i);
        if (dense === undefined) hash!.set(slot, g);
        else dense[slot] = g;
      }
      out[i] = g;
    }
  }

  #textGroup(keys: readonly Int32Array[], i: number): number {
    let text = "";
    for (let k = 0; k < keys.length; k++) text += (k === 0 ? "" : ",") + keys[k]![i]!;
    let g = this.#text!.get(text);
    if (g === undefined) {
      g = this.#add(keys, i);
      this.#text!.set(text, g);
    }
    return g;
  }

  #next(): number {
    if (this.count === this.#maxGroups) {
      throw new WaterError(
        "ERR_WATER_TOO_MANY_GROUPS",
        `Cannot group into more than ${this.#maxGroups} groups: filter the rows first, or group by fewer or coarser properties (a year rather than a date, say)`,
        { target: "$apply" },
      );
    }
    const g = this.count++;
    if (g >= this.#capacity) this.#reserve(this.#capacity * 2);
    return g;
  }

  /** A new group of one or two keys. */
  #add1(first: number, second: number): number {
    const g = this.#next();
    this.#keys[0]![g] = first;
    if (this.#keys.length > 1) this.#keys[1]![g] = second;
    return g;
  }

  #add(keys: readonly Int32Array[], i: number): number {
    const g = this.#next();
    for (let k = 0; k < keys.length; k++) this.#keys[k]![g] = keys[k]![i]!;
    return g;
  }

  #reserve(capacity: number): void {
    const keys: Int32Array[] = [];
    for (const old of this.#keys) {
      const next = takeInts(capacity);
      next.set(old);
      giveInts(old);
      keys.push(next);
    }
    this.#keys = keys;
    this.sizes = grown(this.sizes, capacity);
    this.#capacity = capacity;
    for (const accumulator of this.#accumulators) accumulator.grow(capacity);
  }

  /**
   * The groups as columns (one buffer for all of them): the keys' codes and
   * values, then the outputs, numbers where every result is a number or null.
   */
  columns(keyers: readonly Keyer[], outputs: readonly Output[]): GroupedColumns {
    const count = this.count;
    const buffer = new ArrayBuffer(count * (8 * outputs.length + 4 * keyers.length));
    let offset = 0;
    const numbers = () => {
      const values = new Float64Array(buffer, offset, count);
      offset += 8 * count;
      return values;
    };
    const results: GroupedColumn[] = [];
    for (const output of outputs) {
      if (output.stats === undefined && output.accumulator === undefined) {
        const values = numbers();
        values.set(this.sizes.subarray(0, count));
        results.push({ kind: "numbers", values });
        continue;
      }
      const values = numbers();
      let plain = true;
      if (output.stats !== undefined) plain = output.stats.results(output.kind, count, values);
      else {
        for (let g = 0; g < count; g++) {
          const v = output.accumulator!.result(g);
          if (typeof v === "number" && v === v) values[g] = v;
          else if (v === null) values[g] = Number.NaN;
          else plain = false;
        }
      }
      if (plain) results.push({ kind: "numbers", values });
      else {
        const cells = new Array<Scalar>(count);
        for (let g = 0; g < count; g++) {
          cells[g] = output.stats === undefined
            ? output.accumulator!.result(g)
            : output.stats.result(output.kind, g);
        }
        results.push({ kind: "values", values: cells });
      }
    }
    const keys: GroupedColumn[] = keyers.map((keyer, k) => {
      const codes = new Int32Array(buffer, offset, count);
      offset += 4 * count;
      codes.set(this.#keys[k]!.subarray(0, count));
      return { kind: "codes", codes, values: keyer.values() };
    });
    return {
      count,
      keys: keys.length,
      columns: [...keys, ...results],
      order: orderGroups(count, keys),
    };
  }
}
