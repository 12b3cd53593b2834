// The lifecycle's order with fake services that write down what is done to
// them: started in order, drained together, closed in reverse, backends last.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Lifecycle } from "../../lib/app/lifecycle.ts";
import { createRouter, type RunningService } from "../../lib/http/mod.ts";

/** A promise and the functions that settle it. */
function held(): { promise: Promise<void>; resolve: () => void; reject: (error: Error) => void } {
  let resolve: () => void = () => {};
  let reject: (error: Error) => void = () => {};
  const promise = new Promise<void>((yes, no) => {
    resolve = yes;
    reject = no;
  });
  return { promise, resolve, reject };
}

interface FakeOptions {
  /** What its drain waits for. */
  readonly drain?: Promise<void>;
  /** Its close fails with this. */
  readonly closeFails?: Error;
}

/** A service that notes `drain <name>`, `drained <name>` and `close <name>` in `events`. */
function fake(name: string, events: string[], options: FakeOptions = {}): RunningService {
  return {
    name,
    prefixes: [`/${name}`],
    handler: createRouter([]),
    describe: () => ({ endpoints: [], credentials: [], notes: [] }),
    drain: async () => {
      events.push(`drain ${name}`);
      await options.drain;
      events.push(`drained ${name}`);
    },
    close: () => {
      events.push(`close ${name}`);
      return options.closeFails === undefined
        ? Promise.resolve()
        : Promise.reject(options.closeFails);
    },
  };
}

/** A lifecycle whose backends note `close backends`. */
function lifecycle(events: string[]): Lifecycle {
  return new Lifecycle(() => {
    events.push("close backends");
    return Promise.resolve();
  });
}

describe("Lifecycle", () => {
  it("starts the steps in order and keeps their services in that order", async () => {
    const events: string[] = [];
    const life = lifecycle(events);
    await life.start([
      () => Promise.resolve([fake("water", events), fake("explorer", events)]),
      () => Promise.resolve([fake("sync", events)]),
      () => Promise.resolve([fake("relay", events)]),
    ]);
    assert.deepEqual(life.running.map((service) => service.name), [
      "water",
      "explorer",
      "sync",
      "relay",
    ]);
  });

  it("stops by draining every service, then closing them the last started first, then the backends", async () => {
    const events: string[] = [];
    const life = lifecycle(events);
    await life.start([
      () => Promise.resolve([fake("water", events), fake("auth", events)]),
      () => Promise.resolve([fake("sync", events)]),
      () => Promise.resolve([fake("relay", events)]),
    ]);
    await life.stop();
    const firstClose = events.findIndex((event) => event.startsWith("close "));
    assert.deepEqual(
      events.slice(0, firstClose).filter((event) => event.startsWith("drained ")).sort(),
      ["drained auth", "drained relay", "drained sync", "drained water"],
      "every drain ends before the first close",
    );
    assert.deepEqual(events.slice(firstClose), [
      "close relay",
      "close sync",
      "close auth",
      "close water",
      "close backends",
    ]);
  });

  it("drains the services together: each drain has begun before the first one ends", async () => {
    const events: string[] = [];
    const slow = held();
    const life = lifecycle(events);
    await life.start([
      () => Promise.resolve([fake("a", events, { drain: slow.promise }), fake("b", events)]),
    ]);
    const stopping = life.stop();
    // b's drain began, and ended, while a's is still held.
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(events, ["drain a", "drain b", "drained b"]);
    slow.resolve();
    await stopping;
    assert.deepEqual(events.slice(3), ["drained a", "close b", "close a", "close backends"]);
  });

  it("closes the rest and the backends when a drain or a close fails, then throws the first failure", async () => {
    const events: string[] = [];
    const draining = held();
    const life = lifecycle(events);
    await life.start([() =>
      Promise.resolve([
        fake("a", events, { drain: draining.promise }),
        fake("b", events, { closeFails: new Error("b cannot close") }),
        fake("c", events),
      ])]);
    draining.reject(new Error("a cannot drain"));
    await assert.rejects(life.stop(), { message: "a cannot drain" });
    assert.deepEqual(events.filter((event) => !event.startsWith("drain")), [
      "close c",
      "close b",
      "close a",
      "close backends",
    ]);
  });

  it("stops what started when a step fails, in the same order, and throws the step's error", async () => {
    const events: string[] = [];
    const life = lifecycle(events);
    await assert.rejects(
      life.start([
        () => Promise.resolve([fake("water", events)]),
        () => Promise.resolve([fake("sync", events)]),
        () => Promise.reject(new Error("the relay cannot start")),
        () => Promise.resolve([fake("never", events)]),
      ]),
      { message: "the relay cannot start" },
    );
    assert.deepEqual(events, [
      "drain water",
      "drain sync",
      "drained water",
      "drained sync",
      "close sync",
      "close water",
      "close backends",
    ]);
  });
});
