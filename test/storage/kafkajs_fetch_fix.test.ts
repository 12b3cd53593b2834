// kafkajs 2.2's fetch manager, stopped while it rebalances its fetchers (the
// brokers' node ids changed), went on with fetchers made after the stop,
// each spinning on an empty fetch without yielding: the relay froze at
// shutdown. Driven here with kafkajs's own fetch manager and the race made to
// happen: the stop comes at the moment a fetch finds the node ids changed.
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { describe, it } from "node:test";
import {
  type CreateFetchManager,
  mendKafkajsFetchManager,
  stoppableFetchManager,
} from "../../lib/storage/_kafkajs_fetch_fix.ts";

const require = createRequire(import.meta.url);
const original = require(
  require.resolve("kafkajs/src/consumer/fetchManager.js"),
) as CreateFetchManager;

/** A fetch manager over one node, then two; the runner's stop when the change is seen. */
async function raceStopWithRebalance(make: CreateFetchManager): Promise<string> {
  const logger = {
    namespace: () => logger,
    debug: () => {},
    info: () => {},
    warn: () => {},
    error: () => {},
  };
  let nodeIds = [1];
  let running = true;
  let fetches = 0;
  let lookups = 0;
  let stopping: Promise<void> | undefined;
  const manager = make(
    {
      logger,
      handler: async () => {},
      concurrency: 1,
      getNodeIds: () => {
        lookups++;
        // The third look-up is the check of the second fetch: the ids have changed, and the runner
        // stops now, while the manager is about to rebalance.
        if (lookups === 3) {
          nodeIds = [1, 2];
          running = false;
          stopping = manager.stop();
        }
        return nodeIds;
      },
      fetch: async () => {
        // As kafkajs's runner: a stopped runner answers at once, with nothing.
        if (++fetches > 100_000) throw new Error("spinning");
        if (running) await new Promise((resolve) => setImmediate(resolve));
        return [];
      },
    } as unknown as Parameters<CreateFetchManager>[0],
  );
  const outcome = await manager.start().then(() => "ended", (error: Error) => error.message);
  await stopping;
  return `${outcome} after ${fetches < 1000 ? "few" : "many"} fetches`;
}

describe("kafkajs's fetch manager, mended", () => {
  it("as kafkajs has it, spins on empty fetches after a stop that races a rebalance", async () => {
    assert.equal(await raceStopWithRebalance(original), "spinning after many fetches");
  });

  it("mended, ends its fetchers made after the stop, and its start returns", async () => {
    assert.equal(
      await raceStopWithRebalance(stoppableFetchManager(original)),
      "ended after few fetches",
    );
  });

  it("is put in kafkajs's place before kafkajs loads, once", async () => {
    assert.equal(mendKafkajsFetchManager(), true);
    assert.equal(mendKafkajsFetchManager(), true, "mended once, seen as mended");
    await import("kafkajs");
    const loaded = require(require.resolve("kafkajs/src/consumer/fetchManager.js")) as unknown;
    assert.notEqual(loaded, original);
    assert.equal(stoppableFetchManager(loaded as CreateFetchManager), loaded, "not mended twice");
  });
});
