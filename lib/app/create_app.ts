import { type AuthStore, requireUser, startAuthService } from "../auth/mod.ts";
import { pooledRandom } from "../crypto/mod.ts";
import {
  answeredBy,
  createNodeListener,
  withCompression,
  withErrorStatuses,
  type Handler,
  HttpError,
  type HttpRequest,
  type HttpResponse,
  keepRoutes,
  type Mount,
  mountHandlers,
  noteAnsweredBy,
  type ResponseEntry,
  type Router,
  type RunningService,
  type ServiceDescription,
  type ServiceLog,
  waitAtMost,
  errorStatuses,
} from "../http/mod.ts";
import { type Logger, Progress } from "../log/mod.ts";
import {
  createHttpMetrics,
  createMetricsHandler,
  METRICS_ERROR_STATUS,
  METRICS_ROUTE_DOC,
  MetricsRegistry,
  registerProcessMetrics,
  withMetrics,
} from "../metrics/mod.ts";
import { type Deliver, startRelayService } from "../relay/mod.ts";
import { startSyncService, type SyncStore } from "../sync/mod.ts";
import { createExplorerService, type LoadProgress, startWaterService } from "../water/mod.ts";
import { openStateDir, type StateDir } from "../storage/mod.ts";
import { createConsoleLogger, loggerOver } from "./console_logger.ts";
import { createNodeServer, type NodeServer, readTlsFiles } from "./node_server.ts";
import { createHealthHandler } from "./create_health_handler.ts";
import { createOpenApiHandler } from "./create_openapi_handler.ts";
import { createReadinessCheck, type ReadinessReport, type ReadinessSource } from "./create_readiness_check.ts";
import { completeContextFrom, registerInOrder } from "./accounts.ts";
import { openSyncStores } from "./open_sync_stores.ts";
import { type GuardedProcess, ProcessGuard } from "./process_guard.ts";
import type { Config, ServiceName } from "./read_config.ts";

/** What a host may replace when it builds an app: clocks, randomness, stores, the log, more services. */
export interface AppOverrides {
  /**
   * Wall clock, milliseconds since the epoch (tokens, revisions, deliveries).
   * @default {Date.now}
   */
  now?: () => number;
  /**
   * Monotonic clock, milliseconds (rate limits, deadlines, request durations).
   * @default {() => performance.now()}
   */
  monotonic?: () => number;
  /**
   * Random bytes (tokens, ids, secrets, JWE keys).
   * @default {pooledRandom()}
   */
  random?: (size: number) => Uint8Array;
  /**
   * Where notes, survived failures and the access log go: a logger of
   * lib/log, or a plain `{ info, error }` log (fields then appended as JSON).
   * @default standard output, as `LOG_LEVEL` and `LOG_FORMAT` say
   */
  log?: Logger | ServiceLog;
  /** The token service's store. @default a new `MemoryAuthStore` */
  authStore?: AuthStore;
  /** The sync API's store. @default a new `MemorySyncStore` */
  syncStore?: SyncStore;
  /** The relay's delivery function. @default HTTP with the SSRF guard */
  deliver?: Deliver;
  /**
   * More services to run beside the built-in ones, started after them and
   * mounted, measured and drained the same way.
   */
  services?: readonly ((app: AppContext) => Promise<RunningService>)[];
  /**
   * Longest time {@linkcode App.close} may take before it gives up.
   * @default {30000}
   */
  closeTimeoutMs?: number;
  /**
   * Longest time requests in flight get to finish at close, before the services drain.
   * @default {5000}
   */
  requestDrainMs?: number;
}

/** What an added service gets from the app it runs in. */
export interface AppContext {
  readonly config: Config;
  readonly metrics: MetricsRegistry;
  readonly log: Logger;
  readonly now: () => number;
  readonly monotonic: () => number;
  readonly random: (size: number) => Uint8Array;
}

/** What a started app serves: its services' entry points, demo credentials and notes, together. */
export interface AppDescription extends ServiceDescription {
  /** The services it runs, as `SERVICES` names them. */
  readonly services: readonly string[];
}

/** Where {@linkcode App.listen} listens. */
export interface ListeningAddress {
  /** The local URL it answers on, e.g. `http://127.0.0.1:41234`. */
  readonly url: string;
  readonly port: number;
  /** The URL users reach it by: `PUBLIC_URL` when set, else {@linkcode url} (with `localhost` for a wildcard host). */
  readonly publicUrl: string;
}

