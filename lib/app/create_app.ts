import { ACCOUNTS_MODULE } from "../accounts/mod.ts";
import { type Handler, mountHandlers } from "../http/mod.ts";
import { MetricsRegistry, registerProcessMetrics } from "../metrics/mod.ts";
import { RELAY_MODULE } from "../relay/mod.ts";
import { WATER_MODULE } from "../water/mod.ts";
import type { App, AppOverrides, ServiceModule } from "./app_types.ts";
import type { AppState } from "./app_state.ts";
import {
  appBasics,
  appContext,
  describeServices,
  mountServices,
  readinessSources,
  reloadServices,
  withinLimit,
} from "./_compose.ts";
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
  const basics = appBasics(config, overrides);
  const { log, monotonic } = basics;
  const accessLog = config.log.accessLog === "on" && log.enabled("info");
  const metrics = new MetricsRegistry();
  registerProcessMetrics(metrics);
  const backends = openBackends(config.storage, { log, now: basics.now });
  const context = appContext(config, overrides, basics, metrics, backends);
  const modules = overrides.modules ??
    BUILT_IN_MODULES.filter((module) => config.server.services.includes(module.name as never));
  // What /health and describe() name: the modules running, whatever SERVICES says.
  const names = modules.map((module) => module.name);
  const lifecycle = new Lifecycle(() => backends.close());
  const guard = new ProcessGuard({ log, now: monotonic });
  let state: AppState = "new";
  let readiness: () => Promise<ReadinessReport> = () =>
    Promise.resolve({ ready: true, problems: [] });
  const host = hostRoutes({
    metrics,
    services: names,
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
    requestId: requestIds(basics.random),
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
    const mounts = mountServices(lifecycle.running, metrics, monotonic);
    readiness = createReadinessCheck(readinessSources(guard.probe, lifecycle.running), {
      now: monotonic,
    });
    current = mountHandlers([...host.mounts, ...mounts]);
    state = "started";
  }

  function close(): Promise<void> {
    if (starting !== undefined && state === "starting") return starting.then(close, close);
    closing ??= withinLimit(
      shutDown(overrides.requestDrainMs ?? 5000),
      overrides.closeTimeoutMs ?? 30_000,
    );
    return closing;
  }

  async function shutDown(requestDrainMs: number): Promise<void> {
    state = "closing";
    current = host.notServing;
    // Streams never end by themselves: ended now, the requests in flight can finish.
    for (const service of lifecycle.running) service.endStreams?.();
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
    describe: (origin) => ({
      services: names,
      ...describeServices(lifecycle.running, origin),
    }),
    reload: () => reloadServices(lifecycle.running, state),
    close,
    guard: (target) => guard.install(target),
  };
}
