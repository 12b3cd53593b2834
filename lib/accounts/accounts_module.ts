import { type AuthStore, requireUser, startAuthService } from "../auth/mod.ts";
import type { RunningService, ServiceLog } from "../http/mod.ts";
import type { SqlPool, StateDir } from "../storage/mod.ts";
import { startSyncService, type SyncStore } from "../sync/mod.ts";
import { type AccountsConfig, openAccountStores } from "./open_account_stores.ts";
import { createPlaygroundService } from "./playground_service.ts";
import { completeContextFrom, registerInOrder } from "./register.ts";

/** What the accounts module needs of the app it runs in. */
export interface AccountsContext {
  /** Wall clock, milliseconds since the epoch. */
  readonly now: () => number;
  readonly random: (size: number) => Uint8Array;
  /** Where notes and failures go (a logger with `warn` gets the journals' warnings). */
  readonly log: ServiceLog;
  /** The app's backends: its state folder and its database pool. */
  readonly backends: {
    readonly stateDir: () => Promise<StateDir>;
    /** The pool of `DATABASE_URL`; undefined without it. */
    readonly postgres: (() => Promise<SqlPool>) | undefined;
  };
  /** Stores a host gives instead of those the configuration chooses. */
  readonly stores?: { readonly auth: AuthStore; readonly sync: SyncStore };
}

/**
 * The token and sync service as one module of an app: the OAuth token
 * service and sign-up, and the sync API, on the accounts' stores (a user
 * and its sync context are one account: a sign-up writes both, and an
 * account an earlier version left half-made is completed at its first sync);
 * and the sync playground, a page at `/sync/playground` where two devices of
 * one user sync its messages. Its `SERVICES` name is `sync`.
 * @example
 * ```ts
 * const app = createApp(readConfig(process.env), { modules: [ACCOUNTS_MODULE] });
 * ```
 */
export const ACCOUNTS_MODULE = {
  name: "sync",
  /**
   * Opens the stores and starts the token service and the sync API.
   * @param config the token service's, sync API's and storage settings
   * @param context the app's clocks, randomness, log and backends
   * @returns the running services: the token service, the sync API and the playground page
   */
  async start(
    config: AccountsConfig,
    context: AccountsContext,
  ): Promise<readonly RunningService[]> {
    const { now, random, log } = context;
    const given = context.stores;
    const stores = given !== undefined
      ? { ...given, where: "in the stores the host gave", close: () => Promise.resolve() }
      : await openAccountStores(config, {
        now,
        random,
        log,
        state: context.backends.stateDir,
        ...(context.backends.postgres === undefined ? {} : { postgres: context.backends.postgres }),
      });
    const outages = "logOutages" in stores && stores.logOutages === true;
    try {
      const auth = await startAuthService(config.auth, {
        store: stores.auth,
        ...("throttle" in stores && stores.throttle !== undefined
          ? { throttle: stores.throttle }
          : {}),
        now,
        random,
        log,
        storeLogsOutages: outages,
        // A sign-up writes the user and its sync context: in one transaction on PostgreSQL, else the context first.
        register: ("register" in stores ? stores.register : undefined) ??
          registerInOrder(stores.auth, stores.sync),
      });
      const sync = await startSyncService(config.sync, {
        store: stores.sync,
        authorize: (request) => requireUser(request, auth.tokens, { scope: "UserActivity" }),
        onAccountDeleted: (owner) => auth.tokens.deleteUser(owner),
        // An account an earlier version left without a context gets one on first use.
        completeContext: completeContextFrom(stores.auth, stores.sync),
        log,
        now,
        storeLogsOutages: outages,
      }).catch(async (error: unknown) => {
        await auth.service.drain();
        await auth.service.close();
        throw error;
      });
      const probes = "readiness" in stores ? stores.readiness ?? [] : [];
      return [
        auth.service,
        {
          ...sync,
          // The stores' database answers for the sync API's readiness; the stores close after it.
          readiness: [...probes, ...(sync.readiness ?? [])],
          describe: (origin) => {
            const described = sync.describe(origin);
            return {
              ...described,
              notes: [`Users, tokens and synced data: ${stores.where}`, ...described.notes],
            };
          },
          close: async () => {
            await sync.close();
            await stores.close();
          },
        },
        // The sync playground: a page that runs two sync clients against the services above.
        createPlaygroundService(),
      ];
    } catch (error) {
      await stores.close();
      throw error;
    }
  },
} as const;
