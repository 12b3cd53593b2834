import { ACCOUNTS_MODULE } from "../accounts/mod.ts";
import { pooledRandom } from "../crypto/mod.ts";
import {
  errorStatuses,
  type Handler,
  type Mount,
  mountHandlers,
  withErrorStatuses,
} from "../http/mod.ts";
import type { Logger } from "../log/mod.ts";
import {
  createHttpMetrics,
  METRICS_ERROR_STATUS,
  MetricsRegistry,
  registerProcessMetrics,
  withMetrics,
} from "../metrics/mod.ts";
import { RELAY_MODULE } from "../relay/mod.ts";
import { WATER_MODULE } from "../water/mod.ts";
import type { App, AppContext, AppOverrides, ServiceModule } from "./app_types.ts";
import type { AppState } from "./app_state.ts";
import { createConsoleLogger, loggerOver } from "./console_logger.ts";
import { createReadinessCheck, type ReadinessReport } from "./create_readiness_check.ts";
import { accessLogger, hostRoutes } from "./host_routes.ts";
import { Lifecycle } from "./lifecycle.ts";
import { openBackends } from "./open_backends.ts";
import { ProcessGuard } from "./process_guard.ts";
import type { Config } from "./read_config.ts";
import { requestIds } from "./request_ids.ts";
import { countRequests, serveOverHttp } from "./serve.ts";

/** The built-in modules, in the order they start and mount; `SERVICES` names which run. */
export const BUILT_IN_MODULES: readonly ServiceModule[] = [
  WATER_MODULE,
  ACCOUNTS_MODULE,
  RELAY_MODULE,
];

/**
 * Builds an app: the modules `SERVICES` names (or those given), their
 * backends, metrics and host routes, behind one handler; a loop over the
 * modules, started, drained and closed in order.
 * @param config the configuration, e.g. from `readConfig(process.env)`
 * @param overrides clocks, randomness, stores, the log, modules and more services
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
  const { now = Date.now, monotonic = () => performance.now(), random = pooledRandom() } =
    overrides;
  const log: Logger = overrides.log === undefined
    ? createConsoleLogger(config.log)
    : "child" in overrides.log
    ? overrides.log
    : loggerOver(overrides.log);
  const accessLog = config.log.accessLog === "on" && log.enabled("info");
  const metrics = new MetricsRegistry();
  registerProcessMetrics(metrics);
  const backends = openBackends(config.storage, { log, now });
  const stores = overrides.authStore !== undefined && overrides.syncStore !== undefined
    ? { auth: overrides.authStore, sync: overrides.syncStore }
    : undefined;
  const context: AppContext = {
    config,
    metrics,
    log,
    now,
    monotonic,
    random,
    backends,
    ...(stores === undefined ? {} : { stores }),
    ...(overrides.deliver === undefined ? {} : { deliver: overrides.deliver }),
  };
  const modules = overrides.modules ??
    BUILT_IN_MODULES.filter((module) => config.server.services.includes(module.name as never));
  const lifecycle = new Lifecycle(() => backends.close());
  const guard = new ProcessGuard({ log, now: monotonic });
  let state: AppState = "new";
  let readiness: () => Promise<ReadinessReport> = () =>
    Promise.resolve({ ready: true, problems: [] });
  const host = hostRoutes({
    metrics,
    services: config.server.services,
    state: () => state,
    ready: () => readiness(),
    running: () => lifecycle.running,
    accessLog,
  });
  let current: Handler = host.notServing;
  const counted = countRequests((request) => current(request));
  const served = serveOverHttp({
    config,
    handler: (request) => current(request),
    log,
    requestId: requestIds(random),
    ...(accessLog ? { onResponse: accessLogger(log) } : {}),
    now: monotonic,
  });
  let starting: Promise<void> | undefined;
  let closing: Promise<void> | undefined;

  async function start(): Promise<void> {
    if (state !== "new") throw new Error(`Cannot start the app: it is ${state}`);
    state = "starting";
    try {
      await lifecycle.start([
        ...modules.map((module) => () => module.start(config, context)),
        ...(overrides.services ?? []).map((add) => async () => [await add(context)]),
      ]);
    } catch (error) {
      state = "closed";
      throw error;
    }
    // Every service's error statuses joined (two tables that disagree stop the start here): what a service throws of
    // another domain (a refused bearer token in the sync API) is answered with them. Measuring notes the route for the access log.
    const statuses = errorStatuses(
      METRICS_ERROR_STATUS,
      ...lifecycle.running.flatMap((
        service,
      ) => (service.errorStatus === undefined ? [] : [service.errorStatus])),
    );
    const httpMetrics = createHttpMetrics(metrics);
    const mounts: Mount[] = lifecycle.running.flatMap((service) => {
      const handler = withMetrics(withErrorStatuses(service.handler, statuses), {
        metrics: httpMetrics,
        service: service.name,
        route: service.handler.routeOf,
        now: monotonic,
      });
      return service.prefixes.map((prefix) => ({ prefix, handler }));
    });
    const sources = [
      { service: "server", probes: [guard.probe] },
      ...lifecycle.running.map((service) => ({
        service: service.name,
        probes: service.readiness ?? [],
      })),
    ];
    readiness = createReadinessCheck(sources, { now: monotonic });
    current = mountHandlers([...host.mounts, ...mounts]);
    state = "started";
  }

  function close(): Promise<void> {
    if (starting !== undefined && state === "starting") return starting.then(close, close);
    const limit = overrides.closeTimeoutMs ?? 30_000;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<never>((
      _,
      reject,
    ) => (timer = setTimeout(
      () =>
        reject(
          new Error(`Cannot stop cleanly within ${limit} ms: the services are still draining`),
        ),
      limit,
    )));
    closing ??= Promise.race([shutDown(overrides.requestDrainMs ?? 5000), late]).finally(() =>
      clearTimeout(timer)
    );
    return closing;
  }

  async function shutDown(requestDrainMs: number): Promise<void> {
    state = "closing";
    current = host.notServing;
    await served.stop(requestDrainMs);
    await counted.settled(requestDrainMs);
    await lifecycle.stop();
    state = "closed";
  }

  return {
    config,
    log,
    metrics,
    handler: counted.handler,
    start: () => (starting ??= start()),
    async listen(options = {}) {
      // Serving, the app holds its state folder: made and locked now if no write has done it yet.
      await backends.hold();
      return served.listen(options.port ?? config.server.port, options.host ?? config.server.host);
    },
    describe(origin) {
      const parts = lifecycle.running.map((service) => service.describe(origin));
      return {
        services: config.server.services,
        endpoints: parts.flatMap((part) => part.endpoints),
        credentials: parts.flatMap((part) => part.credentials),
        notes: parts.flatMap((part) => part.notes),
      };
    },
    async reload() {
      if (state !== "started") {
        throw new Error(
          `Cannot reload: the app is ${
            state === "starting" || state === "new" ? "not started" : "shutting down"
          }`,
        );
      }
      const failed = (await Promise.allSettled(
        lifecycle.running.flatMap((
          service,
        ) => (service.reload === undefined ? [] : [service.reload()])),
      )).find((result) => result.status === "rejected");
      if (failed !== undefined) throw failed.reason;
    },
    close,
    guard: (target) => guard.install(target),
  };
}
