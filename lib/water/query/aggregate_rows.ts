import type { CodeArray, ColumnTable } from "../../columnar/mod.ts";
import type { BoundAggregate, BoundApply, Scalar } from "../../odata/mod.ts";
import { compareResultValues } from "../../odata/_internal.ts";
import { WaterError } from "../errors.ts";
import {
  type CodedSource,
  type CodeReader,
  type DynamicSource,
  type ExprSource,
  type NumbersSource,
  sourceOf,
} from "./_expr_sources.ts";

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
  const maxGroups = options.maxGroups ?? MAX_GROUPS;
  const keyers = apply.groups.map((group) => keyerOf(sourceOf(group.value, table)));
  const maxDistinct = options.maxDistinct ?? MAX_DISTINCT;
  const plan = planOf(apply.aggregates, table, maxGroups, maxDistinct);
  const accumulators = plan.accumulators;
  const groups = new GroupTable(keyers, maxGroups, accumulators);
  if (keyers.length === 0) groups.only();
  const rows = new Uint32Array(BATCH);
  const keys = keyers.map(() => new Int32Array(BATCH));
  const groupOf = new Int32Array(BATCH);
  const direct = keyers.length === 1 ? keyers[0]!.direct() : undefined;
  if (direct !== undefined && groups.dense) {
    // One key of a row-level dictionary: its codes give the groups directly.
    const byCode = new Int32Array(direct.codeCount).fill(-1);
    for (;;) {
      const n = cursor.next(rows, BATCH);
      if (n > 0) {
        groups.assignCodes(direct.codes, direct.canonical, byCode, rows, n, groupOf);
        for (let a = 0; a < accumulators.length; a++) accumulators[a]!.add(rows, n, groupOf);
      }
      if (n < BATCH) break;
    }
    return groups.rows(keyers, plan.outputs);
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
  return groups.rows(keyers, plan.outputs);
}

/** Gives each row of a batch the key of its value: one key per distinct value. */
interface Keyer {
  fill(rows: Uint32Array, n: number, out: Int32Array): void;
  /** Keys given so far; for a fixed keyer, every key it can give. */
  readonly size: number;
  /** Whether `size` is fixed before the first row. */
  readonly fixed: boolean;
  value(key: number): Scalar;
  /** The row-level codes and the key of each, when the keys come from a dictionary column. */
  direct(): DirectCodes | undefined;
}

/** A row-level dictionary column's codes, and the key of each code (undefined: the code). */
interface DirectCodes {
  readonly codes: CodeArray;
  readonly codeCount: number;
  readonly canonical: Int32Array | undefined;
}

function keyerOf(source: ExprSource): Keyer {
  switch (source.kind) {
    case "coded":
      return new CodedKeyer(source);
    case "numbers": {
      const range = integerRangeOf(source.values);
      return range === undefined
        ? new OpenKeyer(source, undefined)
        : new RangeKeyer(source.values, range);
    }
    case "dynamic":
      return new OpenKeyer(undefined, source);
  }
}

/** The distinct values of a coded source's codes, and the key of each code (undefined: the code). */
interface CodeKeys {
  readonly canonical: Int32Array | undefined;
  readonly distinct: readonly Scalar[];
}

/** Keys by the values array of a source (a dictionary's, the same for every query of a store). */
const keysByValues = new WeakMap<readonly Scalar[], CodeKeys>();

function keysOf(values: readonly Scalar[]): CodeKeys {
  const ids = new Map<Scalar, number>();
  const canonical = new Int32Array(values.length);
  const distinct: Scalar[] = [];
  for (let code = 0; code < values.length; code++) {
    const value = values[code]!;
    let id = ids.get(value);
    if (id === undefined) {
      id = distinct.length;
      ids.set(value, id);
      distinct.push(value);
    }
    canonical[code] = id;
  }
  return { canonical: distinct.length === values.length ? undefined : canonical, distinct };
}

/** A coded source's keys: its codes, mapped to one key per distinct value when values repeat. */
class CodedKeyer implements Keyer {
  readonly #codes: CodeReader;
  readonly #rowCodes: CodeArray | undefined;
  readonly #codeCount: number;
  /** From code to key; undefined when each code has its own value (the key is the code). */
  readonly #canonical: Int32Array | undefined;
  readonly #distinct: readonly Scalar[];
  readonly size: number;
  readonly fixed = true;

  constructor(source: CodedSource) {
    let keys = keysByValues.get(source.values);
    if (keys === undefined) {
      keys = keysOf(source.values);
      keysByValues.set(source.values, keys);
    }
    this.#codes = source.codes;
    this.#rowCodes = source.rowCodes;
    this.#codeCount = source.values.length;
    this.#canonical = keys.canonical;
    this.#distinct = keys.distinct;
    this.size = keys.distinct.length;
  }