/** The services of a configuration, composed: one handler, a start, a bounded close. */
export interface App {
  readonly config: Config;
  /** Where the app logs (the server's start-up lines and signals too). */
  readonly log: Logger;
  /** The registry `/metrics` serves. */
  readonly metrics: MetricsRegistry;
  /**
   * Answers every request: the services' routes, `/metrics`, and `/health`,
   * `/health/live` and `/health/ready` (the latter 200 only once started
   * with every backend the services need answering).
   * Before {@linkcode App.start} finishes and once {@linkcode App.close}
   * begins, service routes answer 503 with `Retry-After`.
   */
  readonly handler: Handler;
  /**
   * Loads data, connects stores, starts workers; resolves once every service
   * answers. What the defaults name and a new project lacks (the datasets,
   * API keys, OAuth clients and tenants files of `data/`) is started without,
   * each said in one line of the log; and a `STATE_DIR` that is not there yet
   * is not made until the first write or {@linkcode App.listen}.
   * @throws {ConfigError} naming the variable whose value, or the file it names, cannot be used
   */
  start(): Promise<void>;
  /**
   * Serves {@linkcode App.handler} over HTTP/1.1 (after {@linkcode App.start}); `close` stops it.
   * The state folder is made and locked first, if no write has done it yet.
   * @throws {ConfigError} naming STATE_DIR when its folder cannot be made or another process holds it, PORT when the port is taken
   */
  listen(options?: { port?: number; host?: string }): Promise<ListeningAddress>;
  /**
   * What the started app serves.
   * @param origin where it is served, e.g. `http://127.0.0.1:8000`
   */
  describe(origin: string): AppDescription;
  /**
   * Loads the services' data again without a restart (the water datasets),
   * as `SIGHUP` asks; each service logs what it loaded. Requests are answered
   * meanwhile, from the data before until the new data is in place.
   * @throws {Error} when the app is not started, or a service's reload failed (its data before keeps serving)
   */
  reload(): Promise<void>;
  /**
   * Stops taking requests, lets those in flight finish (`requestDrainMs`),
   * drains every service (deliveries in flight, queued sync jobs), then closes
   * them (the memory queue is saved, stores and connections closed).
   * @throws {Error} when that takes longer than `closeTimeoutMs`
   */
  close(): Promise<void>;
  /**
   * Keeps the process alive through a promise rejection nothing handled:
   * an error line, and `/health/ready` answering 503 naming it for a minute
   * (see {@linkcode ProcessGuard}), instead of Node's exit. The server installs it.
   * @param target the process, e.g. `process`
   * @returns a function that uninstalls it
   */
  guard(target: GuardedProcess): () => void;
}

/**
 * Request ids of one process: a random prefix (so that processes differ) and
 * a counter, e.g. `3f9a1c0e-1k`; cheap enough for every request.
 * @param random the random source
 * @returns a generator of ids
 */
function requestIds(random: (size: number) => Uint8Array): () => string {
  const prefix = Array.from(random(4), (byte) => byte.toString(16).padStart(2, "0")).join("");
  let n = 0;
  return () => `${prefix}-${(++n).toString(36)}`;
}

/**
 * Builds the services a configuration enables (`SERVICES`), with their
 * stores, workers and metrics, behind one handler.
 * @param config the configuration, e.g. from `readConfig(process.env)`
 * @param overrides clocks, randomness, stores, the log and more services
 * @returns the app, not yet started
 * @example
 * ```ts
 * const app = createApp(readConfig({ ...process.env, SERVICES: "water" }));
 * await app.start();
 * const { url } = await app.listen({ port: 0 });
 * console.log(app.describe(url).endpoints);
 * await app.close();
 * ```
 */
