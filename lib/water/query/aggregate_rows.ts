import type { ColumnTable } from "../../columnar/mod.ts";
import type { BoundAggregate, BoundApply, Scalar } from "../../odata/mod.ts";
import { compareResultValues } from "../../odata/_internal.ts";
import { WaterError } from "../errors.ts";
import { type ExprSource, sourceOf } from "./_expr_sources.ts";

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

/** Rows per batch: the keys, groups and values of a batch are typed arrays of this length. */
const BATCH = 4096;
/** Largest key space that gets a dense array from keys to groups (4 MiB of Int32). */
const DENSE_SLOTS = 1 << 20;

/**
 * Groups and aggregates the rows a cursor gives, as a bound `$apply` says:
 * the engine behind `$apply` on the water collections. It reads the rows in
 * batches; each grouping property gives each row of a batch a key (the
 * dictionary code of its value, mapped to one key per distinct value, so
 * `year(ActivityStartDate)` costs a lookup; a hash for numbers and
 * expressions of several fields); the keys give the group, through a dense
 * array when the key space is small and a hash otherwise; and each aggregate
 * adds the batch to per-group typed arrays. No object is made per row.
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
  const maxGroups = options.maxGroups ?? MAX_GROUPS;
  const keyers = apply.groups.map((group) => keyerOf(sourceOf(group.value, table)));
  const maxDistinct = options.maxDistinct ?? MAX_DISTINCT;
  const accumulators = apply.aggregates.map((a) => accumulatorOf(a, table, maxGroups, maxDistinct));
  const groups = new GroupTable(keyers, maxGroups, (capacity) => {
    for (const accumulator of accumulators) accumulator.grow(capacity);
  });
  if (keyers.length === 0) groups.only();
  const rows = new Uint32Array(BATCH);
  const keys = keyers.map(() => new Int32Array(BATCH));
  const groupOf = new Int32Array(BATCH);
  for (;;) {
    const n = cursor.next(rows, BATCH);
    if (n > 0) {
      keyers.forEach((keyer, k) => keyer.fill(rows, n, keys[k]!));
      groups.assign(keys, n, groupOf);
      for (const accumulator of accumulators) accumulator.add(rows, n, groupOf);
    }
    if (n < BATCH) break;
  }
  const out: Scalar[][] = [];
  for (let g = 0; g < groups.count; g++) {
    const row: Scalar[] = keyers.map((keyer, k) => keyer.value(groups.keyOf(k, g)));
    for (const accumulator of accumulators) row.push(accumulator.result(g));
    out.push(row);
  }
  return out;
}

/** Gives each row of a batch the key of its value: one key per distinct value. */
interface Keyer {
  fill(rows: Uint32Array, n: number, out: Int32Array): void;
  /** Keys given so far; for a coded source, every key it can give. */
  readonly size: number;
  /** Whether `size` is fixed before the first row. */
  readonly fixed: boolean;
  value(key: number): Scalar;
}

function keyerOf(source: ExprSource): Keyer {
  if (source.kind === "coded") {
    const ids = new Map<Scalar, number>();
    const canonical = new Int32Array(source.values.length);
    const distinct: Scalar[] = [];
    source.values.forEach((value, code) => {
      let id = ids.get(value);
      if (id === undefined) {
        id = distinct.length;
        ids.set(value, id);
        distinct.push(value);
      }
      canonical[code] = id;
    });
    const codes = source.codes;
    return {
      fill(rows, n, out) {
        codes.fill(rows, n, out);
        for (let i = 0; i < n; i++) out[i] = canonical[out[i]!]!;
      },
      size: distinct.length,
      fixed: true,
      value: (key) => distinct[key]!,
    };
  }
  const ids = new Map<Scalar, number>();
  const distinct: Scalar[] = [];
  const idOf = (value: Scalar): number => {
    let id = ids.get(value);
    if (id === undefined) {
      id = distinct.length;
      ids.set(value, id);
      distinct.push(value);
    }
    return id;
  };
  const fill = source.kind === "numbers"
    ? (rows: Uint32Array, n: number, out: Int32Array): void => {
      const values = source.values;
      for (let i = 0; i < n; i++) {
        const value = values[rows[i]!]!;
        out[i] = idOf(Number.isNaN(value) ? null : value);
      }
    }
    : (rows: Uint32Array, n: number, out: Int32Array): void => {
      for (let i = 0; i < n; i++) out[i] = idOf(source.read(rows[i]!));
    };
  return {
    fill,
    get size() {
      return distinct.length;
    },
    fixed: false,
    value: (key) => distinct[key]!,
  };
}

