import { ConfigError, readConfigPath, redactUrl } from "../config/mod.ts";
import {
  type ReadinessProbe,
  type RunningService,
  type ServiceCredential,
  type ServiceLog,
} from "../http/mod.ts";
import { startPeriodicTask, type TaskOutcomes, waitAtMost } from "../http/_internal.ts";
import { count, OutageLog } from "../log/mod.ts";
import type { MetricsRegistry } from "../metrics/mod.ts";
import type { connectKafka, connectRedis, Journal, StateDir } from "../storage/mod.ts";
import { openJournaledStore } from "../storage/_internal.ts";
import { type ConfigRecord, type ConfigStore, MemoryConfigStore } from "./config_store.ts";
import { type DirectoryOpening, EndpointDirectory } from "./endpoint_directory.ts";
import { createAddressPolicy } from "./address_policy.ts";
import { DEFAULT_RETRY_SCHEDULE, type RetrySchedule } from "./backoff.ts";
import { RelayError } from "./errors.ts";
import { createRelayService } from "./create_relay_service.ts";
import { createHttpDelivery, type Deliver } from "./http_delivery.ts";
import type { QueueChange } from "./_memory_queue_snapshot.ts";
import { MemoryQueue } from "./memory_queue.ts";
import type { JobQueue, QueueDepth } from "./queue.ts";
import { readEncryptionKey } from "./read_encryption_key.ts";
import { readTenantsFile } from "./read_tenants_file.ts";
import { registerRelayMetrics } from "./relay_metrics.ts";
import type { RelayConfig } from "./settings.ts";
import { TenantRegistry } from "./tenants.ts";
import { RelayWorker } from "./worker.ts";
import { RELAY_ERROR_STATUS } from "./error_status.ts";

/** Options of {@linkcode startRelayService}. */
export interface StartRelayServiceOptions {
  /** The registry the relay's metrics go to. */
  metrics: MetricsRegistry;
  /** Wall clock, milliseconds since the epoch, e.g. `Date.now`. */
  now: () => number;
  /** Random bytes (ids, secrets, JWE keys), e.g. `pooledRandom()`. */
  random: (size: number) => Uint8Array;
  /** Where notes and survived failures go. */
  log: ServiceLog;
  /**
   * Sends one delivery.
   * @default HTTP with the SSRF guard of `ALLOW_PRIVATE_TARGETS`
   */
  deliver?: Deliver;
  /**
   * Runs a task once after `ms`; returns a cancel function (the worker's retry timer).
   * @default real timers
   */
  setTimer?: (task: () => void, ms: number) => () => void;
  /**
   * Runs a task periodically (queue depth and sweeps, every second); returns a stop function.
   * @default real timers that do not keep the process alive
   */
  every?: (task: () => void, ms: number) => () => void;
  /**
   * A number in [0, 1) for retry jitter.
   * @default {Math.random}
   */
  jitter?: () => number;
  /**
   * Path of intake; the management routes live under it.
   * @default {"/webhook"}
   */
  basePath?: string;
  /**
   * The state folder (`STATE_DIR`) this process holds: with `STORAGE_TYPE=memory`
   * the queue journals its changes there (each accepted message on disk before
   * its 202) and is rebuilt from the journal at start.
   * @default none: the memory queue lives and dies with the process
   */
  state?: StateDir;
  /**
   * Connects to Redis, with `STORAGE_TYPE=redis`: an app gives its
   * backends' connections (`Backends.redis`), shared with every module on
   * the same server.
   * @default {connectRedis}: a connection of the relay's own
   */
  redis?: typeof connectRedis;
  /**
   * Connects to Kafka, with `STORAGE_TYPE=kafka`: an app gives its
   * backends' connections (`Backends.kafka`).
   * @default {connectKafka}: a connection of the relay's own
   */
  kafka?: typeof connectKafka;
}

/** How long deliveries in flight may take to finish at shutdown, at most. */
const DRAIN_LIMIT_MS = 5000;

