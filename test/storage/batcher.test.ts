import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Batcher } from "../../lib/storage/batcher.ts";

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

  it("answers an item that waited timeoutMs behind batches that hang, and never runs it", async () => {
    let time = 0;
    const timers: { at: number; task: () => void; live: boolean }[] = [];
    const deferred: (() => void)[] = [];
    const batches: number[][] = [];
    const ends: (() => void)[] = [];
    const expired: string[] = [];
    const batcher = new Batcher<Item>({
      run: (items) => {
        batches.push(ns(items));
        return new Promise<void>((end) => ends.push(end));
      },
      keyOf: (item) => item.key,
      maxBatch: 2,
      maxRunning: 1,
      defer: (run) => deferred.push(run),
      timeoutMs: 3000,
      expire: (item, why) => void expired.push(`${item.n} ${why}`),
      now: () => time,
      setTimer: (task, ms) => {
        const timer = { at: time + ms, task, live: true };
        timers.push(timer);
        return () => void (timer.live = false);
      },
    });
    /** Moves the clock on, firing the timers due. */
    const advance = (ms: number) => {
      time += ms;
      for (const timer of timers.splice(0)) {
        if (timer.live && timer.at <= time) timer.task();
        else if (timer.live) timers.push(timer);
      }
    };
    const turn = () => {
      for (const run of deferred.splice(0)) run();
    };
    batcher.add({ key: "a", n: 0 });
    batcher.add({ key: "b", n: 1 });
    turn();
    advance(1000);
    batcher.add({ key: "c", n: 2 });
    turn();
    assert.deepEqual(batches, [[0, 1]], "the first batch hangs; the next waits");
    advance(2000);
    assert.deepEqual(
      expired,
      ["0 timeout", "1 timeout"],
      "the hung batch's items are answered at their deadline",
    );
    assert.equal(batcher.waiting, 1);
    advance(1000);
    assert.deepEqual(
      expired,
      ["0 timeout", "1 timeout", "2 timeout"],
      "the one waiting behind it too, 3000 ms after it came",
    );
    assert.equal(batcher.waiting, 0, "and it is out of the queue");
    ends[0]!();
    await new Promise<void>((resolve) => setImmediate(resolve));
    turn();
    assert.deepEqual(batches, [[0, 1]], "never run once expired");
    const again = { key: "a", n: 0 };
    batcher.add(again);
    turn();
    assert.deepEqual(batches.at(-1), [0], "a new item of the same key runs");
    ends[1]!();
    await new Promise<void>((resolve) => setImmediate(resolve));
    advance(5000);
    assert.equal(expired.length, 3, "an item done in time does not expire");
  });

  it("answers an item beyond maxWaiting at once", () => {
    const expired: string[] = [];
    const batcher = new Batcher<Item>({
      run: () => new Promise<void>(() => {}),
      keyOf: (item) => item.key,
      maxBatch: 1,
      maxRunning: 1,
      defer: () => {},
      maxWaiting: 2,
      expire: (item, why) => void expired.push(`${item.n} ${why}`),
    });
    for (let n = 0; n < 4; n++) batcher.add({ key: `k${n}`, n });
    assert.deepEqual(expired, ["2 full", "3 full"]);
    assert.equal(batcher.waiting, 2);
  });

  it("needs expire with a bound", () => {
    assert.throws(
      () =>
        new Batcher<Item>({
          run: async () => {},
          keyOf: (item) => item.key,
          maxBatch: 1,
          maxRunning: 1,
          timeoutMs: 10,
        }),
      { name: "TypeError" },
    );
  });
});