/** The groups met so far: from the keys of a row to its group, and back. */
class GroupTable {
  readonly #maxGroups: number;
  readonly #grow: (capacity: number) => void;
  readonly #strides: number[];
  readonly #dense: Int32Array | undefined;
  readonly #hash: Map<number, number> | undefined;
  readonly #text: Map<string, number> | undefined;
  #keys: Int32Array[];
  #capacity = 0;
  count = 0;

  constructor(keyers: readonly Keyer[], maxGroups: number, grow: (capacity: number) => void) {
    this.#maxGroups = maxGroups;
    this.#grow = grow;
    // A key space of the sizes of fixed keyers; an open keyer never gives more keys than there are groups.
    this.#strides = [];
    let space = 1;
    for (const keyer of keyers) {
      this.#strides.push(space);
      space *= keyer.fixed ? Math.max(1, keyer.size) : maxGroups + 2;
    }
    const fixed = keyers.every((keyer) => keyer.fixed);
    if (fixed && space <= DENSE_SLOTS) this.#dense = new Int32Array(space).fill(-1);
    else if (space <= Number.MAX_SAFE_INTEGER) this.#hash = new Map();
    else this.#text = new Map();
    this.#keys = keyers.map(() => new Int32Array(0));
    this.#reserve(16);
  }

  /** Makes the one group of an aggregation without grouping properties. */
  only(): void {
    this.#dense![0] = this.#add([], 0);
  }

  assign(keys: readonly Int32Array[], n: number, out: Int32Array): void {
    const strides = this.#strides;
    const width = keys.length;
    const dense = this.#dense;
    const hash = this.#hash;
    if (this.#text !== undefined) {
      for (let i = 0; i < n; i++) out[i] = this.#textGroup(keys, i);
      return;
    }
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
    const text = keys.map((k) => k[i]!).join(",");
    let g = this.#text!.get(text);
    if (g === undefined) {
      g = this.#add(keys, i);
      this.#text!.set(text, g);
    }
    return g;
  }

  #add(keys: readonly Int32Array[], i: number): number {
    if (this.count === this.#maxGroups) {
      throw new WaterError(
        "ERR_WATER_TOO_MANY_GROUPS",
        `Cannot group into more than ${this.#maxGroups} groups: filter the rows first, or group by fewer or coarser properties (a year rather than a date, say)`,
        { target: "$apply" },
      );
    }
    const g = this.count++;
    if (g >= this.#capacity) this.#reserve(this.#capacity * 2);
    keys.forEach((key, k) => {
      this.#keys[k]![g] = key[i]!;
    });
    return g;
  }

  #reserve(capacity: number): void {
    this.#keys = this.#keys.map((old) => {
      const grown = new Int32Array(capacity);
      grown.set(old);
      return grown;
    });
    this.#capacity = capacity;
    this.#grow(capacity);
  }

  keyOf(k: number, g: number): number {
    return this.#keys[k]![g]!;
  }
}

/** Per-group state of one aggregate, in typed arrays that grow with the groups. */
interface Accumulator {
  grow(capacity: number): void;
  add(rows: Uint32Array, n: number, groups: Int32Array): void;
  result(g: number): Scalar;
}

function grown(old: Float64Array, capacity: number, fill = 0): Float64Array<ArrayBuffer> {
  const next = new Float64Array(capacity);
  if (fill !== 0) next.fill(fill, old.length);
  next.set(old);
  return next;
}

