import { ConfigError, redactUrl } from "../../config/mod.ts";
import type { ServiceLog } from "../../http/mod.ts";
import { describeError } from "../describe_error.ts";
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
  /** Where a lost connection is reported (the client reconnects by itself). */
  log: ServiceLog;
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
  /** Closing it closes the connection. */
  readonly queue: RedisQueue;
  /** Close it before the queue. */
  readonly config: RedisConfigStore;
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
  try {
    const scripts = await connectRedis(options.url, {
      onError: (error) => options.log.error(`Relay queue: Redis at ${where}: ${describeError(error)}`),
    });
    return {
      queue: new RedisQueue(scripts, { prefix: options.keyPrefix, capacity: options.capacity }),
      config: new RedisConfigStore(scripts, {
        prefix: options.keyPrefix,
        onError: (error) => options.log.error(`Relay endpoints: Redis at ${where}: ${describeError(error)}`),
      }),
    };
  } catch (error) {
    throw new ConfigError("REDIS_URL", `Cannot start: cannot reach Redis at ${where} (REDIS_URL): ${describeError(error)}`);
  }
}
