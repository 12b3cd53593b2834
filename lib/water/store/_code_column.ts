import type { CodeArray } from "../../columnar/mod.ts";

/**
 * A growable column of dictionary codes that starts one byte wide and widens
 * to two or four bytes when the dictionary outgrows the current width.
 * Appends come in bulk from a `Uint32Array` staging buffer.
 */
export class CodeColumn {
  #codes: CodeArray = new Uint8Array(1024);
  #length = 0;

  /** Rows written. */
  get length(): number {
    return this.#length;
  }

  /**
   * Appends `n` codes; widens first when `dictionarySize` needs it.
   * @param source staged codes
   * @param n how many to take
   * @param dictionarySize codes in use, to choose the width
   */
  append(source: Uint32Array, n: number, dictionarySize: number): void {
    this.#widen(dictionarySize);
    this.#reserve(this.#length + n);
    this.#codes.set(source.subarray(0, n), this.#length);
    this.#length += n;
  }

  /**
   * Reorders rows `base .. base + perm.length - 1`: new row `i` is old row `perm[i]`.
   * @param base first row of the segment
   * @param perm the permutation, relative to `base`
   */
  permute(base: number, perm: Uint32Array): void {
    permuteSegment(this.#codes, base, perm);
  }

  /**
   * Drops rows from `length` on.
   * @param length rows to keep
   */
  truncate(length: number): void {
    this.#length = Math.min(this.#length, length);
  }

  /** The codes, trimmed to their length. */
  finish(): CodeArray {
    return this.#codes.slice(0, this.#length);
  }

  #widen(size: number): void {
    const max = size - 1;
    const codes = this.#codes;
    if (codes instanceof Uint8Array && max > 0xff) {
      this.#codes = max > 0xffff ? Uint32Array.from(codes) : Uint16Array.from(codes);
    } else if (codes instanceof Uint16Array && max > 0xffff) {
      this.#codes = Uint32Array.from(codes);
    }
  }

  #reserve(capacity: number): void {
    const codes = this.#codes;
    if (capacity <= codes.length) return;
    let size = codes.length * 2;
    while (size < capacity) size *= 2;
    const bigger = codes instanceof Uint8Array
      ? new Uint8Array(size)
      : codes instanceof Uint16Array
      ? new Uint16Array(size)
      : new Uint32Array(size);
    bigger.set(codes.subarray(0, this.#length));
    this.#codes = bigger;
  }
}

/** A growable `Float64Array` column; NaN is null. */
export class NumberColumnBuilder {
  #values = new Float64Array(1024);
  #length = 0;

  /** Rows written. */
  get length(): number {
    return this.#length;
  }

