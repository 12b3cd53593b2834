import type { Scalar } from "../../odata/mod.ts";

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Checks a new distinct value; returns an error message, or undefined when valid. */
export type ValueCheck = (text: string) => string | undefined;

/**
 * Maps field bytes to dictionary codes without creating a string per field:
 * bytes are hashed and compared against the bytes of known entries; only a new
 * distinct value is decoded (and checked). Code 0 is the empty field (null).
 */
export class ByteDictionary {
  /** Decoded value per code; `values[0]` is null. */
  readonly values: Scalar[] = [null];
  /** Message of the last refused value. */
  error = "";
  readonly #check: ValueCheck | undefined;
  #arena = new Uint8Array(1 << 12);
  #arenaUsed = 0;
  #offsets = new Int32Array(64);
  #lengths = new Int32Array(64);
  #hashes = new Int32Array(64);
  #slots = new Int32Array(128);
  #last = 0;

  /**
   * Creates an empty dictionary.
   * @param check validates each new distinct value
   */
  constructor(check?: ValueCheck) {
    this.#check = check;
  }

  /** Number of codes, null included. */
  get size(): number {
    return this.values.length;
  }

  /**
   * Gives the code of the bytes `buf[start..end)`, adding them when new.
   * @param buf the bytes
   * @param start first byte
   * @param end end (exclusive)
   * @returns the code; 0 for an empty field; -1 when the value is refused (see `error`)
   */
  codeOf(buf: Uint8Array, start: number, end: number): number {
    const length = end - start;
    if (length === 0) return 0;
    const arena = this.#arena;
    const last = this.#last;
    if (
      last !== 0 && this.#lengths[last] === length &&
      same(buf, start, arena, this.#offsets[last]!, length)
    ) {
      return last;
    }
    let hash = 0x811c9dc5 | 0;
    for (let i = start; i < end; i++) hash = Math.imul(hash ^ buf[i]!, 0x01000193);
    const slots = this.#slots;
    const mask = slots.length - 1;
    let slot = hash & mask;
    for (;;) {
      const code = slots[slot]!;
      if (code === 0) break;
      if (
        this.#hashes[code] === hash && this.#lengths[code] === length &&
        same(buf, start, arena, this.#offsets[code]!, length)
      ) {
        this.#last = code;
        return code;
      }
      slot = (slot + 1) & mask;
    }
    return this.#add(buf, start, end, hash, slot);
  }

  #add(buf: Uint8Array, start: number, end: number, hash: number, slot: number): number {
    const text = decode(buf, start, end);
    if (text === undefined) {
      this.error = "found bytes that are not valid UTF-8";
      return -1;
    }
    const problem = this.#check?.(text);
    if (problem !== undefined) {
      this.error = problem;
      return -1;
    }
    const length = end - start;
    const code = this.values.length;
    this.values.push(text);
    if (code >= this.#offsets.length) {
      this.#offsets = grow32(this.#offsets);
      this.#lengths = grow32(this.#lengths);
      this.#hashes = grow32(this.#hashes);
    }
    if (this.#arenaUsed + length > this.#arena.length) {
      const bigger = new Uint8Array(Math.max(this.#arena.length * 2, this.#arenaUsed + length));
      bigger.set(this.#arena.subarray(0, this.#arenaUsed));
      this.#arena = bigger;
    }
    this.#arena.set(buf.subarray(start, end), this.#arenaUsed);
    this.#offsets[code] = this.#arenaUsed;
    this.#lengths[code] = length;
    this.#hashes[code] = hash;
    this.#arenaUsed += length;
    this.#slots[slot] = code;
    this.#last = code;
    if (code * 2 >= this.#slots.length) this.#rehash();
    return code;
  }

  #rehash(): void {
    const slots = new Int32Array(this.#slots.length * 2);
    const mask = slots.length - 1;
    for (let code = 1; code < this.values.length; code++) {
      let slot = this.#hashes[code]! & mask;
      while (slots[slot] !== 0) slot = (slot + 1) & mask;
      slots[slot] = code;
    }
    this.#slots = slots;
  }

  /** Frees the lookup structures once loading is over; `values` stays. */
  seal(): void {
    this.#arena = new Uint8Array(0);
    this.#offsets = new Int32Array(0);
    this.#lengths = new Int32Array(0);
    this.#hashes = new Int32Array(0);
    this.#slots = new Int32Array(1);
    this.#last = 0;
  }
}

function same(
  a: Uint8Array,
  aStart: number,
  b: Uint8Array,
  bStart: number,
  length: number,
): boolean {
  for (let i = 0; i < length; i++) if (a[aStart + i] !== b[bStart + i]) return false;
  return true;
}

function grow32(array: Int32Array): Int32Array<ArrayBuffer> {
  const bigger = new Int32Array(array.length * 2);
  bigger.set(array);
  return bigger;
}

/**
 * Decodes UTF-8 bytes, with a fast path for short ASCII.
 * @param buf the bytes
 * @param start first byte
 * @param end end (exclusive)
 * @returns the text, or undefined for invalid UTF-8
 */
export function decode(buf: Uint8Array, start: number, end: number): string | undefined {
  if (end - start <= 256) {
    let ascii = true;
    for (let i = start; i < end; i++) {
      if (buf[i]! >= 0x80) {
        ascii = false;
        break;
      }
    }
    if (ascii) return String.fromCharCode(...buf.subarray(start, end));
  }
  try {
    return utf8.decode(buf.subarray(start, end));
  } catch {
    return undefined;
  }
}