  direct(): DirectCodes | undefined {
    if (this.#rowCodes === undefined) return undefined;
    return { codes: this.#rowCodes, codeCount: this.#codeCount, canonical: this.#canonical };
  }

  fill(rows: Uint32Array, n: number, out: Int32Array): void {
    this.#codes.fill(rows, n, out);
    const canonical = this.#canonical;
    if (canonical !== undefined) { for (let i = 0; i < n; i++) out[i] = canonical[out[i]!]!; }
  }

  value(key: number): Scalar {
    return this.#distinct[key]!;
  }
}

/** Widest range of integers a number column's keys are offsets into (then a dense group array). */
const RANGE_SPAN = 1 << 16;
const ranges = new WeakMap<Float64Array, { low: number; span: number } | null>();

/**
 * The least value and the span of a number column whose values are all
 * integers (or null) within {@linkcode RANGE_SPAN}, found once per column;
 * undefined for any other.
 */
function integerRangeOf(values: Float64Array): { low: number; span: number } | undefined {
  let range = ranges.get(values);
  if (range === undefined) {
    let low = Infinity;
    let high = -Infinity;
    let integers = true;
    for (let i = 0; i < values.length; i++) {
      const x = values[i]!;
      if (x !== x) continue;
      if (!Number.isInteger(x) || Object.is(x, -0)) {
        integers = false;
        break;
      }
      if (x < low) low = x;
      if (x > high) high = x;
    }
    range = integers && high - low < RANGE_SPAN
      ? { low: low === Infinity ? 0 : low, span: low === Infinity ? 0 : high - low + 1 }
      : null;
    ranges.set(values, range);
  }
  return range ?? undefined;
}

/** An integer column's keys: the value less the least, and one more key for null. */
class RangeKeyer implements Keyer {
  readonly #values: Float64Array;
  readonly #low: number;
  readonly #span: number;
  readonly size: number;
  readonly fixed = true;

  constructor(values: Float64Array, range: { low: number; span: number }) {
    this.#values = values;
    this.#low = range.low;
    this.#span = range.span;
    this.size = range.span + 1;
  }

  fill(rows: Uint32Array, n: number, out: Int32Array): void {
    const values = this.#values;
    const low = this.#low;
    const span = this.#span;
    for (let i = 0; i < n; i++) {
      const x = values[rows[i]!]!;
      out[i] = x === x ? x - low : span;
    }
  }

  direct(): DirectCodes | undefined {
    return undefined;
  }

  value(key: number): Scalar {
    return key === this.#span ? null : key + this.#low;
  }
}

/** Keys given as values are met, through a hash. */
class OpenKeyer implements Keyer {
  readonly #numbers: NumbersSource | undefined;
  readonly #dynamic: DynamicSource | undefined;
  readonly #ids = new Map<Scalar, number>();
  readonly #distinct: Scalar[] = [];
  readonly fixed = false;

  constructor(numbers: NumbersSource | undefined, dynamic: DynamicSource | undefined) {
    this.#numbers = numbers;
    this.#dynamic = dynamic;
  }

  get size(): number {
    return this.#distinct.length;
  }

  #idOf(value: Scalar): number {
    let id = this.#ids.get(value);
    if (id === undefined) {
      id = this.#distinct.length;
      this.#ids.set(value, id);
      this.#distinct.push(value);
    }
    return id;
  }

  fill(rows: Uint32Array, n: number, out: Int32Array): void {
    if (this.#numbers !== undefined) {
      const values = this.#numbers.values;
      for (let i = 0; i < n; i++) {
        const value = values[rows[i]!]!;
        out[i] = this.#idOf(Number.isNaN(value) ? null : value);
      }
    } else {
      const read = this.#dynamic!.read;
      for (let i = 0; i < n; i++) out[i] = this.#idOf(read(rows[i]!));
    }
  }

  direct(): DirectCodes | undefined {
    return undefined;
  }

  value(key: number): Scalar {
    return this.#distinct[key]!;
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
    if (fixed && space <= DENSE_SLOTS) this.#dense = new Int32Array(space).fill(-1);
    else if (space <= Number.MAX_SAFE_INTEGER) this.#hash = new Map();
    else this.#text = new Map();
    this.#keys = keyers.map(() => new Int32Array(0));
    this.#reserve(16);
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

  #assignOne(dense: Int32Array, keys: Int32Array, n: number, out: Int32Array): void {
    let sizes = this.sizes;
    for (let i = 0; i < n; i++) {
      const slot = keys[i]!;
      let g = dense[slot]!;
      if (g < 0) {
        g = this.#add1(keys[i]!, 0);
        dense[slot] = g;
        sizes = this.sizes;
      }
      sizes[g]!++;
      out[i] = g;
    }
  }

  #assignTwo(
    dense: Int32Array,
    first: Int32Array,
    second: Int32Array,
    n: number,
    out: Int32Array,
  ): void {
    const stride = this.#strides[1]!;
    let sizes = this.sizes;
    for (let i = 0; i < n; i++) {
      const slot = first[i]! + second[i]! * stride;
      let g = dense[slot]!;
      if (g < 0) {
        g = this.#add1(first[i]!, second[i]!);
        dense[slot] = g;
        sizes = this.sizes;
      }
      sizes[g]!++;
      out[i] = g;
    }
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
      const next = new Int32Array(capacity);
      next.set(old);
      keys.push(next);
    }
    this.#keys = keys;
    this.sizes = grown(this.sizes, capacity);
    this.#capacity = capacity;
    for (const accumulator of this.#accumulators) accumulator.grow(capacity);
  }

