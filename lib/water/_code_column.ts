import type { CodeArray } from "../odata/mod.ts";

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
