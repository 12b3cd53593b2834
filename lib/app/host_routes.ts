import {
  type AnsweredBy,
  answeredBy,
  type Handler,
  HttpError,
  keepRoutes,
  type Mount,
  mountHandlers,
  noteAnsweredBy,
  type ResponseEntry,
  type Router,
  type RunningService,
} from "../http/mod.ts";
import { encodedWriter, type Logger } from "../log/mod.ts";
import { AccessLine } from "./access_line.ts";
import { createMetricsHandler, type MetricsRegistry } from "../metrics/mod.ts";
import { METRICS_ROUTE_DOC } from "../metrics/_internal.ts";
import type { AppState } from "./app_state.ts";
import { createHealthHandler } from "./create_health_handler.ts";
import { createOpenApiHandler } from "./create_openapi_handler.ts";
import type { ReadinessReport } from "./create_readiness_check.ts";

/** What the host's own routes read of the app. */
export interface HostRoutesOptions {
  readonly metrics: MetricsRegistry;
  /** The names of the modules the app runs, for `/health`. */
  readonly services: readonly string[];
  readonly state: () => AppState;
  readonly ready: () => Promise<ReadinessReport>;
  /** The services started, whose routes `/openapi.json` documents. */
  readonly running: () => readonly RunningService[];
  /** Whether requests are noted for the access log. */
  readonly accessLog: boolean;
}

/** The host's routes, and what answers while the services do not. */
export interface HostRoutes {
  /** `/metrics`, `/health` and `/openapi.json`, answering in every state. */
  readonly mounts: readonly Mount[];
  /** What the app serves before it has started and once it is closing: the host's routes, and 503 for the rest. */
  readonly notServing: Handler;
}

/**
 * The host's own routes: `/metrics`, `/health` (with `/live` and `/ready`)
 * and `/openapi.json`, each request noted as the host's for the access log.
 * @param options the registry, the services, the app's state and readiness
 * @returns the mounts, and the handler of an app not serving
 */
export function hostRoutes(options: HostRoutesOptions): HostRoutes {
  const health = createHealthHandler({
    state: options.state,
    services: options.services,
    ready: options.ready,
  });
  const scrape = keepRoutes(createMetricsHandler(options.metrics), {
    routes: [{ method: "GET", path: "/metrics", doc: METRICS_ROUTE_DOC }],
    routeOf: () => "/metrics",
  });
  // /openapi.json: the document of the host's routes and of every service started, from their route tables.
  const openapi: Router = createOpenApiHandler({
    services: () => [
      { name: "host", routes: [...scrape.routes, ...health.routes, ...openapi.routes] },
      ...options.running().map((service) => ({
        name: service.name,
        routes: service.handler.routes,
      })),
    ],
  });
  const named = (handler: Router): Handler => {
    if (!options.accessLog) return handler;
    // One note a route, shared by its requests (the access line keeps its encoded parts by it).
    const notes = new Map<string, AnsweredBy>();
    return (request) => {
      const route = handler.routeOf(request) ?? "other";
      let by = notes.get(route);
      if (by === undefined) notes.set(route, by = { service: "host", route });
      noteAnsweredBy(request, by);
      return handler(request);
    };
  };
  const mounts: readonly Mount[] = [
    { prefix: "/metrics", handler: named(scrape) },
    { prefix: "/health", handler: named(health) },
    { prefix: "/openapi.json", handler: named(openapi) },
  ];
  const unavailable: Handler = () => {
    const state = options.state();
    const why = state === "new" || state === "starting" ? "is starting" : "is shutting down";
    throw new HttpError("ERR_HTTP_UNAVAILABLE", `Cannot answer: the server ${why}`, {
      headers: { "retry-after": "1" },
    });
  };
  return { mounts, notServing: mountHandlers([...mounts, { prefix: "/", handler: unavailable }]) };
}

/**
 * The access log's line for a response: never the query, headers or body.
 * @param log where the line goes
 * @returns the node listener's `onResponse`
 */
export function accessLogger(log: Logger): (entry: ResponseEntry) => void {
  // A JSON log takes the line as bytes, from one record kept for every response.
  const write = encodedWriter(log, "info");
  if (write !== undefined) {
    const line = new AccessLine();
    return (entry) => {
      line.set(entry, entry.request === undefined ? undefined : answeredBy(entry.request));
      write(line);
    };
  }
  return (entry) => {
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
  };
}