function accumulatorOf(
  aggregate: BoundAggregate,
  table: ColumnTable,
  maxGroups: number,
  maxDistinct: number,
): Accumulator {
  if (aggregate.kind === "count") return new CountAccumulator();
  const source = sourceOf(aggregate.value, table);
  switch (aggregate.method) {
    case "sum":
    case "average":
      return new SumAccumulator(numbersOf(source), aggregate.method === "average");
    case "min":
    case "max": {
      const numeric = aggregate.value.type === "number" || aggregate.value.type === "integer";
      if (numeric || source.kind !== "coded") {
        return new ExtremeAccumulator(numbersOf(source), aggregate.method === "max");
      }
      return new RankAccumulator(source, aggregate.method === "max");
    }
    case "countdistinct":
      return new DistinctAccumulator(keyerOf(source), maxGroups, maxDistinct);
  }
}

/** Writes the numbers of a batch of rows (`NaN` for null). */
type NumberBatch = (rows: Uint32Array, n: number, out: Float64Array) => void;

function numbersOf(source: ExprSource): NumberBatch {
  switch (source.kind) {
    case "numbers": {
      const values = source.values;
      return (rows, n, out) => {
        for (let i = 0; i < n; i++) out[i] = values[rows[i]!]!;
      };
    }
    case "coded": {
      const byCode = Float64Array.from(
        source.values,
        (value) => (typeof value === "number" ? value : Number.NaN),
      );
      const codes = new Int32Array(BATCH);
      return (rows, n, out) => {
        source.codes.fill(rows, n, codes);
        for (let i = 0; i < n; i++) out[i] = byCode[codes[i]!]!;
      };
    }
    case "dynamic":
      return (rows, n, out) => {
        for (let i = 0; i < n; i++) {
          const value = source.read(rows[i]!);
          out[i] = typeof value === "number" ? value : Number.NaN;
        }
      };
  }
}

class CountAccumulator implements Accumulator {
  #counts = new Float64Array(0);

  grow(capacity: number): void {
    this.#counts = grown(this.#counts, capacity);
  }

  add(_rows: Uint32Array, n: number, groups: Int32Array): void {
    const counts = this.#counts;
    for (let i = 0; i < n; i++) counts[groups[i]!]!++;
  }

  result(g: number): Scalar {
    return this.#counts[g]!;
  }
}

/** Sums (and averages) with Neumaier's compensation: a running sum and the error it dropped. */
class SumAccumulator implements Accumulator {
  readonly #read: NumberBatch;
  readonly #average: boolean;
  readonly #values = new Float64Array(BATCH);
  #sums = new Float64Array(0);
  #errors = new Float64Array(0);
  #counts = new Float64Array(0);

  constructor(read: NumberBatch, average: boolean) {
    this.#read = read;
    this.#average = average;
  }

  grow(capacity: number): void {
    this.#sums = grown(this.#sums, capacity);
    this.#errors = grown(this.#errors, capacity);
    this.#counts = grown(this.#counts, capacity);
  }

  add(rows: Uint32Array, n: number, groups: Int32Array): void {
    const values = this.#values;
    this.#read(rows, n, values);
    const sums = this.#sums;
    const errors = this.#errors;
    const counts = this.#counts;
    for (let i = 0; i < n; i++) {
      const x = values[i]!;
      if (x !== x) continue;
      const g = groups[i]!;
      const s = sums[g]!;
      const t = s + x;
      errors[g]! += Math.abs(s) >= Math.abs(x) ? (s - t) + x : (x - t) + s;
      sums[g] = t;
      counts[g]!++;
    }
  }

  result(g: number): Scalar {
    const n = this.#counts[g]!;
    if (n === 0) return null;
    const sum = this.#sums[g]! + this.#errors[g]!;
    return this.#average ? sum / n : sum;
  }
}

/** The least or greatest number of each group. */
class ExtremeAccumulator implements Accumulator {
  readonly #read: NumberBatch;
  readonly #max: boolean;
  readonly #values = new Float64Array(BATCH);
  #best = new Float64Array(0);

  constructor(read: NumberBatch, max: boolean) {
    this.#read = read;
    this.#max = max;
  }