  /**
   * Appends `n` staged numbers.
   * @param source staged values
   * @param n how many to take
   */
  append(source: Float64Array, n: number): void {
    if (this.#length + n > this.#values.length) {
      let size = this.#values.length * 2;
      while (size < this.#length + n) size *= 2;
      const bigger = new Float64Array(size);
      bigger.set(this.#values.subarray(0, this.#length));
      this.#values = bigger;
    }
    this.#values.set(source.subarray(0, n), this.#length);
    this.#length += n;
  }

  /**
   * Reorders rows `base .. base + perm.length - 1`: new row `i` is old row `perm[i]`.
   * @param base first row of the segment
   * @param perm the permutation, relative to `base`
   */
  permute(base: number, perm: Uint32Array): void {
    permuteSegment(this.#values, base, perm);
  }

  /**
   * Drops rows from `length` on.
   * @param length rows to keep
   */
  truncate(length: number): void {
    this.#length = Math.min(this.#length, length);
  }

  /** The values, trimmed to their length. */
  finish(): Float64Array {
    return this.#values.slice(0, this.#length);
  }
}

/** Reorders `array[base .. base + perm.length - 1]` so that new element `i` is old element `perm[i]`. */
function permuteSegment(array: CodeArray | Float64Array, base: number, perm: Uint32Array): void {
  const segment = array.slice(base, base + perm.length);
  for (let i = 0; i < perm.length; i++) array[base + i] = segment[perm[i]!]!;
}

/**
 * A code array wide enough for codes up to `max`.
 * @param max the highest code
 * @param length its length
 * @returns a zeroed array of one, two or four bytes a code
 */
export function codeArray(max: number, length: number): CodeArray {
  return max <= 0xff
    ? new Uint8Array(length)
    : max <= 0xffff
    ? new Uint16Array(length)
    : new Uint32Array(length);
}

/**
 * Rows per code.
 * @param codes each row's code
 * @param size codes in the dictionary
 * @returns the rows of each code
 */
export function countCodes(codes: CodeArray, size: number): Uint32Array {
  const counts = new Uint32Array(size);
  for (let r = 0; r < codes.length; r++) counts[codes[r]!]!++;
  return counts;
}

/**
 * Writes `map[local[i]]` to `codes[at + i]` for every `i`: one loop per pair
 * of widths, each seeing one kind of array only, which V8 compiles to a
 * tight loop (a loop seeing several kinds runs about twice as slow).
 * @param codes where to write
 * @param at the first index written
 * @param local the codes to map
 * @param map new code by old code
 */
export function remapCodes(codes: CodeArray, at: number, local: CodeArray, map: Uint32Array): void {
  if (codes instanceof Uint8Array) {
    if (local instanceof Uint8Array) remap8to8(codes, at, local, map);
    else if (local instanceof Uint16Array) remap16to8(codes, at, local, map);
    else remap32to8(codes, at, local, map);
  } else if (codes instanceof Uint16Array) {
    if (local instanceof Uint8Array) remap8to16(codes, at, local, map);
    else if (local instanceof Uint16Array) remap16to16(codes, at, local, map);
    else remap32to16(codes, at, local, map);
  } else if (local instanceof Uint8Array) remap8to32(codes, at, local, map);
  else if (local instanceof Uint16Array) remap16to32(codes, at, local, map);
  else remap32to32(codes, at, local, map);
}

function remap8to8(codes: Uint8Array, at: number, local: Uint8Array, map: Uint32Array): void {
  for (let i = 0; i < local.length; i++) codes[at + i] = map[local[i]!]!;
}

function remap16to8(codes: Uint8Array, at: number, local: Uint16Array, map: Uint32Array): void {
  for (let i = 0; i < local.length; i++) codes[at + i] = map[local[i]!]!;
}

function remap32to8(codes: Uint8Array, at: number, local: Uint32Array, map: Uint32Array): void {
  for (let i = 0; i < local.length; i++) codes[at + i] = map[local[i]!]!;
}

function remap8to16(codes: Uint16Array, at: number, local: Uint8Array, map: Uint32Array): void {
  for (let i = 0; i < local.length; i++) codes[at + i] = map[local[i]!]!;
}

function remap16to16(codes: Uint16Array, at: number, local: Uint16Array, map: Uint32Array): void {
  for (let i = 0; i < local.length; i++) codes[at + i] = map[local[i]!]!;
}

function remap32to16(codes: Uint16Array, at: number, local: Uint32Array, map: Uint32Array): void {
  for (let i = 0; i < local.length; i++) codes[at + i] = map[local[i]!]!;
}

function remap8to32(codes: Uint32Array, at: number, local: Uint8Array, map: Uint32Array): void {
  for (let i = 0; i < local.length; i++) codes[at + i] = map[local[i]!]!;
}

function remap16to32(codes: Uint32Array, at: number, local: Uint16Array, map: Uint32Array): void {
  for (let i = 0; i < local.length; i++) codes[at + i] = map[local[i]!]!;
}

function remap32to32(codes: Uint32Array, at: number, local: Uint32Array, map: Uint32Array): void {
  for (let i = 0; i < local.length; i++) codes[at + i] = map[local[i]!]!;
}

/**
 * Places each row in a posting index: row `r` goes to `rows[fill[k]++]`,
 * `k` the key of its code. One loop per code width, as in {@linkcode remapCodes}.
 * @param codes each row's code
 * @param keyOf the key of each code
 * @param fill where each key's next row goes; advanced
 * @param rows the index's rows
 */
export function placeRows(
  codes: CodeArray,
  keyOf: Uint32Array,
  fill: Uint32Array,
  rows: Uint32Array,
): void {
  if (codes instanceof Uint8Array) placeRows8(codes, keyOf, fill, rows);
  else if (codes instanceof Uint16Array) placeRows16(codes, keyOf, fill, rows);
  else placeRows32(codes, keyOf, fill, rows);
}

function placeRows8(
  codes: Uint8Array,
  keyOf: Uint32Array,
  fill: Uint32Array,
  rows: Uint32Array,
): void {
  for (let r = 0; r < codes.length; r++) rows[fill[keyOf[codes[r]!]!]!++] = r;
}

function placeRows16(
  codes: Uint16Array,
  keyOf: Uint32Array,
  fill: Uint32Array,
  rows: Uint32Array,
): void {
  for (let r = 0; r < codes.length; r++) rows[fill[keyOf[codes[r]!]!]!++] = r;
}

function placeRows32(
  codes: Uint32Array,
  keyOf: Uint32Array,
  fill: Uint32Array,
  rows: Uint32Array,
): void {
  for (let r = 0; r < codes.length; r++) rows[fill[keyOf[codes[r]!]!]!++] = r;
}
