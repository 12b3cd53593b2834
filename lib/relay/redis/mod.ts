/**
 * The relay's queue on Redis: every operation one Lua script, shared by every
 * relay process on the same server. Needs the optional peer dependency
 * `redis`, imported only when a queue is opened.
 * @module
 */
export { openRedisQueue } from "./open_redis_queue.ts";
export type { OpenRedisQueueOptions } from "./open_redis_queue.ts";
export { RedisQueue } from "./redis_queue.ts";
export type { RedisQueueOptions, RedisScripts } from "./redis_queue.ts";
export { connectRedis } from "./redis_client.ts";
export type { ConnectRedisOptions } from "./redis_client.ts";