  /** One row per group: its keys' values, then the outputs. */
  rows(keyers: readonly Keyer[], outputs: readonly Output[]): Scalar[][] {
    const count = this.count;
    const width = keyers.length;
    const out = new Array<Scalar[]>(count);
    for (let g = 0; g < count; g++) {
      const row = new Array<Scalar>(width + outputs.length);
      for (let k = 0; k < width; k++) row[k] = keyers[k]!.value(this.#keys[k]![g]!);
      for (let a = 0; a < outputs.length; a++) {
        const output = outputs[a]!;
        row[width + a] = output.stats === undefined
          ? (output.accumulator === undefined ? this.sizes[g]! : output.accumulator.result(g))
          : output.stats.result(output.kind, g);
      }
      out[g] = row;
    }
    return out;
  }
}

/** Per-group state of aggregates, in typed arrays that grow with the groups. */
interface Accumulator {
  grow(capacity: number): void;
  add(rows: Uint32Array, n: number, groups: Int32Array): void;
}

/** An accumulator with one result. */
interface SingleAccumulator extends Accumulator {
  result(g: number): Scalar;
}

/** Where an aggregate's result comes from: the number statistics of its value, another accumulator, or the group's rows. */
interface Output {
  readonly stats: NumberStats | undefined;
  readonly kind: StatKind;
  readonly accumulator: SingleAccumulator | undefined;
}

function grown(old: Float64Array, capacity: number, fill = 0): Float64Array<ArrayBuffer> {
  const next = new Float64Array(capacity);
  if (fill !== 0) next.fill(fill, old.length);
  next.set(old);
  return next;
}

/**
 * The accumulators of the aggregates: the number aggregates (sum, average,
 * min, max) of one value expression share one {@linkcode NumberStats}, which
 * reads the values once per batch; `$count` is the group's rows.
 */
function planOf(
  aggregates: readonly BoundAggregate[],
  table: ColumnTable,
  maxGroups: number,
  maxDistinct: number,
): { accumulators: Accumulator[]; outputs: Output[] } {
  const accumulators: Accumulator[] = [];
  const outputs: Output[] = [];
  const statsByValue = new Map<string, NumberStats>();
  for (const aggregate of aggregates) {
    if (aggregate.kind === "count") {
      outputs.push({ stats: undefined, kind: SUM, accumulator: undefined });
      continue;
    }
    const source = sourceOf(aggregate.value, table);
    const method = aggregate.method;
    const numeric = aggregate.value.type === "number" || aggregate.value.type === "integer";
    if (
      method === "countdistinct" ||
      (!numeric && source.kind === "coded" && method !== "sum" && method !== "average")
    ) {
      const accumulator = method === "countdistinct"
        ? new DistinctAccumulator(keyerOf(source), maxGroups, maxDistinct)
        : new RankAccumulator(source as CodedSource, method === "max");
      accumulators.push(accumulator);
      outputs.push({ stats: undefined, kind: SUM, accumulator });
      continue;
    }
    // The same expression, wherever it is written in the text (its span aside).
    const key = JSON.stringify(
      aggregate.value,
      (name, value: unknown) => name === "span" ? undefined : value,
    );
    let stats = statsByValue.get(key);
    if (stats === undefined) {
      stats = new NumberStats(new NumberReader(source));
      statsByValue.set(key, stats);
      accumulators.push(stats);
    }
    const kind = method === "sum"
      ? SUM
      : method === "average"
      ? AVERAGE
      : method === "min"
      ? MIN
      : MAX;
    stats.need(kind);
    outputs.push({ stats, kind, accumulator: undefined });
  }
  return { accumulators, outputs };
}

/** What a {@linkcode NumberStats} answers. */
type StatKind = 0 | 1 | 2 | 3;
const SUM = 0;
const AVERAGE = 1;
const MIN = 2;
const MAX = 3;

/** Writes the numbers of a batch of rows (`NaN` for null), whatever the source. */
class NumberReader {
  readonly #source: ExprSource;
  readonly #byCode: Float64Array;
  readonly #codes: Int32Array;

