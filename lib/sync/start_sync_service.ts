import { type HttpRequest, type RunningService, type ServiceLog, startInterval } from "../http/mod.ts";
import { createSyncService } from "./create_sync_service.ts";
import { SerialJobs } from "./serial_jobs.ts";
import type { SyncConfig } from "./settings.ts";
import type { SyncStore } from "./sync_store.ts";

/** Options of {@linkcode startSyncService}. */
export interface StartSyncServiceOptions {
  /** Where contexts, revisions and tickets live. */
  store: SyncStore;
  /** Checks a request's credentials and gives the uuid of its user (see `SyncServiceOptions`). */
  authorize: (request: HttpRequest) => Promise<string>;
  /** Where a failed background job is reported. */
  log: ServiceLog;
  /**
   * Runs a task periodically (past revisions and tickets are swept every minute); returns a stop function.
   * @default real timers that do not keep the process alive
   */
  every?: (task: () => void, ms: number) => () => void;
  /**
   * Path of the user context.
   * @default {"/api/v2/sync/user"}
   */
  basePath?: string;
}

/**
 * Starts the sync API as an app runs it: background jobs run one at a time
 * (and are finished when it drains), past revisions and tickets are swept
 * every minute.
 * @param config the sync settings
 * @param options the store, the authorization and the log
 * @returns the running service
 * @example
 * ```ts
 * const sync = await startSyncService(readSettings(SYNC_SETTINGS, process.env), {
 *   store,
 *   authorize: (request) => requireUser(request, tokens, { scope: "UserActivity" }),
 *   log: { info: console.log, error: console.error },
 * });
 * ```
 */
export function startSyncService(config: SyncConfig, options: StartSyncServiceOptions): Promise<RunningService> {
  const base = options.basePath ?? "/api/v2/sync/user";
  const jobs = new SerialJobs({ onError: (error) => options.log.error("Sync job failed", error) });
  const handler = createSyncService(options.store, {
    authorize: options.authorize,
    jobs,
    queueAboveObjects: config.queueAboveObjects,
    maxPendingPerUser: config.maxQueuedPerUser,
    base,
  });
  const stop = (options.every ?? startInterval)(() => void options.store.sweep(), 60_000);
  return Promise.resolve({
    name: "sync",
    prefixes: [base],
    handler,
    describe: (origin) => ({
      endpoints: [{ label: "Sync API", url: `${origin}${base}` }],
      credentials: [],
      notes: [],
    }),
    drain: async () => {
      stop();
      await jobs.idle();
    },
    close: () => Promise.resolve(),
  });
}
