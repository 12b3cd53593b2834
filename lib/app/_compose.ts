// The parts of createApp that are plain functions of what it holds: the
// context the modules get, the mounts of the running services with their
// joined error statuses and metrics, the readiness sources, a description,
// a reload, and a bound on the close. Apart so that createApp reads as the
// loop it is.
import { pooledRandom } from "../crypto/mod.ts";
import {
  errorStatuses,
  type Mount,
  type ReadinessProbe,
  type RunningService,
  type ServiceDescription,
  withErrorStatuses,
} from "../http/mod.ts";
import type { Logger } from "../log/mod.ts";
import {
  createHttpMetrics,
  METRICS_ERROR_STATUS,
  type MetricsRegistry,
  withMetrics,
} from "../metrics/mod.ts";
import type { AppContext, AppOverrides } from "./app_types.ts";
import type { AppState } from "./app_state.ts";
import { createConsoleLogger, loggerOver } from "./console_logger.ts";
import type { ReadinessSource } from "./create_readiness_check.ts";
import type { Backends } from "./open_backends.ts";
import type { Config } from "./read_config.ts";

/** The clocks, randomness and log of an app: the overrides', else the real ones. */
export function appBasics(
  config: Config,
  overrides: AppOverrides,
): Pick<AppContext, "now" | "monotonic" | "random" | "log"> {
  const { now = Date.now, monotonic = () => performance.now(), random = pooledRandom() } =
    overrides;
  const log: Logger = overrides.log === undefined
    ? createConsoleLogger(config.log)
    : "child" in overrides.log
    ? overrides.log
    : loggerOver(overrides.log);
  return { now, monotonic, random, log };
}

/** What every module is given: the configuration, the registry, the basics and the backends. */
export function appContext(
  config: Config,
  overrides: AppOverrides,
  basics: Pick<AppContext, "now" | "monotonic" | "random" | "log">,
  metrics: MetricsRegistry,
  backends: Backends,
): AppContext {
  const stores = overrides.authStore !== undefined && overrides.syncStore !== undefined
    ? { auth: overrides.authStore, sync: overrides.syncStore }
    : undefined;
  return {
    config,
    metrics,
    ...basics,
    backends,
    ...(stores === undefined ? {} : { stores }),
    ...(overrides.deliver === undefined ? {} : { deliver: overrides.deliver }),
  };
}

/**
 * The mounts of the running services: each handler answering with every
 * service's error statuses joined (two tables that disagree stop the start
 * here), so that what a service throws of another domain (a refused bearer
 * token in the sync API) is answered with them; and measured, which notes
 * the route for the access log.
 */
export function mountServices(
  running: readonly RunningService[],
  metrics: MetricsRegistry,
  monotonic: () => number,
): Mount[] {
  const statuses = errorStatuses(
    METRICS_ERROR_STATUS,
    ...running.flatMap((
      service,
    ) => (service.errorStatus === undefined ? [] : [service.errorStatus])),
  );
  const httpMetrics = createHttpMetrics(metrics);
  return running.flatMap((service) => {
    const handler = withMetrics(withErrorStatuses(service.handler, statuses), {
      metrics: httpMetrics,
      service: service.name,
      route: service.handler.routeOf,
      now: monotonic,
    });
    return service.prefixes.map((prefix) => ({ prefix, handler }));
  });
}

/** The readiness sources of an app: the process's guard, then each running service's probes. */
export function readinessSources(
  guard: ReadinessProbe,
  running: readonly RunningService[],
): ReadinessSource[] {
  return [
    { service: "server", probes: [guard] },
    ...running.map((service) => ({ service: service.name, probes: service.readiness ?? [] })),
  ];
}

/** What the running services serve at `origin`, together. */
export function describeServices(
  running: readonly RunningService[],
  origin: string,
): ServiceDescription {
  const parts = running.map((service) => service.describe(origin));
  return {
    endpoints: parts.flatMap((part) => part.endpoints),
    credentials: parts.flatMap((part) => part.credentials),
    notes: parts.flatMap((part) => part.notes),
  };
}

/** Reloads every running service that can; the first failure is thrown once all have ended. */
export async function reloadServices(
  running: readonly RunningService[],
  state: AppState,
): Promise<void> {
  if (state !== "started") {
    throw new Error(
      `Cannot reload: the app is ${
        state === "starting" || state === "new" ? "not started" : "shutting down"
      }`,
    );
  }
  const failed = (await Promise.allSettled(
    running.flatMap((service) => (service.reload === undefined ? [] : [service.reload()])),
  )).find((result) => result.status === "rejected");
  if (failed !== undefined) throw failed.reason;
}

/** `work`, failing once `limitMs` have passed without it ending (the work itself goes on). */
export function withinLimit(work: Promise<void>, limitMs: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new Error(`Cannot stop cleanly within ${limitMs} ms: the services are still draining`),
        ),
      limitMs,
    );
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}