/**
 * Starts the webhook relay as an app runs it: loads `TENANTS_FILE` (left at
 * its default and missing: no tenants, said in one line of the log) and
 * `ENCRYPTION_KEY`, opens the queue `STORAGE_TYPE` chooses (memory, journaled
 * in the state folder when one is given; Redis; Kafka, its topics created
 * where the brokers allow), starts the worker (unless `WORKER_CONCURRENCY=0`),
 * and keeps the queue-depth gauge and the sweeps going. Draining gives
 * deliveries in flight up to 5 s (a job still out is sent again later:
 * delivery is at least once); closing closes the queue and its journal.
 * @param config the relay's settings
 * @param options metrics, clock, randomness, log and (for tests) the delivery function
 * @returns the running service
 * @throws {ConfigError} naming the variable when a file, key or backend cannot be used
 * @example
 * ```ts
 * const relay = await startRelayService(readSettings(RELAY_SETTINGS, process.env), {
 *   metrics: new MetricsRegistry(),
 *   now: Date.now,
 *   random: pooledRandom(),
 *   log: { info: console.log, error: console.error },
 * });
 * ```
 */
export async function startRelayService(
  config: RelayConfig,
  options: StartRelayServiceOptions,
): Promise<RunningService> {
  const base = options.basePath ?? "/webhook";
  const { log, now, random } = options;
  const registry = new TenantRegistry({
    now,
    random,
    secretOverlapMs: config.secretOverlapSeconds * 1000,
  });
  let plain: Map<string, string[]>;
  try {
    const text = await readConfigPath(config.tenantsFile, "TENANTS_FILE");
    if (text === undefined) {
      log.info(
        `Webhook relay: no tenants: TENANTS_FILE ${config.tenantsFile.path} does not exist; add one with npx tributary tenant add`,
      );
    }
    plain = text === undefined
      ? new Map()
      : readTenantsFile(registry, text, config.tenantsFile.path);
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    throw new ConfigError("TENANTS_FILE", `Cannot start: ${(error as Error).message}`);
  }
  const encryptionKey = await readEncryptionKey(config.encryptionKey);
  const { queue, restored, where, closeJournal, configStore, closeConfigJournal, backend } =
    await openQueue(config, options);
  const directory = new EndpointDirectory(registry, configStore, {
    onError: (error) =>
      log.error("Relay endpoints: a stored endpoint cannot be read (skipped)", error),
  });
  let opening: DirectoryOpening;
  try {
    opening = await directory.open();
  } catch (error) {
    await directory.close().catch(() => {});
    await queue.close().catch(() => {});
    await closeJournal?.();
    await closeConfigJournal?.();
    throw new ConfigError(
      "STORAGE_TYPE",
      `Cannot start: cannot read the relay's endpoints from the ${config.storageType} backend: ${
        (error as Error).message
      }`,
    );
  }
  let depth: QueueDepth = { ready: 0, delayed: 0, leased: 0, dead: 0 };
  const relayMetrics = registerRelayMetrics(options.metrics, () => depth);
  const policy = createAddressPolicy({ allow: config.allowPrivateTargets });
  const delivery = options.deliver === undefined
    ? createHttpDelivery({ policy, maxSocketsPerHost: config.endpointConcurrency })
    : { deliver: options.deliver, close: () => {} };
  const schedule: RetrySchedule = {
    kind: "fixed",
    delaysMs: config.retryDelaysMs,
    maxAttempts: config.maxAttempts ?? config.retryDelaysMs.length + 1,
    jitter: DEFAULT_RETRY_SCHEDULE.jitter ?? 0.2,
  };
  const worker = new RelayWorker({
    queue,
    registry: directory,
    deliver: delivery.deliver,
    schedule,
    now,
    random: options.jitter ?? Math.random,
    setTimer: options.setTimer ?? realTimer,
    concurrency: config.workerConcurrency,
    perEndpointConcurrency: config.endpointConcurrency,
    deliveryTimeoutMs: config.deliveryTimeoutMs,
    onAttempt: relayMetrics.attempt,
    onDead: relayMetrics.dead,
    onError: (error) => {
      // The backend away: counted in its outage (logged when it starts and ends), not a line an attempt.
      if (
        backend !== undefined && error instanceof RelayError &&
        error.code === "ERR_RELAY_QUEUE_UNAVAILABLE"
      ) backend.outage.failed(error);
      else log.error("Relay worker", error);
    },
  });
  const handler = createRelayService({
    registry: directory,
    queue,
    now,
    random,
    encryptionKey,
    maxPayloadBytes: config.maxPayloadBytes,
    addressPolicy: policy,
    onAccepted: (tenantId, jobs) => {
      relayMetrics.accepted(tenantId, jobs);
      worker.notify();
    },
    base,
  });
  // WORKER_CONCURRENCY=0 makes an intake-only process: it queues, something else delivers.
  if (config.workerConcurrency > 0) worker.start();
  // Each once a second, never twice at once; one that fails is tried again the next second. The
  // backend away is its outage, which its connection logs; anything else, one line when the task
  // starts failing and one when it works again.
  const backendAway = (error: unknown): boolean =>
    backend !== undefined && error instanceof RelayError &&
    error.code === "ERR_RELAY_QUEUE_UNAVAILABLE";
  const periodic = (
    what: string,
    task: () => Promise<unknown>,
    outcomes: TaskOutcomes = new OutageLog(log, what, now, { subject: "task" }),
  ) =>
    startPeriodicTask(task, {
      everyMs: 1000,
      outcomes,
      countedElsewhere: backendAway,
      ...(options.every === undefined ? {} : { every: options.every }),
    });
  const stops = [
    periodic(
      "Relay: reading the queue's depth",
      async () => void (depth = await queue.depth(now())),
    ),
    periodic("Relay: sweeping the queue", () => queue.sweep(now())),
  ];
  // The backend asked, so that its outage's end is logged even with no traffic: the probe counts in the backend's own outage log.
  if (backend !== undefined) {
    stops.push(
      periodic("Relay: probing the backend", () => backend.probe.check(), {
        failed: () => {},
        recovered: () => {},
      }),
    );
  }
  const credentials: ServiceCredential[] = [];
  const notes = [
    `Relay queue: ${where}`,
    `Relay endpoints: ${endpointsNote(config, options.state, opening)}`,
  ];
  if (restored > 0) {
    notes.push(
      `Relay queue: ${count(restored, "job")} not yet delivered ${
        restored === 1 ? "was" : "were"
      } restored from the journal`,
    );
  }
  for (const tenant of registry.tenants()) {
    const key = plain.get(tenant.id)?.[0];
    if (key !== undefined) {
      credentials.push({
        label: `Relay tenant "${tenant.id}" API key`,
        value: key,
        setting: "TENANTS_FILE",
        file: config.tenantsFile.path,
      });
    }
    const endpoints = registry.endpoints(tenant.id).map((endpoint) =>
      `${endpoint.id} -> ${shownUrl(endpoint.url)}`
    );
    notes.push(
      `Relay tenant "${tenant.id}": ${
        endpoints.length === 0 ? "no endpoints" : endpoints.join(", ")
      }`,
    );
  }
  if (config.workerConcurrency === 0) {
    notes.push(
      "WORKER_CONCURRENCY=0: this process takes webhooks but delivers none; they wait in the queue",
    );
  }
  if (config.allowPrivateTargets.length === 0) {
    notes.push(
      "Deliveries to private and loopback addresses are refused; set ALLOW_PRIVATE_TARGETS (e.g. 127.0.0.1/32) to reach a local receiver",
    );
  }
  return {
    name: "relay",
    errorStatus: RELAY_ERROR_STATUS,
    prefixes: [base],
    handler,
    readiness: backend === undefined ? [] : [backend.probe],
    describe: (origin) => ({
      endpoints: [{ label: "Webhook intake", url: `${origin}${base}` }, {
        label: "Relay portal",
        url: `${origin}${base}/portal`,
      }],
      credentials,
      notes,
    }),
    drain: async () => {
      await Promise.all(stops.map((stop) => stop()));
      await waitAtMost(worker.stop(), Math.min(config.deliveryTimeoutMs, DRAIN_LIMIT_MS));
      delivery.close();
    },
    close: async () => {
      await directory.close();
      await queue.close();
      await closeJournal?.();
      await closeConfigJournal?.();
    },
  };
}

