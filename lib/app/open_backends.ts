import { redactUrl } from "../config/mod.ts";
import type { ServiceLog } from "../http/mod.ts";
import { OutageLog } from "../log/mod.ts";
import {
  connectPostgres,
  openStateDir,
  type SqlPool,
  type StateDir,
  type StorageConfig,
} from "../storage/mod.ts";

/**
 * The backends an app's modules share, each opened once, when first asked
 * for, and closed by the app after every module: the state folder
 * (`STATE_DIR`, whose journals the modules open) and the PostgreSQL pool of
 * `DATABASE_URL`. The queue backends (the relay's Redis or Kafka) and the
 * rate limits' Redis are the modules' own: each has settings and readiness
 * of its own.
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
  /** Makes and locks the state folder now, if one was asked for (as the app starts serving). */
  hold(): Promise<void>;
  /** Closes what was opened: the pool, then the state folder's lock. */
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
    async hold() {
      if (state !== undefined) await (await state).hold();
    },
    async close() {
      const [openedPool, openedState] = [pool, state];
      pool = undefined;
      state = undefined;
      await (await openedPool?.catch(() => undefined))?.close();
      await (await openedState?.catch(() => undefined))?.close();
    },
  };
}