export function createApp(config: Config, overrides: AppOverrides = {}): App {
  const now = overrides.now ?? Date.now;
  const monotonic = overrides.monotonic ?? (() => performance.now());
  const random = overrides.random ?? pooledRandom();
  const log: Logger = overrides.log === undefined
    ? createConsoleLogger(config.log)
    : "child" in overrides.log ? overrides.log : loggerOver(overrides.log);
  const accessLog = config.log.accessLog === "on" && log.enabled("info");
  const metrics = new MetricsRegistry();
  registerProcessMetrics(metrics);
  const httpMetrics = createHttpMetrics(metrics);
  const context: AppContext = { config, metrics, log, now, monotonic, random };
  const running: RunningService[] = [];
  /** What closes after every service has: the stores. */
  const closers: (() => Promise<void>)[] = [];
  const storeNotes: string[] = [];
  /**
   * The state folder, taken by the first service that journals in it; released after every store closed.
   * A folder not there yet is made and locked at the first write or at listen, whichever comes first:
   * an app started (or failing to start) in a new project writes nothing until then.
   */
  let stateDir: Promise<StateDir> | undefined;
  const takeStateDir = (): Promise<StateDir> => (stateDir ??= openStateDir(config.storage.stateDir, { lazily: true, leaseMs: config.storage.stateLockLeaseMs }));
  const releaseState = async (): Promise<void> => {
    const held = stateDir;
    stateDir = undefined;
    if (held !== undefined) await (await held.catch(() => undefined))?.close();
  };
  let state: "new" | "starting" | "started" | "closing" | "closed" = "new";
  let inFlight = 0;
  let settled: (() => void) | undefined;
  let server: NodeServer | undefined;
  let starting: Promise<void> | undefined;
  let closing: Promise<void> | undefined;
  // Unhandled rejections, once `guard` is installed: readiness fails a while after one.
  const processGuard = new ProcessGuard({ log, now: monotonic });
  /** The services' backends that `/health/ready` asks, besides the app's state; known once they started. */
  const readinessSources: ReadinessSource[] = [{ service: "server", probes: [processGuard.probe] }];
  let readiness: () => Promise<ReadinessReport> = () => Promise.resolve({ ready: true, problems: [] });

  // The host's own routes answer in every state; the services' only once started and until closing.
  const health = createHealthHandler({ state: () => state, services: config.server.services, ready: () => readiness() });
  const scrape = keepRoutes(createMetricsHandler(metrics), {
    routes: [{ method: "GET", path: "/metrics", doc: METRICS_ROUTE_DOC }],
    routeOf: () => "/metrics",
  });
  // /openapi.json: the document of the host's routes and of every service started, from their route tables.
  const openapi: Router = createOpenApiHandler({
    services: () => [
      { name: "host", routes: [...scrape.routes, ...health.routes, ...openapi.routes] },
      ...running.map((service) => ({ name: service.name, routes: service.handler.routes })),
    ],
  });
  const hostMounts: readonly Mount[] = [
    { prefix: "/metrics", handler: named(scrape) },
    { prefix: "/health", handler: named(health) },
    { prefix: "/openapi.json", handler: named(openapi) },
  ];
  const unavailable: Handler = () => {
    const why = state === "new" || state === "starting" ? "is starting" : "is shutting down";
    throw new HttpError("ERR_HTTP_UNAVAILABLE", `Cannot answer: the server ${why}`, { headers: { "retry-after": "1" } });
  };
  const notServing = mountHandlers([...hostMounts, { prefix: "/", handler: unavailable }]);
  let current: Handler = notServing;
  const settle = (): void => {
    if (--inFlight === 0) settled?.();
  };

  /** A host route's handler that notes, for the access log, that the host answered and by which route (a service's handler notes as it is measured). */
  function named(handler: Router): Handler {
    if (!accessLog) return handler;
    return (request) => {
      noteAnsweredBy(request, { service: "host", route: handler.routeOf(request) ?? "other" });
      return handler(request);
    };
  }

  /** The access log's line for a response: never the query, headers or body. */
  function logResponse(entry: ResponseEntry): void {
    const by = entry.request === undefined ? undefined : answeredBy(entry.request);
    const route = by?.route ?? "other";
    log.info(`${entry.method} ${route} ${entry.status}`, {
      event: "request",
      method: entry.method,
      route,
      status: entry.status,
      durationMs: Math.round(entry.durationMs * 1000) / 1000,
      bytes: entry.bytes,
      requestId: entry.requestId,
      service: by?.service,
      client: entry.request?.remoteAddress,
      aborted: entry.aborted ? true : undefined,
    });
  }

  /** What `listen` serves: the node server itself knows the requests in flight when it closes. */
  function dispatch(request: HttpRequest): HttpResponse | Promise<HttpResponse> {
    return current(request);
  }

  /** What a host serves `handler` through: it counts the requests in flight, which close waits for. */
  function handler(request: HttpRequest): HttpResponse | Promise<HttpResponse> {
    inFlight++;
    let answer: HttpResponse | Promise<HttpResponse>;
    try {
      answer = current(request);
    } catch (error) {
      settle();
      throw error;
    }
    if (answer instanceof Promise) answer.then(settle, settle);
    else settle();
    return answer;
  }

  async function startServices(): Promise<void> {
    const enabled = new Set<ServiceName>(config.server.services);
    if (enabled.has("water")) {
      // A log line at most a second while the datasets load (a large set takes a while), then one at the end.
      let loading: Progress | undefined;
      let read = 0;
      let rows = 0;
      const onLoadProgress = (progress: LoadProgress): void => {
        if (loading === undefined || progress.bytes < read) loading = new Progress({ label: "Loading datasets", now: monotonic, log, unit: "rows" });
        read = progress.bytes;
        rows = progress.rows;
        loading.update({ done: progress.rows, bytes: progress.bytes, totalBytes: progress.totalBytes });
      };
      running.push(await startWaterService(config.water, { now: monotonic, wallClock: now, log, onLoadProgress, compressAboveBytes: config.server.compressAboveBytes }));
      loading?.finish({ done: rows });
    }
    // The water-data explorer, a page at `/` that asks the water API with the user's key.
    if (enabled.has("water")) running.push(createExplorerService(config.water));
    if (enabled.has("sync")) {
      const stores = overrides.authStore !== undefined && overrides.syncStore !== undefined
        ? { auth: overrides.authStore, sync: overrides.syncStore, where: "in the stores the host gave", close: () => Promise.resolve() }
        : await openSyncStores(config, { now, random, log, state: takeStateDir });
      closers.push(() => stores.close());
      const authStore = overrides.authStore ?? stores.auth;
      const syncStore = overrides.syncStore ?? stores.sync;
      storeNotes.push(`Users, tokens and synced data: ${stores.where}`);
      if (stores.readiness !== undefined) readinessSources.push({ service: "sync", probes: stores.readiness });
      const auth = await startAuthService(config.auth, {
        store: authStore,
        ...(stores.throttle === undefined ? {} : { throttle: stores.throttle }),
        now,
        random,
        log,
        storeLogsOutages: stores.logOutages === true,
        // A sign-up writes the user and its sync context: in one transaction on PostgreSQL, else the context first.
        register: (overrides.authStore === undefined && overrides.syncStore === undefined ? stores.register : undefined) ?? registerInOrder(authStore, syncStore),
      });
      running.push(auth.service);
      running.push(await startSyncService(config.sync, {
        store: syncStore,
        authorize: (request) => requireUser(request, auth.tokens, { scope: "UserActivity" }),
        onAccountDeleted: (owner) => auth.tokens.deleteUser(owner),
        // An account an earlier version left without a context gets one on first use.
        completeContext: completeContextFrom(authStore, syncStore),
        log,
        now,
        storeLogsOutages: stores.logOutages === true,
      }));
    }
    if (enabled.has("relay")) {
      // The memory queue journals in STATE_DIR (an empty STATE_DIR keeps it in memory only).
      const journaled = config.relay.storageType === "memory" && config.storage.stateDir !== "";
      running.push(await startRelayService(config.relay, {
        metrics,
        now,
        random,
        log,
        ...(journaled ? { state: await takeStateDir() } : {}),
        ...(overrides.deliver === undefined ? {} : { deliver: overrides.deliver }),
      }));
    }
    for (const start of overrides.services ?? []) running.push(await start(context));
    const mounts: Mount[] = [];
    // Every service's error statuses joined (a table that disagrees with another stops the start here):
    // what a service throws of another domain (a refused bearer token in the sync API) is answered with them.
    const statuses = errorStatuses(METRICS_ERROR_STATUS, ...running.flatMap((service) => (service.errorStatus === undefined ? [] : [service.errorStatus])));
    for (const service of running) {
      // Measuring notes the service and route on the request too, which the access log reads.
      const answered = withErrorStatuses(service.handler, statuses);
      const handler = withMetrics(answered, { metrics: httpMetrics, service: service.name, route: service.handler.routeOf, now: monotonic });
      for (const prefix of service.prefixes) mounts.push({ prefix, handler });
    }
    for (const service of running) readinessSources.push({ service: service.name, probes: service.readiness ?? [] });
    readiness = createReadinessCheck(readinessSources, { now: monotonic });
    current = mountHandlers([...hostMounts, ...mounts]);
  }

  async function start(): Promise<void> {
    if (state !== "new") throw new Error(`Cannot start the app: it is ${state === "starting" ? "starting" : state}`);
    state = "starting";
    try {
      await startServices();
    } catch (error) {
      // What did start is stopped again, so that a failed start leaves nothing running.
      await Promise.allSettled(running.map((service) => service.drain()));
      await Promise.allSettled(running.map((service) => service.close()));
      await Promise.allSettled(closers.map((close) => close()));
      await releaseState();
      state = "closed";
      throw error;
    }
    state = "started";
  }

  async function listen(options: { port?: number; host?: string } = {}): Promise<ListeningAddress> {
    if (server !== undefined) throw new Error("Cannot listen: the app listens already");
    // Serving, the app holds its state folder: made and locked now if no write has done it yet.
    if (stateDir !== undefined) await (await stateDir).hold();
    const port = options.port ?? config.server.port;
    const host = options.host ?? config.server.host;
    const tls = readTlsFiles(config.server.tlsCertFile, config.server.tlsKeyFile);
    const ids = requestIds(random);
    const created = createNodeServer(createNodeListener(withCompression(dispatch, { minBytes: config.server.compressAboveBytes }), {
      onError: (error) => log.error("Unexpected error", error),
      requestId: ids,
      ...(accessLog ? { onResponse: logResponse, now: monotonic } : {}),
      ...(config.server.publicUrl === undefined ? {} : { publicOrigin: config.server.publicUrl }),
      ...(config.server.trustProxy === undefined ? {} : { trustedProxies: config.server.trustProxy, forwardedHeaders: config.server.trustProxyHeaders }),
    }), tls);
    const bound = await created.listen(port, host);
    server = created;
    const shown = host === "0.0.0.0" || host === "::" ? "localhost" : host.includes(":") ? `[${host}]` : host;
    const url = `${created.scheme}://${shown}:${bound}`;
    return { url, port: bound, publicUrl: config.server.publicUrl ?? url };
  }

  function describe(origin: string): AppDescription {
    const parts = running.map((service) => service.describe(origin));
    return {
      services: config.server.services,
      endpoints: parts.flatMap((part) => part.endpoints),
      credentials: parts.flatMap((part) => part.credentials),
      notes: [...storeNotes, ...parts.flatMap((part) => part.notes)],
    };
  }

  async function reload(): Promise<void> {
    if (state !== "started") throw new Error(`Cannot reload: the app is ${state === "starting" || state === "new" ? "not started" : "shutting down"}`);
    const results = await Promise.allSettled(running.flatMap((service) => (service.reload === undefined ? [] : [service.reload()])));
    const failed = results.find((result) => result.status === "rejected");
    if (failed !== undefined) throw failed.reason;
  }

  async function shutDown(requestDrainMs: number): Promise<void> {
    state = "closing";
    current = notServing;
    if (server !== undefined) {
      const listening = server;
      const stopped = listening.close();
      listening.closeIdle();
      await waitAtMost(stopped, requestDrainMs);
      listening.closeAll();
    }
    if (inFlight > 0) await waitAtMost(new Promise<void>((resolve) => (settled = resolve)), requestDrainMs);
    await Promise.all(running.map((service) => service.drain()));
    await Promise.all(running.map((service) => service.close()));
    await Promise.all(closers.map((close) => close()));
    await releaseState();
    state = "closed";
  }

  function close(): Promise<void> {
    if (starting !== undefined && state === "starting") return starting.then(close, close);
    closing ??= (async () => {
      const limit = overrides.closeTimeoutMs ?? 30_000;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const late = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`Cannot stop cleanly within ${limit} ms: the services are still draining`)), limit);
      });
      try {
        await Promise.race([shutDown(overrides.requestDrainMs ?? 5000), late]);
      } finally {
        clearTimeout(timer);
      }
    })();
    return closing;
  }

  return {
    config,
    log,
    metrics,
    handler,
    start: () => (starting ??= start()),
    listen,
    describe,
    reload,
    close,
    guard: (target) => processGuard.install(target),
  };
}
