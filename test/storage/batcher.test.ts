import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Batcher } from "../../lib/storage/mod.ts";

interface Item {
  readonly key: string;
  readonly n: number;
}

/** A batcher whose deferred starts and batch ends the test drives by hand. */
function harness(maxBatch: number, maxRunning: number) {
  const deferred: (() => void)[] = [];
  const batches: { items: readonly Item[]; end: () => void }[] = [];
  const batcher = new Batcher<Item>({
    run: (items) => new Promise<void>((end) => batches.push({ items, end })),
    keyOf: (item) => item.key,
    maxBatch,
    maxRunning,
    defer: (run) => deferred.push(run),
  });
  const turn = () => {
    for (const run of deferred.splice(0)) run();
  };
  /** Ends a batch and lets its settling run. */
  const end = async (i: number) => {
    batches[i]!.end();
    await new Promise<void>((resolve) => setImmediate(resolve));
  };
  return { batcher, batches, turn, end, deferred };
}

const ns = (items: readonly Item[]) => items.map((item) => item.n);

describe("Batcher", () => {
  it("puts the items of one turn in one batch, up to the batch size", () => {
    const { batcher, batches, turn } = harness(3, 1);
    for (let n = 0; n < 5; n++) batcher.add({ key: `k${n}`, n });
    assert.equal(batches.length, 0, "nothing runs before the turn ends");
    turn();
    assert.deepEqual(batches.map((batch) => ns(batch.items)), [[0, 1, 2]]);
    assert.equal(batcher.waiting, 2);
    assert.equal(batcher.running, 1);
  });

  it("runs at most maxRunning batches, and the next when one ends, with what arrived meanwhile", async () => {
    const { batcher, batches, turn, end } = harness(10, 2);
    batcher.add({ key: "a", n: 0 });
    turn();
    batcher.add({ key: "b", n: 1 });
    turn();
    batcher.add({ key: "c", n: 2 });
    batcher.add({ key: "d", n: 3 });
    turn();
    assert.deepEqual(batches.map((batch) => ns(batch.items)), [[0], [1]], "two at once");
    await end(0);
    turn();
    assert.deepEqual(ns(batches[2]!.items), [2, 3], "the two that waited, together");
  });

  it("never puts two items of one key in one batch, nor runs them at once", async () => {
    const { batcher, batches, turn, end } = harness(10, 2);
    batcher.add({ key: "a", n: 0 });
    batcher.add({ key: "a", n: 1 });
    batcher.add({ key: "b", n: 2 });
    turn();
    assert.deepEqual(batches.map((batch) => ns(batch.items)), [[0, 2]]);
    assert.equal(batcher.waiting, 1, "a's second waits for its first, though a batch could start");
    await end(0);
    turn();
    assert.deepEqual(ns(batches[1]!.items), [1]);
  });

  it("runs an item given back in a later batch", async () => {
    const deferred: (() => void)[] = [];
    const seen: number[][] = [];
    let again = true;
    const batcher: Batcher<Item> = new Batcher<Item>({
      run: async (items) => {
        seen.push(ns(items));
        if (again) {
          again = false;
          batcher.add(items[0]!);
        }
      },
      keyOf: (item) => item.key,
      maxBatch: 4,
      maxRunning: 1,
      defer: (run) => deferred.push(run),
    });
    batcher.add({ key: "a", n: 7 });
    for (let turn = 0; turn < 3; turn++) {
      for (const run of deferred.splice(0)) run();
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    assert.deepEqual(seen, [[7], [7]]);
    assert.equal(batcher.waiting, 0);
  });
});
