import { redactUrl } from "../config/mod.ts";
import type { ServiceLog } from "../http/mod.ts";
import { OutageLog } from "../log/mod.ts";
import {
  type connectKafka,
  connectPostgres,
  type connectRedis,
  openStateDir,
  type SqlPool,
  type StateDir,
  type StorageConfig,
} from "../storage/mod.ts";
import { shareKafka, shareRedis } from "../storage/_internal.ts";

/**
 * The backends an app's modules share, resolved here, each opened once,
 * when first asked for, and closed by the app after every module: the state
 * folder (`STATE_DIR`, whose journals the modules open), the PostgreSQL pool
 * of `DATABASE_URL`, and connections to Redis and Kafka. Which Redis or
 * Kafka a module uses is its own setting (`REDIS_URL`,
 * `RATE_LIMIT_REDIS_URL`, `KAFKA_BROKER`), and so are its outage lines and
 * readiness probes, told by the hooks it connects with; the connection is
 * the backends', one per server.
 */
export interface Backends {
  /**
   * The state folder's path as `STATE_DIR` names it (read once, with the
   * storage settings), opened or not: what a module keeps there besides
   * journals (the datasets' snapshots) goes under it. Empty when state is
   * kept in memory only: {@linkcode Backends.stateDir} then refuses.
   */
  readonly stateDirPath: string;
  /**
   * The state folder, opened lazily: a folder not there yet is made and
   * locked at its first write or at {@linkcode Backends.hold}, whichever comes first.
   * @throws {ConfigError} naming STATE_DIR when another process holds it, or it is empty (state kept in memory)
   */
  stateDir(): Promise<StateDir>;
  /**
   * The pool of `DATABASE_URL`, connected at the first call; its outages
   * logged as one line when it stops answering and one when it is back.
   * Undefined without `DATABASE_URL`.
   */
  readonly postgres: (() => Promise<SqlPool>) | undefined;
  /**
   * Connects to Redis as `connectRedis` does, on one connection per URL
   * (and timeouts) for every module, opened at the first call (the
   * `redis` package imported then): the relay's queue and the rate limits
   * naming one server share it. A caller's `onError` and `onReady` hear of
   * that connection; its `close` stops telling them and leaves the
   * connection to the others, which {@linkcode Backends.close} closes.
   * @throws {Error} when the `redis` package is missing or the first connection fails
   */
  readonly redis: typeof connectRedis;
  /**
   * Connects to Kafka as `connectKafka` does, on one connection per broker
   * list (and settings) for every module, opened at the first call (the
   * `kafkajs` package imported then): its producer and admin client are
   * shared. A consumer group's member cannot be shared, so each
   * `subscribe` still makes the caller a consumer of its own, left at its
   * close; the connection is closed by {@linkcode Backends.close}.
   * @throws {Error} when the `kafkajs` package is missing or no broker answers
   */
  readonly kafka: typeof connectKafka;
  /** Makes and locks the state folder now, if one was asked for (as the app starts serving). */
  hold(): Promise<void>;
  /** Closes what was opened: the Redis and Kafka connections and the pool, then the state folder's lock. */
  close(): Promise<void>;
}

/** What {@linkcode openBackends} needs besides the storage settings. */
export interface OpenBackendsOptions {
  /** Where the database's outages are said. */
  readonly log: ServiceLog;
  /** Wall clock, milliseconds since the epoch (how long an outage lasted). */
  readonly now: () => number;
}

/**
 * The backends of a configuration, none opened yet.
 * @param config the storage settings (`STATE_DIR`, `DATABASE_URL` and their limits)
 * @param options the log and the clock
 * @returns the backends
 */
export function openBackends(config: StorageConfig, options: OpenBackendsOptions): Backends {
  let state: Promise<StateDir> | undefined;
  let pool: Promise<SqlPool> | undefined;
  const redis = shareRedis();
  const kafka = shareKafka();
  const url = config.databaseUrl;
  const connect = (): Promise<SqlPool> => {
    const outage = new OutageLog(
      options.log,
      `Database: PostgreSQL at ${redactUrl(url)}`,
      options.now,
    );
    return connectPostgres(url, {
      poolSize: config.databasePoolSize,
      statementTimeoutMs: config.databaseStatementTimeoutMs,
      onError: (error) => outage.failed(error),
      onUnavailable: (error) => outage.failed(error),
      onAvailable: () => outage.recovered(),
    });
  };
  return {
    stateDirPath: config.stateDir,
    stateDir: () => (state ??= openStateDir(config.stateDir, {
      lazily: true,
      leaseMs: config.stateLockLeaseMs,
    })),
    postgres: url === "" ? undefined : () => (pool ??= connect()),
    redis: redis.connect,
    kafka: kafka.connect,
    async hold() {
      if (state !== undefined) await (await state).hold();
    },
    async close() {
      const [openedPool, openedState] = [pool, state];
      pool = undefined;
      state = undefined;
      const closed = await Promise.allSettled([
        redis.close(),
        kafka.close(),
        (async () => (await openedPool?.catch(() => undefined))?.close())(),
      ]);
      // The state folder last: its lock is let go once nothing else of the app is open.
      await (await openedState?.catch(() => undefined))?.close();
      const failed = closed.find((result) => result.status === "rejected");
      if (failed !== undefined) throw failed.reason;
    },
  };
}
