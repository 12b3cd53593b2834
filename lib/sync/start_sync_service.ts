import { type HttpRequest, type RunningService, type ServiceLog, startInterval } from "../http/mod.ts";
import { StorageError } from "../storage/mod.ts";
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
  /** Deletes the rest of an account once its context is erased (see `SyncServiceOptions.onAccountDeleted`). */
  onAccountDeleted?: (owner: string) => Promise<void>;
  /** Makes the context of a user who has none (see `SyncServiceOptions.completeContext`). */
  completeContext?: (owner: string) => Promise<boolean>;
  /** Where a failed background job is reported. */
  log: ServiceLog;
  /**
   * Whether the store logs its own outages (a PostgreSQL pool logs one as
   * two lines): background work failing because the store cannot be reached
   * (`ERR_STORAGE_UNAVAILABLE`) then adds no line of its own, and waits for the next try.
   * @default {false}
   */
  storeLogsOutages?: boolean;
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

/** How often queued work left by a process that stopped (or by a failed run) is looked for. */
const RESUME_EVERY_MS = 5000;

/**
 * Starts the sync API as an app runs it: queued work runs one owner's queue
 * at a time (and is finished when it drains); work queued before a restart,
 * or by a process that stopped, is picked up at start and every 5 seconds;
 * past revisions and tickets are swept every minute.
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
export async function startSyncService(config: SyncConfig, options: StartSyncServiceOptions): Promise<RunningService> {
  const base = options.basePath ?? "/api/v2/sync/user";
  /** Whether the store has logged this failure already, as part of an outage. */
  const outageLogged = (error: unknown): boolean =>
    options.storeLogsOutages === true && error instanceof StorageError && error.code === "ERR_STORAGE_UNAVAILABLE";
  const jobs = new SerialJobs({
    // Contexts' queues run side by side (each in order), so that commits waiting on the disk or the database go together.
    concurrency: options.store.workConcurrency,
    onError: (error) => {
      // A store that cannot be reached is retried by the resume below; a line says so, not a trace.
      if (outageLogged(error)) return;
      if (error instanceof StorageError) options.log.error(`Sync: queued work waits: ${error.message}`);
      else options.log.error("Sync job failed", error);
    },
  });
  const handler = createSyncService(options.store, {
    authorize: options.authorize,
    jobs,
    queueAboveObjects: config.queueAboveObjects,
    maxPendingPerUser: config.maxQueuedPerUser,
    base,
    ...(options.onAccountDeleted === undefined ? {} : { onAccountDeleted: options.onAccountDeleted }),
    ...(options.completeContext === undefined ? {} : { completeContext: options.completeContext }),
  });
  const every = options.every ?? startInterval;
  // A sweep that fails (the store away) is tried again at the next minute.
  const stopSweep = every(() => void options.store.sweep().catch((error: unknown) => {
    if (!outageLogged(error)) options.log.error("Sync: cannot sweep past revisions and tickets", error);
  }), 60_000);
  const resume = async (): Promise<void> => {
    for (const owner of await options.store.waitingOwners()) {
      jobs.pushOnce(owner, async () => {
        await options.store.runWork(owner);
      });
    }
  };
  await resume();
  const stopResume = every(() => void resume().catch((error: unknown) => {
    if (!outageLogged(error)) options.log.error("Sync: cannot look for queued work", error);
  }), RESUME_EVERY_MS);
  return {
    name: "sync",
    prefixes: [base],
    handler,
    describe: (origin) => ({
      endpoints: [{ label: "Sync API", url: `${origin}${base}` }],
      credentials: [],
      notes: [],
    }),
    drain: async () => {
      stopSweep();
      stopResume();
      await jobs.idle();
    },
    close: () => Promise.resolve(),
  };
}
