/**
 * The relay's queue and configuration on Redis: every operation one Lua
 * script, shared by every relay process on the same server. Needs the
 * optional peer dependency `redis`, imported only when a queue is opened.
 * @module
 */
export { openRedisQueue, openRedisRelay } from "./open_redis_queue.ts";
export type { OpenRedisQueueOptions, RedisRelayStores } from "./open_redis_queue.ts";
export { RedisQueue } from "./redis_queue.ts";
export type { RedisQueueOptions } from "./redis_queue.ts";
export { RedisConfigStore } from "./redis_config_store.ts";
export type { RedisConfigStoreOptions } from "./redis_config_store.ts";
// The connection lives with the other backends in storage; exported here as before.
export { connectRedis } from "../../storage/mod.ts";
export type { ConnectRedisOptions, RedisScripts } from "../../storage/mod.ts";
