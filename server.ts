// The composition root: reads the configuration, loads the data, builds the
// services and serves them on one port. It holds no logic of its own.
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { createServer, type Server } from "node:http";
import { createAuthService, LoginThrottle, MemoryAuthStore, requireUser, TokenService } from "./lib/auth/mod.ts";
import { parseRsaKey, pooledRandom, type RsaPublicKey, uuidV4 } from "./lib/crypto/mod.ts";
import { type Config, ConfigError, readApiKeysFile, readClientsFile, readConfig, redactUrl } from "./lib/config/mod.ts";
import {
  type ApiKey,
  createNodeListener,
  indexApiKeys,
  jsonResponse,
  type Mount,
  mountHandlers,
} from "./lib/http/mod.ts";
import {
  createHttpMetrics,
  createMetricsHandler,
  createRouteNamer,
  MetricsRegistry,
  registerProcessMetrics,
  withMetrics,
} from "./lib/metrics/mod.ts";
import {
  connectKafka,
  connectRedis,
  createAddressPolicy,
  createHttpDelivery,
  createRelayService,
  type JobQueue,
  KafkaQueue,
  kafkaTopics,
  MemoryQueue,
  parseMemoryQueueSnapshot,
  type QueueDepth,
  readTenantsFile,
  type RedisScripts,
  RedisQueue,
  registerRelayMetrics,
  RelayWorker,
  TenantRegistry,
} from "./lib/relay/mod.ts";
import { createSyncService, MemorySyncStore, SerialJobs } from "./lib/sync/mod.ts";
import { createWaterService, type LoadReport, loadDatasets } from "./lib/water/mod.ts";

const WATER_BASE = "/v1/odata/v4";
const SYNC_BASE = "/api/v2/sync/user";
const RELAY_BASE = "/webhook";

/** Route names for the metrics' `route` label, per service. */
const ROUTES: Readonly<Record<string, readonly string[]>> = {
  water: [`${WATER_BASE}/Metadata`, `${WATER_BASE}/$metadata`, `${WATER_BASE}/Locations`, `${WATER_BASE}/Observations`, `${WATER_BASE}/Records`, `${WATER_BASE}/*`],
  sync: ["/oauth2/token", "/oauth2/revoke", "/oauth2/introspect", "/.well-known/oauth-authorization-server", "/api/v2/sign-up", SYNC_BASE, `${SYNC_BASE}/since/:revision`, `${SYNC_BASE}/ticket/:ticket`],
  relay: [RELAY_BASE, `${RELAY_BASE}/endpoints`, `${RELAY_BASE}/endpoints/:id`, `${RELAY_BASE}/endpoints/:id/secret`, `${RELAY_BASE}/endpoints/:id/rotate-secret`, `${RELAY_BASE}/messages/:id`, `${RELAY_BASE}/dead-letters`, `${RELAY_BASE}/dead-letters/replay`, `${RELAY_BASE}/dead-letters/:job/replay`],
};

