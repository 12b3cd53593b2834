import { createHash } from "node:crypto";
import type { RedisScripts } from "./redis_queue.ts";

/** Options of {@linkcode connectRedis}. */
export interface ConnectRedisOptions {
  /** Told of connection errors the client survives by reconnecting. */
  readonly onError?: (error: unknown) => void;
  /**
   * How long the first connection may take, milliseconds.
   * @default {5000}
   */
  readonly connectTimeoutMs?: number;
}

/**
 * Connects to Redis with the official `redis` client, an optional peer
 * dependency imported only here, and runs scripts by their SHA-1 (loading a
 * script the server does not know yet). After the first connection, a lost
 * one is retried for ever, backing off to 2 s; meanwhile commands fail at once.
 * @param url e.g. `redis://127.0.0.1:6379`
 * @param options error hook and first-connection timeout
 * @returns the connection's scripts
 * @throws {Error} when the `redis` package is missing or the first connection fails
 */
export async function connectRedis(url: string, options: ConnectRedisOptions = {}): Promise<RedisScripts> {
  let redis: typeof import("redis");
  try {
    redis = await import("redis");
  } catch {
    throw new Error("the redis package is not installed (npm install redis)");
  }
  let connected = false;
  const client = redis.createClient({
    url,
    // While the connection is down, commands fail at once (intake answers 503) instead of waiting unbounded.
    disableOfflineQueue: true,
    socket: {
      connectTimeout: options.connectTimeoutMs ?? 5000,
      reconnectStrategy: (retries: number, cause: Error) => (connected ? Math.min(50 * 2 ** Math.min(retries, 6), 2000) : cause),
    },
  });
  client.on("error", (error: unknown) => {
    if (connected) options.onError?.(error);
  });
  await client.connect();
  connected = true;
  const shas = new Map<string, string>();
  return {
    async run(script, args) {
      let sha = shas.get(script);
      if (sha === undefined) shas.set(script, (sha = createHash("sha1").update(script).digest("hex")));
      try {
        return await client.evalSha(sha, { arguments: [...args] });
      } catch (error) {
        if (!(error instanceof Error) || !error.message.startsWith("NOSCRIPT")) throw error;
        return await client.eval(script, { arguments: [...args] });
      }
    },
    async close() {
      await client.close();
    },
  };
}