interface OpenedQueue {
  /** Both halves of the port: the worker takes the lifecycle, the routes both, and the depth gauge and sweeps run here. */
  readonly queue: JobQueue;
  /** Jobs waiting (ready or delayed) in the journaled memory queue at start. */
  readonly restored: number;
  /** Where the queue is, for the start-up notes. */
  readonly where: string;
  /** Closes the memory queue's journal, after the queue. */
  readonly closeJournal?: () => Promise<void>;
  /** Where the endpoints made through the API are kept: in the backend of the queue. */
  readonly configStore: ConfigStore;
  /** Closes the configuration's journal, after the store. */
  readonly closeConfigJournal?: () => Promise<void>;
  /** The server the queue lives on (Redis, Kafka): its outages and how to ask it; none for the memory queue. */
  readonly backend?: { readonly outage: OutageLog; readonly probe: ReadinessProbe };
}

/** The queue `STORAGE_TYPE` chooses; the Redis and Kafka adapters (and their clients) are loaded only when chosen. */
async function openQueue(
  config: RelayConfig,
  options: StartRelayServiceOptions,
): Promise<OpenedQueue> {
  switch (config.storageType) {
    case "redis": {
      const { openRedisRelay } = await import("./redis/mod.ts");
      const stores = await openRedisRelay({
        url: config.redis.url,
        keyPrefix: config.redis.keyPrefix,
        capacity: config.queueCapacity,
        log: options.log,
        now: options.now,
        ...(options.redis === undefined ? {} : { connect: options.redis }),
      });
      return {
        queue: stores.queue,
        restored: 0,
        configStore: stores.config,
        where: `Redis at ${redactUrl(config.redis.url)}, keys under ${config.redis.keyPrefix}`,
        backend: stores,
      };
    }
    case "kafka": {
      const { openKafkaRelay } = await import("./kafka/mod.ts");
      const stores = await openKafkaRelay({
        ...config.kafka,
        capacity: config.queueCapacity,
        random: options.random,
        log: options.log,
        now: options.now,
        ...(options.kafka === undefined ? {} : { connect: options.kafka }),
      });
      const { brokers, topicPrefix, groupId } = config.kafka;
      return {
        queue: stores.queue,
        restored: 0,
        configStore: stores.config,
        where: `Kafka at ${
          brokers.join(",")
        }, topics ${topicPrefix}.{jobs,retry,dead,state,config}, group ${groupId}`,
        backend: stores,
      };
    }
    case "memory": {
      if (options.state === undefined) {
        return {
          queue: new MemoryQueue({ capacity: config.queueCapacity }),
          restored: 0,
          where: "in memory only (STATE_DIR is empty): queued messages are lost at a restart",
          configStore: new MemoryConfigStore(),
        };
      }
      const endpoints = await openJournaledStore<MemoryConfigStore, ConfigRecord>(
        options.state,
        "relay-config",
        (snapshot, records, sink) => MemoryConfigStore.restore(snapshot, records, sink),
        options.log,
      );
      let queued: { store: MemoryQueue; journal: Journal };
      try {
        queued = await openJournaledStore<MemoryQueue, QueueChange>(
          options.state,
          "relay-queue",
          (snapshot, records, sink) =>
            MemoryQueue.restore(snapshot, records, { capacity: config.queueCapacity, sink }),
          options.log,
        );
      } catch (error) {
        await endpoints.journal.close();
        throw error;
      }
      const queue = queued.store;
      const { ready, delayed } = await queue.depth(options.now());
      return {
        queue,
        restored: ready + delayed,
        closeJournal: () => queued.journal.close(),
        configStore: endpoints.store,
        closeConfigJournal: () => endpoints.journal.close(),
        where:
          `in memory, journaled in ${options.state.dir} (each accepted message on disk before its 202)`,
      };
    }
  }
}