async function main(): Promise<void> {
  const config = readConfig(process.env);
  // API keys guard the water data only: a server without it needs none.
  const { keys, plain } = config.services.includes("water") ? await loadKeys(config) : { keys: [], plain: new Map<string, string>() };
  const now = (): number => performance.now();
  const metrics = new MetricsRegistry();
  registerProcessMetrics(metrics);
  const httpMetrics = createHttpMetrics(metrics);
  const mounts: Mount[] = [];
  /** Mounts a service's handler, counting its requests by route. */
  const mount = (service: string, prefix: string, handler: Mount["handler"]): void => {
    mounts.push({ prefix, handler: withMetrics(handler, { metrics: httpMetrics, service, route: createRouteNamer(ROUTES[service] ?? []), now }) });
  };
  /** Work to finish before exiting, after the server stops accepting requests. */
  const drains: (() => Promise<void>)[] = [];
  if (config.services.includes("water")) {
    const { store, report } = await loadDatasets(config.dataDir);
    printReport(report, config.dataDir);
    mount("water", WATER_BASE, createWaterService(store, {
        keys: indexApiKeys(keys),
        now,
        corsOrigins: config.corsOrigins,
        ratePerSecond: config.ratePerSecond,
        maxConcurrent: config.maxConcurrent,
        queryTimeoutMs: config.queryTimeoutMs,
        maxResponseBytes: config.maxResponseBytes,
        renderCacheBytes: config.renderCacheBytes,
      }));
  }
  if (config.services.includes("sync")) {
    const { clients, plain: secrets } = readClientsFile(await readText(config.clientsFile, "CLIENTS_FILE"), config.clientsFile);
    const random = pooledRandom();
    const store = new MemoryAuthStore();
    const tokens = new TokenService({
      store,
      clients,
      now: Date.now,
      random,
      throttle: new LoginThrottle({
        now: Date.now,
        maxPerUser: config.loginMaxFailures,
        maxPerAddress: config.loginMaxFailuresPerAddress,
      }),
      accessTtlSeconds: config.accessTokenTtlSeconds,
      refreshTtlSeconds: config.refreshTokenTtlSeconds,
      passwordCost: config.passwordHashCost,
    });
    const contexts = new MemorySyncStore({
      now: Date.now,
      uuid: () => uuidV4(random),
      revisionRetention: config.revisionRetentionDays * 24 * 3600 * 1000,
      ticketRetention: config.ticketRetentionSeconds * 1000,
    });
    const auth = createAuthService(tokens, {
      onUserCreated: async (user) => {
        await contexts.createContext({ uuid: user.uuid, username: user.username, notifyLanguage: user.notifyLanguage });
      },
    });
    for (const prefix of ["/oauth2", "/.well-known/oauth-authorization-server", "/api/v2/sign-up"]) {
      mount("sync", prefix, auth);
    }
    const jobs = new SerialJobs({ onError: (error) => console.error("Sync job failed:", error) });
    drains.push(() => jobs.idle());
    mount("sync", SYNC_BASE, createSyncService(contexts, {
        authorize: (request) => requireUser(request, tokens, { scope: "UserActivity" }),
        jobs,
        queueAboveObjects: config.syncQueueAboveObjects,
        maxPendingPerUser: config.syncMaxQueuedPerUser,
        base: SYNC_BASE,
      }));
    setInterval(() => {
      void store.sweep(Date.now());
      void contexts.sweep();
    }, 60_000).unref();
    for (const client of clients) {
      const secret = secrets.get(client.id);
      const kind = client.secretHash === undefined ? "public" : secret === undefined ? "confidential" : `secret ${secret}`;
      console.log(`OAuth client "${client.id}" (${kind}): ${[...client.grantTypes].join(", ")}; scopes ${client.scopes.join(" ")}`);
    }
  }
  let relayBanner: string[] = [];
  if (config.services.includes("relay")) {
    relayBanner = await startRelay(config, mount, metrics, drains);
  }
  mounts.push({ prefix: "/metrics", handler: createMetricsHandler(metrics) });
  mounts.push({ prefix: "/health", handler: () => jsonResponse(200, { status: "ok", services: config.services }) });
  const server = createServer(
    { requestTimeout: 60_000, headersTimeout: 15_000, keepAliveTimeout: 5_000, maxHeaderSize: 16_384 },
    createNodeListener(mountHandlers(mounts), {
      onError: (error) => console.error("Unexpected error:", error),
      ...(config.publicUrl === undefined ? {} : { publicOrigin: config.publicUrl }),
    }),
  );
  await listen(server, config);
  const address = server.address();
  const port = typeof address === "object" && address !== null ? address.port : config.port;
  const shown = config.host === "0.0.0.0" || config.host === "::" ? "localhost" : config.host;
  const url = config.publicUrl ?? `http://${shown}:${port}`;
  console.log(`tributary listening on ${url} (services: ${config.services.join(", ")})`);
  if (config.services.includes("water")) {
    for (const [name, key] of plain) console.log(`API key "${name}": ${key}`);
    const demo = plain.values().next().value ?? "<your key>";
    console.log(`Try: curl -H 'x-api-key: ${demo}' '${url}${WATER_BASE}/Locations?$top=2'`);
  }
  if (config.services.includes("sync")) {
    console.log(`Token endpoint: ${url}/oauth2/token; sync API: ${url}${SYNC_BASE} (see the README for a walk-through)`);
  }
  if (config.services.includes("relay")) {
    for (const line of relayBanner) console.log(line);
    console.log(`Webhook intake: ${url}${RELAY_BASE}; metrics: ${url}/metrics`);
  }
  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    process.once(signal, () => void shutdown(server, drains, signal));
  }
}

/**
 * Stops taking requests, lets those in flight finish (5 s at most), then runs
 * the drains (the relay saves its queue) and exits 0; exits 1 if all that
 * takes more than 30 s.
 */
