import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { SerialJobs } from "../../lib/sync/mod.ts";

/** A queue whose runs start only when the test says. */
function manual(onError?: (error: unknown) => void) {
  const runs: (() => void)[] = [];
  const jobs = new SerialJobs({
    defer: (run) => runs.push(run),
    ...(onError === undefined ? {} : { onError }),
  });
  return { jobs, start: () => runs.splice(0).forEach((run) => run()), runs };
}

describe("SerialJobs", () => {
  it("runs nothing until the deferred run starts, then every job in order, one at a time", async () => {
    const { jobs, start, runs } = manual();
    const log: string[] = [];
    let active = 0;
    for (const name of ["a", "b", "c"]) {
      jobs.push(async () => {
        active++;
        assert.equal(active, 1, "one job at a time");
        await Promise.resolve();
        log.push(name);
        active--;
      });
    }
    assert.equal(runs.length, 1, "one run is scheduled for the burst");
    assert.equal(jobs.pending, 3);
    assert.deepEqual(log, []);
    start();
    await jobs.idle();
    assert.deepEqual(log, ["a", "b", "c"]);
    assert.equal(jobs.pending, 0);
  });

  it("reports a failing job and goes on with the next", async () => {
    const errors: unknown[] = [];
    const { jobs, start } = manual((error) => errors.push(error));
    const log: string[] = [];
    jobs.push(() => Promise.reject(new Error("boom")));
    jobs.push(async () => {
      log.push("after");
    });
    start();
    await jobs.idle();
    assert.deepEqual(log, ["after"]);
    assert.equal((errors[0] as Error).message, "boom");
  });

  it("takes jobs queued while running into the same run", async () => {
    const { jobs, start, runs } = manual();
    const log: string[] = [];
    jobs.push(async () => {
      log.push("first");
      jobs.push(async () => {
        log.push("second");
      });
    });
    start();
    await jobs.idle();
    assert.deepEqual(log, ["first", "second"]);
    assert.equal(runs.length, 0);
  });

  it("is idle at once when empty, and runs on setImmediate by default", async () => {
    const jobs = new SerialJobs();
    await jobs.idle();
    let ran = false;
    jobs.push(async () => {
      ran = true;
    });
    assert.equal(ran, false);
    await jobs.idle();
    assert.equal(ran, true);
  });
});

describe("SerialJobs with concurrency", () => {
  it("runs at most that many at once, started in order, and is idle when all are done", async () => {
    const runs: (() => void)[] = [];
    const jobs = new SerialJobs({ defer: (run) => runs.push(run), concurrency: 2 });
    const started: number[] = [];
    const release: (() => void)[] = [];
    for (let i = 0; i < 5; i++) {
      jobs.push(async () => {
        started.push(i);
        await new Promise<void>((resolve) => release.push(resolve));
      });
    }
    for (const run of runs.splice(0)) run();
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(started, [0, 1], "two at once");
    release.shift()!();
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(started, [0, 1, 2], "the next starts when one ends");
    assert.equal(jobs.pending, 4);
    let idle = false;
    const waiting = jobs.idle().then(() => (idle = true));
    while (release.length > 0 || started.length < 5) {
      release.shift()?.();
      await new Promise((resolve) => setImmediate(resolve));
    }
    await waiting;
    assert.equal(idle, true);
    assert.deepEqual(started, [0, 1, 2, 3, 4]);
  });

  it("refuses a concurrency that is not a positive integer", () => {
    assert.throws(() => new SerialJobs({ concurrency: 0 }), RangeError);
  });
});

describe("SerialJobs.pushOnce", () => {
  it("queues a key's job once while it waits, and again once it has started", async () => {
    const runs: (() => void)[] = [];
    const jobs = new SerialJobs({ defer: (run) => runs.push(run) });
    const log: string[] = [];
    let release: (() => void) | undefined;
    assert.equal(
      jobs.pushOnce("a", async () => {
        log.push("a1");
        await new Promise<void>((resolve) => (release = resolve));
      }),
      true,
    );
    assert.equal(
      jobs.pushOnce("a", async () => void log.push("a-again")),
      false,
      "a's job waits: not queued again",
    );
    assert.equal(
      jobs.pushOnce("b", async () => void log.push("b")),
      true,
      "another key is its own",
    );
    assert.equal(jobs.pending, 2);
    for (const run of runs.splice(0)) run();
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(log, ["a1"]);
    // a's job has started: work queued now needs a run of its own.
    assert.equal(jobs.pushOnce("a", async () => void log.push("a2")), true);
    release!();
    await jobs.idle();
    assert.deepEqual(log, ["a1", "b", "a2"]);
  });
});
