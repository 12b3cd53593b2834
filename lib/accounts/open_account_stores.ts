import { AUTH_MIGRATIONS } from "../auth/_internal.ts";
import {
  type AuthChange,
  type AuthStore,
  type LoginLimiter,
  MemoryAuthStore,
  PostgresAuthStore,
  PostgresLoginThrottle,
  type UserRecord,
} from "../auth/mod.ts";
import type { AuthConfig } from "../auth/mod.ts";
import { redactUrl } from "../config/mod.ts";
import { uuidV4 } from "../crypto/mod.ts";
import type { ReadinessProbe, ServiceLog } from "../http/mod.ts";
import { migrate, type SqlPool, type StateDir, type StorageConfig } from "../storage/mod.ts";
import { openJournaledStore } from "../storage/_internal.ts";
import {
  MemorySyncStore,
  type MemorySyncStoreOptions,
  PostgresSyncStore,
  type SyncChange,
  type SyncConfig,
  type SyncStore,
} from "../sync/mod.ts";
import { SYNC_MIGRATIONS } from "../sync/_internal.ts";
import { registerInOneTransaction } from "./register.ts";

/** What the accounts' stores are chosen and opened by: the token service's, the sync API's and the storage settings. */
export interface AccountsConfig {
  readonly auth: AuthConfig;
  readonly sync: SyncConfig;
  readonly storage: StorageConfig;
}

/**
 * The schemas kept in PostgreSQL with `DATABASE_URL`: each domain's
 * migrations, in the order they are applied (at start, and by `tributary migrate`).
 */
export const DATABASE_SCHEMAS: readonly {
  readonly domain: string;
  readonly steps: readonly string[];
}[] = [
  { domain: "auth", steps: AUTH_MIGRATIONS },
  { domain: "sync", steps: SYNC_MIGRATIONS },
];

/** The stores of the token and sync service, as the configuration chooses them. */
export interface AccountStores {
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

/** What opening the stores needs besides the configuration: clocks, randomness, the log and the app's backends. */
export interface OpenAccountStoresOptions {
  readonly now: () => number;
  readonly random: (size: number) => Uint8Array;
  readonly log: ServiceLog;
  /** Takes the state folder (`STATE_DIR`), which the app holds for every service that journals in it. */
  readonly state: () => Promise<StateDir>;
  /** The app's pool of `DATABASE_URL` (connected once, its outages logged by the app); needed when that is set. */
  readonly postgres?: () => Promise<SqlPool>;
}

/**
 * Opens the stores of the token and sync service: in PostgreSQL with
 * `DATABASE_URL` (shared by every process, its schema migrated at start), else
 * on journals in `STATE_DIR` (the default: every acknowledged write survives
 * a crash), or in memory only when that is empty.
 * @param config the token service's, sync API's and storage settings
 * @param options clock, randomness, log, and the app's state folder and database pool
 * @returns the stores
 * @throws {ConfigError} naming STATE_DIR when another process holds it
 * @throws {StorageError} `ERR_STORAGE_CORRUPT` when a journal cannot be read back
 */
export async function openAccountStores(
  config: AccountsConfig,
  options: OpenAccountStoresOptions,
): Promise<AccountStores> {
  const { now, random, log } = options;
  const syncOptions: MemorySyncStoreOptions = {
    now,
    uuid: () => uuidV4(random),
    revisionRetention: config.sync.revisionRetentionDays * 86_400_000,
    ticketRetention: config.sync.ticketRetentionSeconds * 1000,
  };
  if (config.storage.databaseUrl !== "") {
    const where = redactUrl(config.storage.databaseUrl);
    if (options.postgres === undefined) {
      throw new TypeError(
        "Cannot open the accounts' stores: DATABASE_URL is set but no pool was given",
      );
    }
    const pool = await options.postgres();
    for (const schema of DATABASE_SCHEMAS) await migrate(pool, schema.domain, schema.steps);
    const auth = new PostgresAuthStore(pool);
    // Half the pool runs queued work at most; the rest answers requests.
    const sync = new PostgresSyncStore(pool, {
      ...syncOptions,
      workConcurrency: Math.max(1, Math.floor(config.storage.databasePoolSize / 2)),
    });
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
      // The pool is the app's, closed by it after every service.
      close: () => Promise.resolve(),
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
  const auth = await openJournaledStore<MemoryAuthStore, AuthChange>(
    state,
    "auth",
    (snapshot, records, sink) => MemoryAuthStore.restore(snapshot, records, { sink }),
    log,
  );
  try {
    // Changes of a user whose context was lost (with a damaged journal's records, which a repair leaves out) are skipped, and counted.
    let skipped = 0;
    const sync = await openJournaledStore<MemorySyncStore, SyncChange>(
      state,
      "sync",
      (snapshot, records, sink) =>
        MemorySyncStore.restore(snapshot, records, {
          ...syncOptions,
          sink,
          onUnreplayable: () => void skipped++,
        }),
      log,
    );
    if (skipped > 0) {
      log.error(
        `State: ${skipped} records of the sync journal refer to sync contexts it does not hold (lost with a repaired journal's damaged records): skipped`,
      );
    }
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