async function shutdown(server: Server, drains: readonly (() => Promise<void>)[], signal: string): Promise<void> {
  console.log(`${signal}: finishing requests in flight, then exiting`);
  setTimeout(() => {
    console.error(`${signal}: could not stop cleanly within 30 s`);
    process.exit(1);
  }, 30_000).unref();
  const closed = new Promise((resolve) => server.close(resolve));
  server.closeIdleConnections();
  await Promise.race([closed, sleep(5000)]);
  server.closeAllConnections();
  try {
    await Promise.all(drains.map((drain) => drain()));
  } catch (error) {
    console.error(`${signal}: could not stop cleanly:`, error);
    process.exit(1);
  }
  process.exit(0);
}

/** Builds the relay (tenants, queue, intake, worker), mounts it and starts the worker; returns the banner lines. */
async function startRelay(
  config: Config,
  mount: (service: string, prefix: string, handler: Mount["handler"]) => void,
  metrics: MetricsRegistry,
  drains: (() => Promise<void>)[],
): Promise<string[]> {
  const random = pooledRandom();
  const registry = new TenantRegistry({ now: Date.now, random, secretOverlapMs: config.secretOverlapSeconds * 1000 });
  let plain: Map<string, string[]>;
  try {
    plain = readTenantsFile(registry, await readText(config.tenantsFile, "TENANTS_FILE"), config.tenantsFile);
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    throw new ConfigError("TENANTS_FILE", (error as Error).message);
  }
  const encryptionKey = await readEncryptionKey(config.encryptionKey);
  const { queue, restored, save } = await openQueue(config);
  let depth: QueueDepth = { ready: 0, delayed: 0, leased: 0, dead: 0 };
  const relayMetrics = registerRelayMetrics(metrics, () => depth);
  const delivery = createHttpDelivery({ policy: createAddressPolicy({ allow: config.allowPrivateTargets }), maxSocketsPerHost: config.endpointConcurrency });
  const worker = new RelayWorker({
    queue,
    registry,
    deliver: delivery.deliver,
    schedule: config.retrySchedule,
    now: Date.now,
    random: Math.random,
    setTimer: (task, ms) => {
      const timer = setTimeout(task, ms);
      return () => clearTimeout(timer);
    },
    concurrency: config.workerConcurrency,
    perEndpointConcurrency: config.endpointConcurrency,
    deliveryTimeoutMs: config.deliveryTimeoutMs,
    onAttempt: relayMetrics.attempt,
    onDead: relayMetrics.dead,
    onError: (error) => console.error("Relay worker:", error),
  });
  mount("relay", RELAY_BASE, createRelayService({
    registry,
    queue,
    now: Date.now,
    random,
    encryptionKey,
    maxPayloadBytes: config.maxPayloadBytes,
    onAccepted: (tenantId, jobs) => {
      relayMetrics.accepted(tenantId, jobs);
      worker.notify();
    },
    base: RELAY_BASE,
  }));
  // WORKER_CONCURRENCY=0 makes an intake-only process: it queues, something else delivers.
  if (config.workerConcurrency > 0) worker.start();
  const refresh = setInterval(() => {
    // While the backend is away these fail; the worker and intake say so already, and the next tick tries again.
    queue.depth(Date.now()).then((latest) => (depth = latest), () => {});
    queue.sweep(Date.now()).catch(() => {});
  }, 1000);
  refresh.unref();
  drains.push(async () => {
    clearInterval(refresh);
    // Deliveries in flight get a bounded time to finish; any still out are saved as ready and sent again after the restart.
    await Promise.race([worker.stop(), sleep(Math.min(config.deliveryTimeoutMs, 5000))]);
    delivery.close();
    await save();
    await queue.close();
  });
  const lines: string[] = [];
  if (config.storageType === "redis") lines.push(`Relay queue: Redis at ${redactUrl(config.redisUrl)}, keys under ${config.redisPrefix}`);
  if (config.storageType === "kafka") {
    lines.push(`Relay queue: Kafka at ${config.kafkaBrokers.join(",")}, topics ${config.kafkaTopicPrefix}.{jobs,retry,dead,state}, group ${config.kafkaGroupId}`);
  }
  if (restored > 0) lines.push(`Relay queue: ${restored} jobs restored from ${config.queueSnapshotFile}`);
  for (const tenant of registry.tenants()) {
    const keys = plain.get(tenant.id) ?? [];
    const endpoints = registry.endpoints(tenant.id).map((endpoint) => `${endpoint.id} -> ${endpoint.url}`);
    lines.push(`Relay tenant "${tenant.id}"${keys.length === 0 ? "" : ` (API key ${keys[0]})`}: ${endpoints.length === 0 ? "no endpoints" : endpoints.join(", ")}`);
  }
  if (config.workerConcurrency === 0) {
    lines.push("WORKER_CONCURRENCY=0: this process takes webhooks but delivers none; they wait in the queue");
  }
  if (config.allowPrivateTargets.length === 0) {
    lines.push("Deliveries to private and loopback addresses are refused; set ALLOW_PRIVATE_TARGETS (e.g. 127.0.0.1/32) to reach a local receiver");
  }
  return lines;
}

