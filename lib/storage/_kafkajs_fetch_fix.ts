// A mend for a race in kafkajs 2.2 (its last release), which froze a relay
// for good at shutdown: a consumer stopped while its fetch manager was
// rebalancing its fetchers (the brokers' node ids had changed, as when a
// broker goes down and comes back) went on with fetchers made after the stop.
// Their runner no longer running, each fetch answers [] at once, and the
// fetcher asks again in a loop of promise turns that never yields to the
// event loop: no timer, socket or signal is served again, at 100% of a core.
// The stop only stopped the fetchers it saw. Mended here by handing kafkajs a
// fetch manager whose fetch, once its manager has been asked to stop, stops
// every fetcher there is instead of fetching. kafkajs loads its modules with
// `require`, so the mended module is put in their place before kafkajs loads.
import { createRequire } from "node:module";

/** What kafkajs's fetch manager is made from, as far as the mend needs it. */
interface FetchManagerOptions {
  readonly fetch: (nodeId: number) => Promise<unknown[]>;
}

/** What kafkajs's fetch manager gives, as far as the mend needs it. */
interface FetchManager {
  start(): Promise<void>;
  stop(): Promise<void>;
  getFetchers(): readonly { stop(): Promise<void> }[];
}

/** kafkajs's `createFetchManager`. */
export type CreateFetchManager = (options: FetchManagerOptions) => FetchManager;

/** Whether the fetch manager kafkajs loaded is the mended one. */
function isMended(require: NodeJS.Require): boolean {
  const loaded = require.cache[require.resolve("kafkajs/src/consumer/fetchManager.js")];
  return (loaded?.exports as Record<symbol, unknown> | undefined)?.[MENDED] === true;
}

/** Marks a fetch manager maker already mended. */
const MENDED = Symbol.for("tributary.kafkajsFetchManagerMended");

/**
 * A fetch manager maker like `original`, whose managers, once `stop` has
 * been called, stop every fetcher that fetches (those made by a rebalance
 * after the stop too) rather than letting it spin.
 * @param original kafkajs's `createFetchManager`
 * @returns the mended maker
 */
export function stoppableFetchManager(original: CreateFetchManager): CreateFetchManager {
  if ((original as unknown as Record<symbol, unknown>)[MENDED] === true) return original;
  const mended: CreateFetchManager = (options) => {
    let stopped = false;
    // Called only once fetchers run, after `made` is set.
    const fetch = (nodeId: number): Promise<unknown[]> => {
      if (!stopped) return options.fetch(nodeId);
      // Each fetcher ends at its loop's next test; the one asking is among them.
      for (const fetcher of made.getFetchers()) void fetcher.stop();
      return Promise.resolve([]);
    };
    const made = original({ ...options, fetch });
    return {
      ...made,
      stop: () => {
        stopped = true;
        return made.stop();
      },
    };
  };
  (mended as unknown as Record<symbol, unknown>)[MENDED] = true;
  return mended;
}

/**
 * Puts the mended fetch manager in the place of kafkajs's, before kafkajs is
 * loaded. Only kafkajs 2.x, whose consumer takes its fetch manager from
 * `src/consumer/fetchManager.js`, is mended; any other leaves kafkajs as it is.
 * @returns whether kafkajs was mended
 */
export function mendKafkajsFetchManager(): boolean {
  const require = createRequire(import.meta.url);
  try {
    const version = (require("kafkajs/package.json") as { version: string }).version;
    if (!version.startsWith("2.")) return false;
    // Loaded already (by another importer): its consumer holds the manager it was given.
    if (require.cache[require.resolve("kafkajs/src/consumer/runner.js")] !== undefined) {
      return isMended(require);
    }
    const path = require.resolve("kafkajs/src/consumer/fetchManager.js");
    const original = require(path) as unknown;
    const cached = require.cache[path];
    if (typeof original !== "function" || cached === undefined) return false;
    cached.exports = stoppableFetchManager(original as CreateFetchManager);
    return true;
  } catch {
    return false;
  }
}
