// The aggregates of the $apply engine: per-group state in typed arrays that
// grow with the groups, added up batch by batch.
import type { ColumnTable } from "../../columnar/mod.ts";
import type { BoundAggregate, Scalar } from "../../odata/mod.ts";
import { compareResultValues } from "../../odata/_internal.ts";
import { WaterError } from "../errors.ts";
import { type CodedSource, type ExprSource, sourceOf } from "./_expr_sources.ts";
import { BATCH, type Keyer, keyerOf } from "./_aggregate_keys.ts";
import { giveFloats, giveInts, takeFloats, takeInts } from "./_scratch_arrays.ts";

/** Per-group state of aggregates, in typed arrays that grow with the groups. */
export interface Accumulator {
  grow(capacity: number): void;
  /** Gives back the per-group arrays (see _scratch_arrays.ts): the aggregation is over. */
  release(): void;
  add(rows: Uint32Array, n: number, groups: Int32Array): void;
}

/** An accumulator with one result. */
export interface SingleAccumulator extends Accumulator {
  result(g: number): Scalar;
}

/** Where an aggregate's result comes from: the number statistics of its value, another accumulator, or the group's rows. */
export interface Output {
  readonly stats: NumberStats | undefined;
  readonly kind: StatKind;
  readonly accumulator: SingleAccumulator | undefined;
}

// A batch's values and codes, shared by the accumulators (each uses them
// only within a call to add) and by one aggregation after another.
const VALUES = new Float64Array(BATCH);
const CODES = new Int32Array(BATCH);

/** A longer copy of a per-group array, the rest `fill`; the old one is given back. */
export function grown(old: Float64Array, capacity: number, fill = 0): Float64Array<ArrayBuffer> {
  const next = takeFloats(capacity, fill);
  next.set(old);
  giveFloats(old);
  return next;
}

/**
 * The accumulators of the aggregates: the number aggregates (sum, average,
 * min, max) of one value expression share one {@linkcode NumberStats}, which
 * reads the values once per batch; `$count` is the group's rows.
 */
export function planOf(
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
export type StatKind = 0 | 1 | 2 | 3;
export const SUM = 0;
export const AVERAGE = 1;
export const MIN = 2;
export const MAX = 3;

/** Writes the numbers of a batch of rows (`NaN` for null), whatever the source. */
export class NumberReader {
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
    this.#codes = CODES;
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
export class NumberStats implements Accumulator {
  readonly #reader: NumberReader;
  readonly #values = VALUES;
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

  release(): void {
    for (const array of [this.#sums, this.#errors, this.#counts, this.#low, this.#high]) {
      giveFloats(array);
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

  /**
   * Writes one kind of result of the first `count` groups, `NaN` for null.
   * @returns false when a result is `NaN` of itself (a sum of infinities of both signs), which `NaN` would not tell from null
   */
  results(kind: StatKind, count: number, out: Float64Array): boolean {
    switch (kind) {
      case SUM:
      case AVERAGE: {
        const sums = this.#sums;
        const errors = this.#errors;
        const counts = this.#counts;
        for (let g = 0; g < count; g++) {
          const n = counts[g]!;
          if (n === 0) {
            out[g] = Number.NaN;
            continue;
          }
          const sum = compensated(sums[g]!, errors[g]!);
          const v = kind === AVERAGE ? sum / n : sum;
          if (v !== v) return false;
          out[g] = v;
        }
        return true;
      }
      case MIN:
      case MAX: {
        const extremes = kind === MIN ? this.#low : this.#high;
        for (let g = 0; g < count; g++) {
          const v = extremes[g]!;
          out[g] = Number.isFinite(v) ? v : Number.NaN;
        }
        return true;
      }
    }
  }

  result(kind: StatKind, g: number): Scalar {
    switch (kind) {
      case SUM:
      case AVERAGE: {
        const n = this.#counts[g]!;
        if (n === 0) return null;
        const sum = compensated(this.#sums[g]!, this.#errors[g]!);
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

/**
 * A compensated sum's value: the running sum with its error term added, or
 * the running sum alone once it has overflowed (its error term is then NaN,
 * from Infinity minus Infinity).
 */
function compensated(sum: number, error: number): number {
  return Number.isFinite(sum) ? sum + error : sum;
}

// addSums, addExtremes and addAll repeat their loop bodies on purpose: addAll
// is the fused single pass (sums, counts and extremes of a batch at once, for
// a column asked for both), the other two the passes for one kind. A shared
// per-value helper or callback would cost a call in these hot loops; change
// the three together.
/**
 * Adds a batch's values to their groups' compensated sums and counts. A
 * group's sum, error and count stay in registers while its rows follow one
 * another (rows come in order, and a location's rows are together), and
 * are stored when another group's row comes: the same operations, in the
 * same order, as updating the arrays a row at a time, without a round trip
 * through memory on the sum's chain of additions.
 */
export function addSums(
  values: Float64Array,
  n: number,
  groups: Int32Array,
  sums: Float64Array,
  errors: Float64Array,
  counts: Float64Array,
): void {
  if (n === 0) return;
  let g = groups[0]!;
  let s = sums[g]!;
  let e = errors[g]!;
  let c = counts[g]!;
  for (let i = 0; i < n; i++) {
    const x = values[i]!;
    if (x !== x) continue;
    const h = groups[i]!;
    if (h !== g) {
      sums[g] = s;
      errors[g] = e;
      counts[g] = c;
      g = h;
      s = sums[g]!;
      e = errors[g]!;
      c = counts[g]!;
    }
    const t = s + x;
    e += Math.abs(s) >= Math.abs(x) ? (s - t) + x : (x - t) + s;
    s = t;
    c++;
  }
  sums[g] = s;
  errors[g] = e;
  counts[g] = c;
}

export function addExtremes(
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

export function addAll(
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
export class RankAccumulator implements SingleAccumulator {
  readonly #source: ExprSource & { kind: "coded" };
  readonly #max: boolean;
  readonly #rankOf: Int32Array;
  readonly #sorted: Scalar[];
  readonly #codes = CODES;
  #best = new Int32Array(0);

  constructor(source: ExprSource & { kind: "coded" }, max: boolean) {
    this.#source = source;
    this.#max = max;
    this.#sorted = [...new Set(source.values.filter((v) => v !== null))].sort(compareResultValues);
    const rank = new Map(this.#sorted.map((value, r) => [value, r]));
    this.#rankOf = Int32Array.from(source.values, (value) => rank.get(value) ?? -1);
  }

  grow(capacity: number): void {
    const next = takeInts(capacity, -1);
    next.set(this.#best);
    giveInts(this.#best);
    this.#best = next;
  }

  release(): void {
    giveInts(this.#best);
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
export class DistinctAccumulator implements SingleAccumulator {
  readonly #keyer: Keyer;
  readonly #radix: number;
  readonly #keys = CODES;
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

  release(): void {
    giveFloats(this.#counts);
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

export function tooManyDistinct(max: number): WaterError {
  return new WaterError(
    "ERR_WATER_TOO_MANY_GROUPS",
    `Cannot count more than ${max} distinct values (over all groups): filter the rows first, or count the distinct values of a coarser property`,
  );
}