/**
 * The relay's queue as `STORAGE_TYPE` chooses: Redis (shared by every relay
 * process on it, nothing to save), or memory, restored from and saved to
 * `QUEUE_SNAPSHOT_FILE`.
 */
async function openQueue(config: Config): Promise<{ queue: JobQueue; restored: number; save: () => Promise<void> }> {
  if (config.storageType === "redis") {
    const where = redactUrl(config.redisUrl);
    let scripts: RedisScripts;
    try {
      scripts = await connectRedis(config.redisUrl, {
        onError: (error) => console.error(`Relay queue: Redis at ${where}: ${(error as Error).message}`),
      });
    } catch (error) {
      throw new ConfigError("REDIS_URL", `Cannot start: cannot reach Redis at ${where} (REDIS_URL): ${describeError(error)}`);
    }
    const queue = new RedisQueue(scripts, { prefix: config.redisPrefix, capacity: config.queueCapacity });
    return { queue, restored: 0, save: () => Promise.resolve() };
  }
  if (config.storageType === "kafka") return { queue: await openKafkaQueue(config), restored: 0, save: () => Promise.resolve() };
  const queue = new MemoryQueue({ capacity: config.queueCapacity });
  const restored = await restoreQueue(queue, config.queueSnapshotFile);
  return { queue, restored, save: () => saveQueue(queue, config.queueSnapshotFile) };
}

/**
 * Connects to Kafka, creates the relay's topics where the broker allows it
 * (else they must exist), and joins the relay's consumer group.
 */
async function openKafkaQueue(config: Config): Promise<JobQueue> {
  const where = config.kafkaBrokers.join(",");
  let log: Awaited<ReturnType<typeof connectKafka>>;
  try {
    log = await connectKafka(config.kafkaBrokers, {
      sessionTimeoutMs: config.kafkaSessionTimeoutMs,
      onError: (error) => console.error(`Relay queue: Kafka at ${where}: ${describeError(error)}`),
    });
  } catch (error) {
    throw new ConfigError("KAFKA_BROKER", `Cannot start: cannot reach Kafka at ${where} (KAFKA_BROKER): ${describeError(error)}`);
  }
  const topics = kafkaTopics(config.kafkaTopicPrefix);
  const refused = await log.createTopics([
    { topic: topics.jobs, partitions: config.kafkaPartitions },
    { topic: topics.retry, partitions: config.kafkaPartitions },
    { topic: topics.dead, partitions: config.kafkaPartitions },
    // Past the longest any job's state is shown (dead letters, 7 days), with a day to spare.
    { topic: topics.state, partitions: config.kafkaPartitions, compactRetentionMs: 8 * 86_400_000 },
  ]);
  try {
    return await KafkaQueue.open(log, { topics, groupId: config.kafkaGroupId, instanceId: uuidV4(pooledRandom()), capacity: config.queueCapacity });
  } catch (error) {
    await log.close();
    const why = refused === undefined ? "" : ` (creating them was refused: ${refused})`;
    throw new ConfigError("KAFKA_TOPIC_PREFIX", `Cannot start: cannot use the Kafka topics ${Object.values(topics).join(", ")}${why}: ${describeError(error)}`);
  }
}

/** An error's message, or its causes' (a refused connection may say nothing itself). */
function describeError(error: unknown): string {
  if (error instanceof AggregateError && error.errors.length > 0) return error.errors.map(describeError).join("; ");
  if (error instanceof Error) return error.message !== "" ? error.message : String((error as NodeJS.ErrnoException).code ?? error.name);
  return String(error);
}

/**
 * Reads the memory queue saved at the last shutdown, if any, into `queue`,
 * then removes the file (it is written again at the next shutdown).
 * @returns how many jobs it held
 */
