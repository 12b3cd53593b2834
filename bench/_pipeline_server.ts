// One stage of bench/pipeline's request path, served by a process of its own:
// a handler answering fixed bytes behind the library's pieces up to that stage
// (bench/_pipeline.ts lists them), composed as lib/app composes them for the
// water service in the default configuration. Usage: _pipeline_server.ts <stage>
// (any but bare: bench/_bare_server.ts is the bare one). Prints one line,
// {"event": "listening", "url": ...}; with the access log, its lines follow on
// standard output.
import { requestIds } from "../lib/app/request_ids.ts";
import { createConsoleLogger } from "../lib/app/console_logger.ts";
import { accessLogger, hostRoutes } from "../lib/app/host_routes.ts";
import { createNodeServer } from "../lib/app/node_server.ts";
import { readConfig } from "../lib/app/mod.ts";
import { pooledRandom } from "../lib/crypto/mod.ts";
import {
  authenticateApiKey,
  createNodeListener,
  createRouter,
  errorStatuses,
  type Handler,
  type HttpRequest,
  type HttpResponse,
  type Identity,
  indexApiKeys,
  keepRoutes,
  mountHandlers,
  parseApiKey,
  RateLimiter,
  type Router,
  withCors,
  withErrorStatuses,
  withRateLimit,
} from "../lib/http/mod.ts";
import { withCompression } from "../lib/http/_internal.ts";
import {
  createHttpMetrics,
  METRICS_ERROR_STATUS,
  MetricsRegistry,
  registerProcessMetrics,
  withMetrics,
} from "../lib/metrics/mod.ts";
import { createWaterService, loadDatasets, WATER_ERROR_STATUS } from "../lib/water/mod.ts";
import { EXPOSED_HEADERS } from "../lib/water/http/create_water_service.ts";
import { API_KEY, BODY, CONTENT_TYPE, includes, type StageName, STAGES } from "./_pipeline.ts";

const stage = process.argv[2] as StageName;
if (!STAGES.some((known) => known.name === stage) || stage === "bare") {
  throw new Error(`Cannot serve stage "${process.argv[2]}": choose a stage of bench/_pipeline.ts`);
}
// The defaults, whatever this process's environment says, but for a rate limit no request reaches.
const config = readConfig({ RATE_LIMIT_PER_SECOND: "1000000" });
const monotonic = (): number => performance.now();
const log = createConsoleLogger(config.log);
const accessLog = includes(stage, "access-log") && config.log.accessLog === "on" &&
  log.enabled("info");
const base = "/v1/odata/v4";

/** The handler: fixed bytes, as a route's answer is (a new record each time). */
const headers = { "content-type": CONTENT_TYPE };
const fixed = (): HttpResponse => ({ status: 200, headers, body: BODY });

/**
 * The water service's own route table (its methods and paths, from an empty
 * store), every route answering `fixed`.
 */
async function waterRoutes(): Promise<Router> {
  const { store } = await loadDatasets(`${import.meta.dirname}/no-such-datasets`, {
    optionalFolder: true,
  });
  const water = createWaterService(store, { keys: new Map(), now: monotonic, basePath: base });
  return createRouter(water.routes.map(({ method, path }) => ({ method, path, handler: fixed })));
}

/** The router behind the key check and rate limit, wrapped as createWaterService wraps it. */
function limited(router: Router): Router {
  const keys = indexApiKeys([parseApiKey("bench", API_KEY)]);
  const limiter = new RateLimiter({
    ratePerSecond: config.water.rateLimitPerSecond,
    burst: config.water.rateLimitBurst,
    maxConcurrent: config.water.rateLimitConcurrency,
    now: monotonic,
  });
  // As createWaterService identifies a caller: options made once, a limit key per identity.
  const authenticate = { keys, keylessOrigins: new Set(config.water.corsOrigins) };
  const limitKeys = new WeakMap<Identity, string>();
  const identify = (request: HttpRequest): string => {
    const identity = authenticateApiKey(request, authenticate);
    let key = limitKeys.get(identity);
    if (key === undefined) limitKeys.set(identity, key = `${identity.kind}:${identity.id}`);
    return key;
  };
  return keepRoutes(
    withCors(
      withRateLimit(
        withErrorStatuses(router, errorStatuses(WATER_ERROR_STATUS)),
        limiter,
        identify,
      ),
      {
        origins: config.water.corsOrigins,
        methods: ["GET", "HEAD"],
        exposeHeaders: EXPOSED_HEADERS,
      },
    ),
    router,
  );
}

/** What the node listener serves at this stage. */
async function compose(): Promise<Handler> {
  if (!includes(stage, "router")) return fixed;
  const router = await waterRoutes();
  const service = includes(stage, "rate-limit") ? limited(router) : router;
  const metrics = new MetricsRegistry();
  registerProcessMetrics(metrics);
  // As createApp mounts a started service: measured, with every service's error statuses.
  const measured = includes(stage, "metrics")
    ? withMetrics(
      withErrorStatuses(service, errorStatuses(METRICS_ERROR_STATUS, WATER_ERROR_STATUS)),
      {
        metrics: createHttpMetrics(metrics),
        service: "water",
        route: service.routeOf,
        now: monotonic,
      },
    )
    : service;
  const host = hostRoutes({
    metrics,
    services: ["water"],
    state: () => "started",
    ready: () => Promise.resolve({ ready: true, problems: [] }),
    running: () => [],
    accessLog,
  });
  // The app's mounts (the host's routes, the water module's prefixes), behind its switch.
  const current = mountHandlers([
    ...host.mounts,
    { prefix: base, handler: measured },
    { prefix: "/admin/datasets", handler: measured },
  ]);
  return (request) => current(request);
}

const handler = await compose();
// As serveOverHttp serves the app.
const listener = createNodeListener(
  includes(stage, "compression")
    ? withCompression(handler, { minBytes: config.server.compressAboveBytes })
    : handler,
  {
    onError: (error) => log.error("Unexpected error", error),
    ...(includes(stage, "request-id") ? { requestId: requestIds(pooledRandom()) } : {}),
    ...(accessLog ? { onResponse: accessLogger(log), now: monotonic } : {}),
  },
);
const server = createNodeServer(listener, undefined);
const port = await server.listen(0, "127.0.0.1");
console.log(JSON.stringify({ event: "listening", url: `http://127.0.0.1:${port}` }));
