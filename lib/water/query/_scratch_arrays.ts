// Per-group working arrays of the $apply engine (sums, counts, keys, the
// dense map from keys to groups), used by one aggregation after another:
// an aggregation's result is copied out of them, so they are free once it
// is made. New ones for each aggregation cost allocations of memory the
// collector counts as external, and the collections it then runs cost
// more than a small aggregation. Kept by length (aggregations of the same
// shape ask for the same lengths), a few of each, none very large.

/** Arrays kept of one length, at most. */
const PER_LENGTH = 8;
/** Longest array kept (8 MiB of Float64). */
const MAX_LENGTH = 1 << 20;

const floats = new Map<number, Float64Array[]>();
const ints = new Map<number, Int32Array[]>();

/**
 * A Float64Array of a length, every element `fill`: a kept one, or a new one.
 * @param length its length
 * @param fill its elements' value
 * @returns the array, to give back with {@linkcode giveFloats} once done with
 */
export function takeFloats(length: number, fill = 0): Float64Array<ArrayBuffer> {
  const kept = floats.get(length)?.pop();
  if (kept === undefined) {
    return fill === 0 ? new Float64Array(length) : new Float64Array(length).fill(fill);
  }
  return kept.fill(fill) as Float64Array<ArrayBuffer>;
}

/**
 * Gives back an array for another aggregation (it must no longer be read).
 * @param array the array
 */
export function giveFloats(array: Float64Array): void {
  give(floats, array);
}

/**
 * An Int32Array of a length, every element `fill`: a kept one, or a new one.
 * @param length its length
 * @param fill its elements' value
 * @returns the array, to give back with {@linkcode giveInts} once done with
 */
export function takeInts(length: number, fill = 0): Int32Array<ArrayBuffer> {
  const kept = ints.get(length)?.pop();
  if (kept === undefined) {
    return fill === 0 ? new Int32Array(length) : new Int32Array(length).fill(fill);
  }
  return kept.fill(fill) as Int32Array<ArrayBuffer>;
}

/**
 * Gives back an array for another aggregation (it must no longer be read).
 * @param array the array
 */
export function giveInts(array: Int32Array): void {
  give(ints, array);
}

function give<T extends Float64Array | Int32Array>(pool: Map<number, T[]>, array: T): void {
  const length = array.length;
  if (length === 0 || length > MAX_LENGTH) return;
  let kept = pool.get(length);
  if (kept === undefined) {
    kept = [];
    pool.set(length, kept);
  }
  if (kept.length < PER_LENGTH && !kept.includes(array)) kept.push(array);
}
