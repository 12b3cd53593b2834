import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { startPeriodicTask } from "../../lib/http/start_periodic_task.ts";

/** A timer the test ticks by hand, and the outcomes told. */
function harness() {
  let tick: (() => void) | undefined;
  let stopped = false;
  const told: string[] = [];
  const every = (task: () => void, ms: number) => {
    assert.equal(ms, 1000);
    tick = task;
    return () => void (stopped = true);
  };
  const outcomes = {
    failed: (error: unknown) => void told.push(`failed ${(error as Error).message}`),
    recovered: () => void told.push("ok"),
  };
  /** Ticks once and lets the run settle. */
  const turn = async () => {
    tick!();
    await new Promise<void>((resolve) => setImmediate(resolve));
  };
  return { every, outcomes, told, turn, stopped: () => stopped };
}

describe("startPeriodicTask()", () => {
  it("tells a rejecting run as a failure, never as an unhandled rejection, and runs again the next period", async () => {
    const { every, outcomes, told, turn } = harness();
    const unhandled: unknown[] = [];
    const listener = (reason: unknown) => void unhandled.push(reason);
    process.on("unhandledRejection", listener);
    try {
      const results = [new Error("ECONNREFUSED"), new Error("ECONNREFUSED"), undefined];
      startPeriodicTask(() => {
        const next = results.shift();
        return next === undefined ? Promise.resolve() : Promise.reject(next);
      }, { everyMs: 1000, outcomes, every });
      await turn();
      await turn();
      await turn();
      await new Promise<void>((resolve) => setImmediate(resolve));
      assert.deepEqual(told, ["failed ECONNREFUSED", "failed ECONNREFUSED", "ok"]);
      assert.deepEqual(unhandled, []);
    } finally {
      process.off("unhandledRejection", listener);
    }
  });

  it("tells a task that throws at once as a failure too", async () => {
    const { every, outcomes, told, turn } = harness();
    startPeriodicTask(() => {
      throw new Error("bad state");
    }, { everyMs: 1000, outcomes, every });
    await turn();
    assert.deepEqual(told, ["failed bad state"]);
  });

  it("skips a tick while the last run is still under way (a hung backend), and stops after it", async () => {
    const { every, outcomes, told, turn, stopped } = harness();
    let runs = 0;
    let finish: (() => void) | undefined;
    const stop = startPeriodicTask(() => {
      runs++;
      return new Promise<void>((resolve) => (finish = resolve));
    }, { everyMs: 1000, outcomes, every });
    await turn();
    await turn();
    await turn();
    assert.equal(runs, 1, "one run at a time");
    let done = false;
    const stopping = stop().then(() => (done = true));
    assert.equal(stopped(), true, "the timer is stopped at once");
    await new Promise<void>((resolve) => setImmediate(resolve));
    assert.equal(done, false, "stop waits for the run under way");
    finish!();
    await stopping;
    assert.deepEqual(told, ["ok"]);
    await turn();
    assert.equal(runs, 1, "no run after stop");
  });

  it("survives outcomes that throw", async () => {
    const { every, turn } = harness();
    let runs = 0;
    startPeriodicTask(() => {
      runs++;
      return Promise.reject(new Error("down"));
    }, {
      everyMs: 1000,
      outcomes: {
        failed: () => {
          throw new Error("the log is broken");
        },
        recovered: () => {},
      },
      every,
    });
    await turn();
    await turn();
    assert.equal(runs, 2);
  });

  it("leaves a failure counted elsewhere (the backend's own outage) out of its outcomes", async () => {
    const { every, outcomes, told, turn } = harness();
    const errors = [new Error("backend away"), new Error("a bug")];
    startPeriodicTask(() => Promise.reject(errors.shift()), {
      everyMs: 1000,
      outcomes,
      every,
      countedElsewhere: (error) => (error as Error).message === "backend away",
    });
    await turn();
    await turn();
    assert.deepEqual(told, ["failed a bug"]);
  });
});
