import {
  AUTH_MIGRATIONS,
  type AuthChange,
  type AuthStore,
  type LoginLimiter,
  MemoryAuthStore,
  PostgresAuthStore,
  PostgresLoginThrottle,
  type UserRecord,
} from "../auth/mod.ts";
import { uuidV4 } from "../crypto/mod.ts";
import type { ReadinessProbe, ServiceLog } from "../http/mod.ts";
import { redactUrl } from "../config/mod.ts";
import { OutageLog } from "../log/mod.ts";
import { connectPostgres, migrate, openJournaledStore, type StateDir } from "../storage/mod.ts";
import {
  MemorySyncStore,
  type MemorySyncStoreOptions,
  PostgresSyncStore,
  SYNC_MIGRATIONS,
  type SyncChange,
  type SyncStore,
} from "../sync/mod.ts";
import { registerInOneTransaction } from "./accounts.ts";
import type { Config } from "./read_config.ts";

/**
 * The schemas kept in PostgreSQL with `DATABASE_URL`: each domain's
 * migrations, in the order they are applied (at start, and by `tributary migrate`).
 */
export const DATABASE_SCHEMAS: readonly { readonly domain: string; readonly steps: readonly string[] }[] = [
  { domain: "auth", steps: AUTH_MIGRATIONS },
  { domain: "sync", steps: SYNC_MIGRATIONS },
];

/** The stores of the token and sync service, as the configuration chooses them. */
export interface SyncStores {
  readonly auth: AuthStore;
  readonly sync: SyncStore;
  /** Writes a new account (a user and its sync context) in one write, where the stores share one (PostgreSQL). */
  readonly register?: (user: UserRecord) => Promise<boolean>;
  /** The login throttle, when the stores share one (PostgreSQL); undefined for one in memory. */
  readonly throttle?: LoginLimiter;
  /** Where they keep their state, for the start-up banner. */
  readonly where: string;
  /** The database they need, for `/health/ready`; none for stores in the process. */
  readonly readiness?: readonly ReadinessProbe[];
  /**
   * Whether their connection logs its outages itself (PostgreSQL: one line
   * when the database stops answering, one when it answers again), so that
   * the services need not log each failed attempt.
   */
  readonly logOutages?: boolean;
  /** Closes them (their journals or connections); after the services drained. */
  close(): Promise<void>;
}

/** What opening the stores needs besides the configuration. */
export interface OpenSyncStoresOptions {
  readonly now: () => number;
  readonly random: (size: number) => Uint8Array;
  readonly log: ServiceLog;
  /** Takes the state folder (`STATE_DIR`), which the app holds for every service that journals in it. */
  readonly state: () => Promise<StateDir>;
}

/**
 * Opens the stores of the token and sync service: in PostgreSQL with
 * `DATABASE_URL` (shared by every process, its schema migrated at start), else
 * on journals in `STATE_DIR` (the default: every acknowledged write survives
 * a crash), or in memory only when that is empty.
 * @param config the configuration
 * @param options clock, randomness and log
 * @returns the stores
 * @throws {ConfigError} naming STATE_DIR when another process holds it
 * @throws {StorageError} `ERR_STORAGE_CORRUPT` when a journal cannot be read back
 */
export async function openSyncStores(config: Config, options: OpenSyncStoresOptions): Promise<SyncStores> {
  const { now, random, log } = options;
  const syncOptions: MemorySyncStoreOptions = {
    now,
    uuid: () => uuidV4(random),
    revisionRetention: config.sync.revisionRetentionDays * 86_400_000,
    ticketRetention: config.sync.ticketRetentionSeconds * 1000,
  };
  if (config.storage.databaseUrl !== "") {
    const where = redactUrl(config.storage.databaseUrl);
    // A lost connection, a statement that cannot reach the database: one line an outage, and one when it answers again.
    const outage = new OutageLog(log, `Database: PostgreSQL at ${where}`, now);
    const pool = await connectPostgres(config.storage.databaseUrl, {
      poolSize: config.storage.databasePoolSize,
      statementTimeoutMs: config.storage.databaseStatementTimeoutMs,
      onError: (error) => outage.failed(error),
      onUnavailable: (error) => outage.failed(error),
      onAvailable: () => outage.recovered(),
    });
    try {
      for (const schema of DATABASE_SCHEMAS) await migrate(pool, schema.domain, schema.steps);
    } catch (error) {
      await pool.close();
      throw error;
    }
    const auth = new PostgresAuthStore(pool);
    // Half the pool runs queued work at most; the rest answers requests.
    const sync = new PostgresSyncStore(pool, { ...syncOptions, workConcurrency: Math.max(1, Math.floor(config.storage.databasePoolSize / 2)) });
    return {
      auth,
      sync,
      register: registerInOneTransaction(pool, { auth, sync }),
      throttle: new PostgresLoginThrottle(pool, {
        now,
        maxPerUser: config.auth.loginMaxFailures,
        maxPerName: config.auth.loginMaxFailuresPerName,
        maxPerAddress: config.auth.loginMaxFailuresPerAddress,
      }),
      where: `in PostgreSQL at ${where}, shared by every process on it`,
      readiness: [{
        part: `database: PostgreSQL at ${where}`,
        check: async () => {
          await pool.query("SELECT 1");
        },
      }],
      logOutages: true,
      close: () => pool.close(),
    };
  }
  const dir = config.storage.stateDir;
  if (dir === "") {
    return {
      auth: new MemoryAuthStore(),
      sync: new MemorySyncStore(syncOptions),
      where: "in memory only (STATE_DIR is empty): lost at a restart",
      close: () => Promise.resolve(),
    };
  }
  const state = await options.state();
  const auth = await openJournaledStore<MemoryAuthStore, AuthChange>(state, "auth", (snapshot, records, sink) => MemoryAuthStore.restore(snapshot, records, { sink }), log);
  try {
    // Changes of a user whose context was lost (with a damaged journal's records, which a repair leaves out) are skipped, and counted.
    let skipped = 0;
    const sync = await openJournaledStore<MemorySyncStore, SyncChange>(
      state,
      "sync",
      (snapshot, records, sink) => MemorySyncStore.restore(snapshot, records, { ...syncOptions, sink, onUnreplayable: () => void skipped++ }),
      log,
    );
    if (skipped > 0) log.error(`State: ${skipped} records of the sync journal refer to sync contexts it does not hold (lost with a repaired journal's damaged records): skipped`);
    return {
      auth: auth.store,
      sync: sync.store,
      where: `in ${state.dir} (journals auth and sync, each write on disk before its answer)`,
      close: async () => {
        await auth.journal.close();
        await sync.journal.close();
      },
    };
  } catch (error) {
    await auth.journal.close();
    throw error;
  }
}
