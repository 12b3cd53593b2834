// What a piece of the hot path allocates a call, as V8 counts it: the growth
// of the young generation over a run of calls, after warm-up, the least of
// several runs taken so that a collection in between (or a one-off
// allocation, the compiler's or a coverage tool's) cannot inflate it. A
// per-call record or closure coming back shows as tens of bytes a call.
// And what a value keeps alive once held (retainedBytesPer): the heap's
// growth across full collections, per value.
import { getHeapSpaceStatistics, setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

function youngBytes(): number {
  for (const space of getHeapSpaceStatistics()) {
    if (space.space_name === "new_space") return space.space_used_size;
  }
  throw new Error("no new_space in this V8");
}

/**
 * Bytes the young generation grows by per call of `f`, the least of 7 runs of
 * 2,000 calls after 50,000 calls of warm-up.
 * @param f the call
 * @returns bytes a call
 */
export function bytesPerCall(f: () => unknown): number {
  for (let i = 0; i < 50_000; i++) f();
  let least = Number.POSITIVE_INFINITY;
  for (let run = 0; run < 7; run++) {
    const before = youngBytes();
    for (let i = 0; i < 2000; i++) f();
    const grown = youngBytes() - before;
    // A collection during the run shrinks the space: that run says nothing.
    if (grown >= 0) least = Math.min(least, grown / 2000);
  }
  return least;
}

/** Whether V8 counts coverage, which keeps some temporaries from being optimized away: a few bytes a call more. */
export const COVERED = process.env["NODE_V8_COVERAGE"] !== undefined;

/** A full collection, V8's own (exposed for this process on first use). */
function collect(): void {
  setFlagsFromString("--expose-gc");
  (runInNewContext("gc") as () => void)();
}

/**
 * Bytes of heap each of `count` values that `make` returns keeps alive once
 * everything else is collected: what a queue or a log pays to hold one.
 * @param count how many to make and hold
 * @param make the i-th value
 * @returns bytes a value
 */
export function retainedBytesPer(count: number, make: (i: number) => unknown): number {
  const held: unknown[] = new Array(count);
  collect();
  const before = process.memoryUsage().heapUsed;
  for (let i = 0; i < count; i++) held[i] = make(i);
  collect();
  const bytes = (process.memoryUsage().heapUsed - before) / count;
  // Let go of the values only now: this use of the array keeps them alive through the measure.
  held.length = 0;
  return bytes;
}
