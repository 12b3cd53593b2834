// The keys of the $apply engine: each grouping property gives each row of a
// batch the key of its value (dictionary codes, small integer ranges, a hash).
import type { CodeArray } from "../../columnar/mod.ts";
import type { Scalar } from "../../odata/mod.ts";
import {
  type CodedSource,
  type CodeReader,
  type DynamicSource,
  type ExprSource,
  type NumbersSource,
} from "./_expr_sources.ts";

/** Rows per batch: the keys, groups and values of a batch are typed arrays of this length. */
export const BATCH = 4096;

/** Gives each row of a batch the key of its value: one key per distinct value. */
export interface Keyer {
  fill(rows: Uint32Array, n: number, out: Int32Array): void;
  /** Keys given so far; for a fixed keyer, every key it can give. */
  readonly size: number;
  /** Whether `size` is fixed before the first row. */
  readonly fixed: boolean;
  value(key: number): Scalar;
  /** The value of each key given so far (of every key, for a fixed keyer); not to be changed. */
  values(): readonly Scalar[];
  /** The row-level codes and the key of each, when the keys come from a dictionary column. */
  direct(): DirectCodes | undefined;
}

/** A row-level dictionary column's codes, and the key of each code (undefined: the code). */
export interface DirectCodes {
  readonly codes: CodeArray;
  readonly codeCount: number;
  readonly canonical: Int32Array | undefined;
}

export function keyerOf(source: ExprSource): Keyer {
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
export interface CodeKeys {
  readonly canonical: Int32Array | undefined;
  readonly distinct: readonly Scalar[];
}

/** Keys by the values array of a source (a dictionary's, the same for every query of a store). */
export const keysByValues = new WeakMap<readonly Scalar[], CodeKeys>();

export function keysOf(values: readonly Scalar[]): CodeKeys {
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
export class CodedKeyer implements Keyer {
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
    const canonical = this.#canonical;
    const codes = this.#rowCodes;
    if (canonical !== undefined && codes !== undefined) {
      // A row's code and its key in one pass, a loop for each kind of code array.
      if (codes instanceof Uint8Array) keys8(codes, canonical, rows, n, out);
      else if (codes instanceof Uint16Array) keys16(codes, canonical, rows, n, out);
      else keys32(codes, canonical, rows, n, out);
      return;
    }
    this.#codes.fill(rows, n, out);
    if (canonical !== undefined) { for (let i = 0; i < n; i++) out[i] = canonical[out[i]!]!; }
  }

  value(key: number): Scalar {
    return this.#distinct[key]!;
  }

  values(): readonly Scalar[] {
    return this.#distinct;
  }
}

function keys8(
  codes: Uint8Array,
  canonical: Int32Array,
  rows: Uint32Array,
  n: number,
  out: Int32Array,
): void {
  for (let i = 0; i < n; i++) out[i] = canonical[codes[rows[i]!]!]!;
}

function keys16(
  codes: Uint16Array,
  canonical: Int32Array,
  rows: Uint32Array,
  n: number,
  out: Int32Array,
): void {
  for (let i = 0; i < n; i++) out[i] = canonical[codes[rows[i]!]!]!;
}

function keys32(
  codes: Uint32Array,
  canonical: Int32Array,
  rows: Uint32Array,
  n: number,
  out: Int32Array,
): void {
  for (let i = 0; i < n; i++) out[i] = canonical[codes[rows[i]!]!]!;
}

/** Widest range of integers a number column's keys are offsets into (then a dense group array). */
export const RANGE_SPAN = 1 << 16;
export const ranges = new WeakMap<Float64Array, { low: number; span: number } | null>();

/**
 * The least value and the span of a number column whose values are all
 * integers (or null) within {@linkcode RANGE_SPAN}, found once per column;
 * undefined for any other.
 */
export function integerRangeOf(values: Float64Array): { low: number; span: number } | undefined {
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
export class RangeKeyer implements Keyer {
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

  values(): readonly Scalar[] {
    let values = rangeValues.get(this.#values);
    if (values === undefined) {
      values = Array.from({ length: this.size }, (_, key) => this.value(key));
      rangeValues.set(this.#values, values);
    }
    return values;
  }
}

/** The value of each key of an integer column's range, by the column (the store's, kept). */
const rangeValues = new WeakMap<Float64Array, readonly Scalar[]>();

/** Keys given as values are met, through a hash. */
export class OpenKeyer implements Keyer {
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

  values(): readonly Scalar[] {
    return this.#distinct;
  }
}