/** The start-up note on where the endpoints are and what the tenants file did. */
function endpointsNote(
  config: RelayConfig,
  state: StateDir | undefined,
  opening: DirectoryOpening,
): string {
  const where = config.storageType === "memory"
    ? state === undefined
      ? "in memory only (STATE_DIR is empty): endpoints made or changed through the API are lost at a restart"
      : `journaled in ${state.dir}`
    : `in the ${
      config.storageType === "redis" ? "Redis" : "Kafka"
    } backend, shared by every relay process on it`;
  const parts = [`${opening.loaded} read`, `${opening.seeded} of TENANTS_FILE written`];
  if (opening.removed > 0) parts.push(`${opening.removed} no longer in TENANTS_FILE deleted`);
  if (opening.keptFromApi.length > 0) {
    parts.push(
      `${
        opening.keptFromApi.join(", ")
      } changed through the API (TENANTS_FILE no longer sets them)`,
    );
  }
  return `${where}; ${parts.join(", ")}`;
}

/**
 * An endpoint's URL as the log shows it: its origin, and `/…` for a path or
 * query, which may be the secret of a capability URL (Slack's, Discord's).
 */
function shownUrl(href: string): string {
  const url = new URL(href);
  return url.pathname === "/" && url.search === "" ? url.origin : `${url.origin}/…`;
}

function realTimer(task: () => void, ms: number): () => void {
  const timer = setTimeout(task, ms);
  return () => clearTimeout(timer);
}
