/** A small seeded pseudo-random generator for property tests. */
export interface Prng {
  /** The seed it was created with, for logging and replay. */
  readonly seed: number;
  /** A number in `[0, 1)`. */
  next(): number;
  /** An integer in `[0, n)`; `n` must be a positive integer. */
  int(n: number): number;
  /** One element of a non-empty list. */
  pick<T>(xs: readonly T[]): T;
}

/**
 * Creates a mulberry32 generator (as in Deno std's testing helpers): fast,
 * 32 bits of state, and the same sequence for the same seed on every run.
 * @param seed any 32-bit integer; log it so a failure can be replayed
 * @returns the generator
 * @throws {RangeError} when `int` is given a bound that is not a positive integer,
 * or `pick` an empty list
 */
export function createPrng(seed: number): Prng {
  let state = seed >>> 0;
  function next(): number {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  function int(n: number): number {
    if (!Number.isInteger(n) || n < 1) {
      throw new RangeError(`Cannot draw an integer below ${n}: expected a positive integer`);
    }
    return Math.floor(next() * n);
  }
  function pick<T>(xs: readonly T[]): T {
    if (xs.length === 0) throw new RangeError("Cannot pick from an empty list");
    return xs[int(xs.length)] as T;
  }
  return { seed, next, int, pick };
}