  constructor(source: ExprSource) {
    this.#source = source;
    this.#byCode = source.kind === "coded"
      ? Float64Array.from(
        source.values,
        (value) => (typeof value === "number" ? value : Number.NaN),
      )
      : new Float64Array(0);
    this.#codes = new Int32Array(source.kind === "coded" ? BATCH : 0);
  }

  read(rows: Uint32Array, n: number, out: Float64Array): void {
    const source = this.#source;
    switch (source.kind) {
      case "numbers": {
        const values = source.values;
        for (let i = 0; i < n; i++) out[i] = values[rows[i]!]!;
        return;
      }
      case "coded": {
        const codes = this.#codes;
        const byCode = this.#byCode;
        source.codes.fill(rows, n, codes);
        for (let i = 0; i < n; i++) out[i] = byCode[codes[i]!]!;
        return;
      }
      case "dynamic": {
        const read = source.read;
        for (let i = 0; i < n; i++) {
          const value = read(rows[i]!);
          out[i] = typeof value === "number" ? value : Number.NaN;
        }
        return;
      }
    }
  }
}

/**
 * The sums, counts, least and greatest of one value expression per group,
 * as its aggregates need, updated in one loop per batch. Sums are
 * compensated (Neumaier): a running sum and the error it dropped.
 */
class NumberStats implements Accumulator {
  readonly #reader: NumberReader;
  readonly #values = new Float64Array(BATCH);
  #sum = false;
  #extremes = false;
  #sums = new Float64Array(0);
  #errors = new Float64Array(0);
  #counts = new Float64Array(0);
  #low = new Float64Array(0);
  #high = new Float64Array(0);

  constructor(reader: NumberReader) {
    this.#reader = reader;
  }

  need(kind: StatKind): void {
    if (kind === SUM || kind === AVERAGE) this.#sum = true;
    else this.#extremes = true;
  }

  grow(capacity: number): void {
    if (this.#sum) {
      this.#sums = grown(this.#sums, capacity);
      this.#errors = grown(this.#errors, capacity);
      this.#counts = grown(this.#counts, capacity);
    }
    if (this.#extremes) {
      this.#low = grown(this.#low, capacity, Infinity);
      this.#high = grown(this.#high, capacity, -Infinity);
    }
  }

  add(rows: Uint32Array, n: number, groups: Int32Array): void {
    const values = this.#values;
    this.#reader.read(rows, n, values);
    if (this.#sum && this.#extremes) {
      addAll(values, n, groups, this.#sums, this.#errors, this.#counts, this.#low, this.#high);
    } else if (this.#sum) addSums(values, n, groups, this.#sums, this.#errors, this.#counts);
    else addExtremes(values, n, groups, this.#low, this.#high);
  }

  result(kind: StatKind, g: number): Scalar {
    switch (kind) {
      case SUM:
      case AVERAGE: {
        const n = this.#counts[g]!;
        if (n === 0) return null;
        const sum = this.#sums[g]! + this.#errors[g]!;
        return kind === AVERAGE ? sum / n : sum;
      }
      case MIN: {
        const low = this.#low[g]!;
        return Number.isFinite(low) ? low : null;
      }
      case MAX: {
        const high = this.#high[g]!;
        return Number.isFinite(high) ? high : null;
      }
    }
  }
}

function addSums(
  values: Float64Array,
  n: number,
  groups: Int32Array,
  sums: Float64Array,
  errors: Float64Array,
  counts: Float64Array,
): void {
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

function addExtremes(
  values: Float64Array,
  n: number,
  groups: Int32Array,
  low: Float64Array,
  high: Float64Array,
): void {
  for (let i = 0; i < n; i++) {
    const x = values[i]!;
    const g = groups[i]!;
    if (x < low[g]!) low[g] = x;
    if (x > high[g]!) high[g] = x;
  }
}

function addAll(
  values: Float64Array,
  n: number,
  groups: Int32Array,
  sums: Float64Array,
  errors: Float64Array,
  counts: Float64Array,
  low: Float64Array,
  high: Float64Array,
): void {
  for (let i = 0; i < n; i++) {
    const x = values[i]!;
    if (x !== x) continue;
    const g = groups[i]!;
    const s = sums[g]!;
    const t = s + x;
    errors[g]! += Math.abs(s) >= Math.abs(x) ? (s - t) + x : (x - t) + s;
    sums[g] = t;
    counts[g]!++;
    if (x < low[g]!) low[g] = x;
    if (x > high[g]!) high[g] = x;
  }
}

/** The least or greatest text or date of each group, by the rank of its code. */
class RankAccumulator implements SingleAccumulator {
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
class DistinctAccumulator implements SingleAccumulator {
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
