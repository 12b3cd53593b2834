import { ConfigError, redactUrl } from "../../config/mod.ts";
import type { ReadinessProbe, ServiceLog } from "../../http/mod.ts";
import { OutageLog } from "../../log/mod.ts";
import { describeError } from "../describe_error.ts";
import { RelayError } from "../errors.ts";
import { connectRedis } from "../../storage/mod.ts";
import { RedisConfigStore } from "./redis_config_store.ts";
import { RedisQueue } from "./redis_queue.ts";

/** Options of {@linkcode openRedisQueue}. */
export interface OpenRedisQueueOptions {
  /** `REDIS_URL`: `redis://[user:password@]host[:port][/db]` or `rediss://...`. */
  url: string;
  /** Prefix of the relay's keys. */
  keyPrefix: string;
  /** Jobs the queue holds at most, over every process. */
  capacity: number;
  /** Where a lost connection is reported (the client reconnects by itself): a line when it is lost, one when it is back. */
  log: ServiceLog;
  /**
   * Wall clock, milliseconds since the epoch (how long an outage lasted).
   * @default {Date.now}
   */
  now?: () => number;
  /**
   * Connects to Redis: an app gives its backends' shared connections
   * (`Backends.redis`), whose connection outlives the queue.
   * @default {connectRedis}: a connection of the queue's own, closed with it
   */
  connect?: typeof connectRedis;
}

/**
 * Connects to Redis with the optional peer dependency `redis` and opens the
 * relay's queue on it: shared by every relay process on the same server and
 * prefix, nothing to save at shutdown.
 * @param options the server, prefix, capacity and log
 * @returns the queue
 * @throws {ConfigError} naming REDIS_URL (its password hidden) when Redis cannot be reached
 * @example
 * ```ts
 * const queue = await openRedisQueue({ url: "redis://127.0.0.1:6379", keyPrefix: "{tributary}", capacity: 100_000, log: console });
 * ```
 */
export async function openRedisQueue(options: OpenRedisQueueOptions): Promise<RedisQueue> {
  return (await openRedisRelay(options)).queue;
}

/** The relay's queue and configuration on one Redis connection. */
export interface RedisRelayStores {
  /** Closing it closes the connection (or lets go of a shared one). */
  readonly queue: RedisQueue;
  /** Close it before the queue. */
  readonly config: RedisConfigStore;
  /**
   * Redis's outages, each logged as two lines (lost, then back with the
   * failures counted): the connection tells it, and so may the queue's users
   * of the failures they meet meanwhile.
   */
  readonly outage: OutageLog;
  /** Asks Redis whether it answers (one round trip), for `/health/ready`; tells {@linkcode outage} too. */
  readonly probe: ReadinessProbe;
}

/**
 * Connects to Redis as {@linkcode openRedisQueue} does and opens, on the same
 * connection, the relay's queue and the store of its endpoints (every relay
 * process on the same server and prefix sees a change within 250 ms).
 * @param options the server, prefix, capacity and log
 * @returns the queue and the configuration store
 * @throws {ConfigError} naming REDIS_URL (its password hidden) when Redis cannot be reached
 */
export async function openRedisRelay(options: OpenRedisQueueOptions): Promise<RedisRelayStores> {
  const where = redactUrl(options.url);
  const outage = new OutageLog(
    options.log,
    `Relay queue: Redis at ${where}`,
    options.now ?? Date.now,
  );
  try {
    const scripts = await (options.connect ?? connectRedis)(options.url, {
      onError: (error) => outage.failed(error),
      onReady: () => outage.recovered(),
    });
    return {
      queue: new RedisQueue(scripts, { prefix: options.keyPrefix, capacity: options.capacity }),
      config: new RedisConfigStore(scripts, {
        prefix: options.keyPrefix,
        onError: (error) => {
          if (error instanceof RelayError && error.code === "ERR_RELAY_QUEUE_UNAVAILABLE") {
            outage.failed(error);
          } else options.log.error(`Relay endpoints: Redis at ${where}: ${describeError(error)}`);
        },
      }),
      outage,
      probe: {
        part: `queue: Redis at ${where}`,
        check: async () => void (await outage.watch(scripts.run("return 1", []))),
      },
    };
  } catch (error) {
    throw new ConfigError(
      "REDIS_URL",
      `Cannot start: cannot reach Redis at ${where} (REDIS_URL): ${describeError(error)}`,
    );
  }
}