  grow(capacity: number): void {
    this.#best = grown(this.#best, capacity, this.#max ? -Infinity : Infinity);
  }

  add(rows: Uint32Array, n: number, groups: Int32Array): void {
    const values = this.#values;
    this.#read(rows, n, values);
    const best = this.#best;
    if (this.#max) {
      for (let i = 0; i < n; i++) {
        const x = values[i]!;
        if (x > best[groups[i]!]!) best[groups[i]!] = x;
      }
    } else {
      for (let i = 0; i < n; i++) {
        const x = values[i]!;
        if (x < best[groups[i]!]!) best[groups[i]!] = x;
      }
    }
  }

  result(g: number): Scalar {
    const best = this.#best[g]!;
    return Number.isFinite(best) ? best : null;
  }
}

/** The least or greatest text or date of each group, by the rank of its code. */
class RankAccumulator implements Accumulator {
  readonly #source: ExprSource & { kind: "coded" };
  readonly #max: boolean;
  readonly #rankOf: Int32Array;
  readonly #sorted: Scalar[];
  readonly #codes = new Int32Array(BATCH);
  #best = new Int32Array(0);

  constructor(source: ExprSource & { kind: "coded" }, max: boolean) {
    this.#source = source;
    this.#max = max;
    this.#sorted = [...new Set(source.values.filter((v) => v !== null))].sort(compareResultValues);
    const rank = new Map(this.#sorted.map((value, r) => [value, r]));
    this.#rankOf = Int32Array.from(source.values, (value) => rank.get(value) ?? -1);
  }

  grow(capacity: number): void {
    const next = new Int32Array(capacity).fill(-1);
    next.set(this.#best);
    this.#best = next;
  }

  add(rows: Uint32Array, n: number, groups: Int32Array): void {
    const codes = this.#codes;
    this.#source.codes.fill(rows, n, codes);
    const best = this.#best;
    const rankOf = this.#rankOf;
    for (let i = 0; i < n; i++) {
      const r = rankOf[codes[i]!]!;
      if (r < 0) continue;
      const g = groups[i]!;
      const b = best[g]!;
      if (b < 0 || (this.#max ? r > b : r < b)) best[g] = r;
    }
  }

  result(g: number): Scalar {
    const best = this.#best[g]!;
    return best < 0 ? null : this.#sorted[best]!;
  }
}

/** The distinct non-null values of each group: a set of (value key, group) pairs. */
class DistinctAccumulator implements Accumulator {
  readonly #keyer: Keyer;
  readonly #radix: number;
  readonly #keys = new Int32Array(BATCH);
  readonly #seen = new Set<number>();
  readonly #maxDistinct: number;
  #counts = new Float64Array(0);
  #nullKey = -1;

  constructor(keyer: Keyer, maxGroups: number, maxDistinct: number) {
    this.#keyer = keyer;
    this.#radix = maxGroups + 1;
    this.#maxDistinct = maxDistinct;
  }

  grow(capacity: number): void {
    this.#counts = grown(this.#counts, capacity);
  }

  add(rows: Uint32Array, n: number, groups: Int32Array): void {
    const keys = this.#keys;
    this.#keyer.fill(rows, n, keys);
    const seen = this.#seen;
    const counts = this.#counts;
    for (let i = 0; i < n; i++) {
      const key = keys[i]!;
      if (key === this.#nullKey) continue;
      if (this.#nullKey === -1 && this.#keyer.value(key) === null) {
        this.#nullKey = key;
        continue;
      }
      const pair = key * this.#radix + groups[i]!;
      if (!seen.has(pair)) {
        if (seen.size === this.#maxDistinct) throw tooManyDistinct(this.#maxDistinct);
        seen.add(pair);
        counts[groups[i]!]!++;
      }
    }
  }

  result(g: number): Scalar {
    return this.#counts[g]!;
  }
}

function tooManyDistinct(max: number): WaterError {
  return new WaterError(
    "ERR_WATER_TOO_MANY_GROUPS",
    `Cannot count more than ${max} distinct values (over all groups): filter the rows first, or count the distinct values of a coarser property`,
  );
}
