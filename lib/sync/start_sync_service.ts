import { type HttpRequest, type RunningService, type ServiceLog } from "../http/mod.ts";
import { startPeriodicTask } from "../http/_internal.ts";
import { OutageLog } from "../log/mod.ts";
import { StorageError } from "../storage/mod.ts";
import { createSyncService } from "./create_sync_service.ts";
import { RevisionStreams } from "./revision_streams.ts";
import { SerialJobs } from "./serial_jobs.ts";
import type { SyncConfig } from "./settings.ts";
import type { SyncStore } from "./sync_store.ts";
import { SYNC_ERROR_STATUS } from "./error_status.ts";

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
   * two lines): a queued job failing because the store cannot be reached
   * (`ERR_STORAGE_UNAVAILABLE`) then adds no line of its own, and waits for
   * the next look for queued work, and neither does the periodic sweep or
   * look (which log other failures as two lines: when they start failing,
   * and when they work again).
   * @default {false}
   */
  storeLogsOutages?: boolean;
  /**
   * Runs a task periodically (past revisions and tickets are swept every minute, the change
   * streams' heartbeat every `SYNC_STREAM_HEARTBEAT_MS`); returns a stop function.
   * @default real timers that do not keep the process alive
   */
  every?: (task: () => void, ms: number) => () => void;
  /**
   * Wall clock, milliseconds since the epoch (how long a background task kept failing, for its log line).
   * @default {Date.now}
   */
  now?: () => number;
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
 * past revisions and tickets are swept every minute; change streams are
 * held with one heartbeat timer and ended when the host stops serving.
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
export async function startSyncService(
  config: SyncConfig,
  options: StartSyncServiceOptions,
): Promise<RunningService> {
  const base = options.basePath ?? "/api/v2/sync/user";
  /** Whether the store has logged this failure already, as part of an outage. */
  const outageLogged = (error: unknown): boolean =>
    options.storeLogsOutages === true && error instanceof StorageError &&
    error.code === "ERR_STORAGE_UNAVAILABLE";
  const jobs = new SerialJobs({
    // Contexts' queues run side by side (each in order), so that commits waiting on the disk or the database go together.
    concurrency: options.store.workConcurrency,
    onError: (error) => {
      // A store that cannot be reached is retried by the resume below; a line says so, not a trace.
      if (outageLogged(error)) return;
      if (error instanceof StorageError) {
        options.log.error(`Sync: queued work waits: ${error.message}`);
      } else options.log.error("Sync job failed", error);
    },
  });
  // The change streams: one heartbeat timer for them all, ended at drain (and before, by the host, see endStreams).
  const streams = new RevisionStreams(options.store.feed, {
    headOf: (owner) => options.store.head(owner),
    heartbeatMs: config.streamHeartbeatMs,
    maxPerUser: config.streamsPerUser,
    maxOpen: config.streamsMax,
    ...(options.every === undefined ? {} : { every: options.every }),
    onError: (error) => {
      if (!outageLogged(error)) options.log.error("Sync: cannot look up heads after a gap", error);
    },
  });
  const handler = createSyncService(options.store, {
    streams,
    authorize: options.authorize,
    jobs,
    queueAboveObjects: config.queueAboveObjects,
    maxPendingPerUser: config.maxQueuedPerUser,
    base,
    ...(options.onAccountDeleted === undefined
      ? {}
      : { onAccountDeleted: options.onAccountDeleted }),
    ...(options.completeContext === undefined ? {} : { completeContext: options.completeContext }),
  });
  // A sweep or a look for queued work that fails is tried again the next period, never an unhandled
  // rejection: the store away is the store's outage (logged by it, when it does); anything else,
  // one line when the task starts failing and one when it works again.
  const now = options.now ?? Date.now;
  const periodic = (what: string, everyMs: number, task: () => Promise<unknown>) =>
    startPeriodicTask(task, {
      everyMs,
      outcomes: new OutageLog(options.log, what, now, { subject: "task" }),
      countedElsewhere: outageLogged,
      ...(options.every === undefined ? {} : { every: options.every }),
    });
  const stopSweep = periodic(
    "Sync: sweeping past revisions and tickets",
    60_000,
    () => options.store.sweep(),
  );
  const resume = async (): Promise<void> => {
    for (const owner of await options.store.waitingOwners()) {
      jobs.pushOnce(owner, async () => {
        await options.store.runWork(owner);
      });
    }
  };
  await resume();
  const stopResume = periodic("Sync: looking for queued work", RESUME_EVERY_MS, resume);
  return {
    name: "sync",
    errorStatus: SYNC_ERROR_STATUS,
    prefixes: [base],
    handler,
    describe: (origin) => ({
      endpoints: [{ label: "Sync API", url: `${origin}${base}` }],
      credentials: [],
      notes: [],
    }),
    endStreams: () => streams.close(),
    drain: async () => {
      streams.close();
      await Promise.all([stopSweep(), stopResume()]);
      await jobs.idle();
    },
    close: () => Promise.resolve(),
  };
}