async function restoreQueue(queue: MemoryQueue, file: string): Promise<number> {
  if (file === "") return 0;
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return 0;
    throw new ConfigError("QUEUE_SNAPSHOT_FILE", `Cannot start: QUEUE_SNAPSHOT_FILE ${file} cannot be read: ${(error as Error).message}`);
  }
  try {
    const snapshot = parseMemoryQueueSnapshot(text);
    queue.restore(snapshot);
    await rm(file);
    return snapshot.jobs.length;
  } catch (error) {
    throw new ConfigError("QUEUE_SNAPSHOT_FILE", `Cannot start: QUEUE_SNAPSHOT_FILE ${file} is not a usable queue snapshot (move it away to start empty): ${(error as Error).message}`);
  }
}

/** Writes the memory queue to `file` (through a temporary file, so a crash leaves the old one whole). */
async function saveQueue(queue: MemoryQueue, file: string): Promise<void> {
  if (file === "") return;
  const snapshot = queue.snapshot();
  await mkdir(dirname(file), { recursive: true });
  await writeFile(`${file}.tmp`, JSON.stringify(snapshot));
  await rename(`${file}.tmp`, file);
  console.log(`Relay queue: ${snapshot.jobs.length} jobs saved to ${file}`);
}

/** `ENCRYPTION_KEY`: a PEM RSA key (public, or private for its public half), or the path of one. */
async function readEncryptionKey(value: string): Promise<RsaPublicKey | undefined> {
  if (value === "") return undefined;
  const pem = value.includes("-----BEGIN") ? value.replaceAll("\\n", "\n") : await readText(value, "ENCRYPTION_KEY");
  try {
    return parseRsaKey(pem);
  } catch (error) {
    throw new ConfigError(
      "ENCRYPTION_KEY",
      `Cannot start: ENCRYPTION_KEY must be a PEM RSA key of 2048 bits or more (public, or private for its public half), or the path of one: ${(error as Error).message}`,
    );
  }
}

async function readText(file: string, variable: string): Promise<string> {
  try {
    return await readFile(file, "utf8");
  } catch {
    throw new ConfigError(variable, `Cannot start: ${variable} names ${file}, which cannot be read`);
  }
}

async function loadKeys(config: Config): Promise<{ keys: ApiKey[]; plain: Map<string, string> }> {
  const keys: ApiKey[] = [...config.apiKeys];
  let plain = new Map<string, string>();
  if (config.apiKeysFile !== "") {
    let text: string;
    try {
      text = await readFile(config.apiKeysFile, "utf8");
    } catch {
      throw new ConfigError("API_KEYS_FILE", `Cannot start: API_KEYS_FILE names ${config.apiKeysFile}, which cannot be read`);
    }
    const file = readApiKeysFile(text, config.apiKeysFile);
    keys.push(...file.keys);
    plain = file.plain;
  }
  if (keys.length === 0) {
    throw new ConfigError("API_KEYS", "Cannot start: no API keys are configured; set API_KEYS or API_KEYS_FILE");
  }
  return { keys, plain };
}

function printReport(report: LoadReport, dir: string): void {
  let rows = 0;
  for (const dataset of report.datasets) {
    rows += dataset.rows;
    const skipped = dataset.skippedRows === 0 ? "" : `, ${dataset.skippedRows} rows skipped`;
    console.log(`Loaded ${dataset.folder} (${dataset.doi}): ${dataset.rows} observations, ${dataset.locations} locations${skipped}`);
    for (const issue of dataset.issues) {
      console.log(`  ${issue.file}:${issue.line}:${issue.column}${issue.field === undefined ? "" : ` (${issue.field})`}: ${issue.message}`);
    }
  }
  for (const failure of report.failures) console.log(`Not loaded: ${failure.file}: ${failure.message}`);
  console.log(`${report.datasets.length} datasets, ${rows} observations from ${dir}`);
}

function listen(server: Server, config: Config): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once("error", (error: NodeJS.ErrnoException) => {
      const variable = process.env["WEBHOOK_PORT"] ? "WEBHOOK_PORT" : "PORT";
      reject(
        error.code === "EADDRINUSE"
          ? new ConfigError(variable, `Cannot start: port ${config.port} is in use; choose another with ${variable}`)
          : error,
      );
    });
    server.listen(config.port, config.host, () => resolve());
  });
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
});
