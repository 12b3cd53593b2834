import { createHash } from "node:crypto";
import { SharedConnections } from "./_shared_connections.ts";

/** A Redis connection as the stores use it: Lua scripts, each one atomic on the server. */
export interface RedisScripts {
  /**
   * Runs a Lua script with string arguments (no declared keys: every key
   * shares its store's prefix) and gives the reply as Redis sends it.
   */
  run(script: string, args: readonly string[]): Promise<unknown>;
  close(): Promise<void>;
}

/** Options of {@linkcode connectRedis}. */
export interface ConnectRedisOptions {
  /** Told of connection errors the client survives by reconnecting. */
  readonly onError?: (error: unknown) => void;
  /** Told when a lost connection is back (and ready for commands), after the client reconnected. */
  readonly onReady?: () => void;
  /**
   * How long the first connection may take, milliseconds.
   * @default {5000}
   */
  readonly connectTimeoutMs?: number;
  /**
   * How long a script may wait for its answer, milliseconds, before it fails
   * (a Redis that hangs must not hang the relay).
   * @default {5000}
   */
  readonly commandTimeoutMs?: number;
}

/**
 * Connects to Redis with the official `redis` client, an optional peer
 * dependency imported only here, and runs scripts by their SHA-1 (loading a
 * script the server does not know yet). After the first connection, a lost
 * one is retried for ever, backing off to 2 s; meanwhile commands fail at once.
 * A script not answered within `commandTimeoutMs` fails; one timer checks
 * them all (the client's own per-command timeout makes an AbortSignal and a
 * timer per command, which tripled the cost of a call).
 * @param url e.g. `redis://127.0.0.1:6379`
 * @param options error and reconnection hooks, and timeouts
 * @returns the connection's scripts
 * @throws {Error} when the `redis` package is missing or the first connection fails
 */
export async function connectRedis(
  url: string,
  options: ConnectRedisOptions = {},
): Promise<RedisScripts> {
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
    commandOptions: { timeout: 0 },
    socket: {
      connectTimeout: options.connectTimeoutMs ?? 5000,
      reconnectStrategy: (
        retries: number,
        cause: Error,
      ) => (connected ? Math.min(50 * 2 ** Math.min(retries, 6), 2000) : cause),
    },
  });
  client.on("error", (error: unknown) => {
    if (connected) options.onError?.(error);
  });
  client.on("ready", () => {
    if (connected) options.onReady?.();
  });
  await client.connect();
  connected = true;
  const shas = new Map<string, string>();
  const timeoutMs = options.commandTimeoutMs ?? 5000;
  // Waiting calls in the order they were made, so the oldest come first.
  const waiting = new Set<{ readonly at: number; readonly reject: (error: Error) => void }>();
  const watchdog = setInterval(() => {
    const limit = Date.now() - timeoutMs;
    for (const call of waiting) {
      if (call.at > limit) break;
      waiting.delete(call);
      call.reject(new Error(`Redis did not answer within ${timeoutMs} ms`));
    }
  }, Math.min(1000, timeoutMs));
  watchdog.unref();
  async function evaluate(script: string, args: readonly string[]): Promise<unknown> {
    let sha = shas.get(script);
    if (sha === undefined) shas.set(script, sha = createHash("sha1").update(script).digest("hex"));
    try {
      return await client.evalSha(sha, { arguments: [...args] });
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith("NOSCRIPT")) throw error;
      return await client.eval(script, { arguments: [...args] });
    }
  }
  return {
    run(script, args) {
      return new Promise((resolve, reject) => {
        const call = { at: Date.now(), reject };
        waiting.add(call);
        evaluate(script, args).then(
          (reply) => waiting.delete(call) && resolve(reply),
          (error: unknown) => waiting.delete(call) && reject(error),
        );
      });
    },
    async close() {
      clearInterval(watchdog);
      await client.close();
    },
  };
}

/** Redis connections shared by whoever asks for one: what {@linkcode shareRedis} gives. */
export interface SharedRedis {
  /**
   * A connection as {@linkcode connectRedis} gives one, on the one
   * connection of its URL and timeouts, opened when first asked for: its
   * `onError` and `onReady` hear of that connection (a lost connection is
   * every caller's outage), and its `close` stops telling them and leaves
   * the connection open for the others.
   */
  readonly connect: typeof connectRedis;
  /** Closes every connection opened; a later `connect` opens anew. */
  close(): Promise<void>;
}

/**
 * Redis connections opened once per URL (and timeouts) and shared: an app's
 * relay queue (`REDIS_URL`) and rate limits (`RATE_LIMIT_REDIS_URL`) naming
 * one server use one connection, each with its own outage lines and
 * readiness. Every store's work is a Lua script (no blocking command, no
 * subscription), so no caller needs a connection of its own.
 * @param connect opens a connection
 * @returns the shared connections, none opened yet
 */
export function shareRedis(connect: typeof connectRedis = connectRedis): SharedRedis {
  const shared = new SharedConnections<RedisScripts>();
  return {
    async connect(url, options = {}) {
      const { onError, onReady, ...settings } = options;
      const key = JSON.stringify([url, settings.connectTimeoutMs, settings.commandTimeoutMs]);
      const lease = await shared.lease(
        key,
        (hooks) => connect(url, { ...settings, ...hooks }),
        { onError, onReady },
      );
      let closed = false;
      return {
        run: (script, args) =>
          closed
            ? Promise.reject(new Error("Cannot run a Redis script: the connection is closed"))
            : lease.connection.run(script, args),
        close() {
          closed = true;
          lease.release();
          return Promise.resolve();
        },
      };
    },
    close: () => shared.close(),
  };
}
