import {
  type AnsweredBy,
  type Handler,
  type HttpRequest,
  type HttpResponse,
  noteAnsweredBy,
} from "../http/mod.ts";
import { statusOf } from "../http/_internal.ts";
import type { CounterChild } from "./counter.ts";
import type { HttpMetrics } from "./create_http_metrics.ts";
import type { HistogramChild } from "./histogram.ts";

/** Options of {@linkcode withMetrics}. */
export interface WithMetricsOptions {
  /** The metrics from `createHttpMetrics`. */
  metrics: HttpMetrics;
  /** The `service` label, e.g. `water`, `sync` or `relay`. */
  service: string;
  /**
   * Names the route of a request for the `route` label, once it is answered:
   * a router's `routeOf`, so the label is the pattern of the route that
   * answered (a small fixed set), never the raw path, which would give a
   * series per URL. Undefined counts as `other`.
   */
  route: (request: HttpRequest) => string | undefined;
  /** Monotonic clock in milliseconds, e.g. `() => performance.now()`. */
  now: () => number;
}

/** The route label of a request no route matches. */
const OTHER = "other";

// Any other method is counted as OTHER, so odd methods cannot add series.
const KNOWN_METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);

/**
 * Counts and times the requests a handler answers:
 * `tributary_http_requests_total{service,route,method,status}` and
 * `tributary_http_request_duration_seconds{service,route}`. A thrown error
 * counts with the status {@linkcode statusOf} gives it and is rethrown. A
 * streamed body is counted when the response starts, not when it ends. The
 * service and route are also noted on the request ({@linkcode noteAnsweredBy}),
 * for an access log to name the request by without looking its route up again.
 * @param handler the handler to measure
 * @param options the metrics, service name, route namer and clock
 * @returns the measured handler
 * @example
 * ```ts
 * const router = createRouter([{ method: "GET", path: "/items/:id", handler }]);
 * const measured = withMetrics(router, {
 *   metrics: createHttpMetrics(registry),
 *   service: "items",
 *   route: router.routeOf, // counted as route="/items/:id"
 *   now: () => performance.now(),
 * });
 * ```
 */
export function withMetrics(handler: Handler, options: WithMetricsOptions): Handler {
  const { metrics, service, route: routeOf, now } = options;
  // The series of each route, method and status, found once: a label lookup
  // per request cost more than the rest of the recording. Bounded as the
  // labels are: routes, methods and statuses are small fixed sets.
  const series = new Map<
    string,
    {
      by: AnsweredBy;
      byMethod: Map<string, Map<number, { count: CounterChild; duration: HistogramChild }>>;
    }
  >();
  const record = (request: HttpRequest, route: string, status: number, started: number): void => {
    const seconds = (now() - started) / 1000;
    const method = KNOWN_METHODS.has(request.method) ? request.method : "OTHER";
    let ofRoute = series.get(route);
    if (ofRoute === undefined) {
      series.set(route, ofRoute = { by: { service, route }, byMethod: new Map() });
    }
    noteAnsweredBy(request, ofRoute.by);
    const byMethod = ofRoute.byMethod;
    let byStatus = byMethod.get(method);
    if (byStatus === undefined) byMethod.set(method, byStatus = new Map());
    let found = byStatus.get(status);
    if (found === undefined) {
      found = {
        count: metrics.requests.labels({ service, route, method, status: String(status) }),
        duration: metrics.duration.labels({ service, route }),
      };
      byStatus.set(status, found);
    }
    found.count.inc();
    found.duration.observe(Math.max(0, seconds));
  };
  // No promise of its own for an answer that is not one (a handler answering at once).
  return function measured(request: HttpRequest): HttpResponse | Promise<HttpResponse> {
    const started = now();
    let answer: HttpResponse | Promise<HttpResponse>;
    try {
      answer = handler(request);
    } catch (error) {
      record(request, routeOf(request) ?? OTHER, statusOf(error), started);
      throw error;
    }
    if (!(answer instanceof Promise)) {
      record(request, routeOf(request) ?? OTHER, answer.status, started);
      return answer;
    }
    return answer.then(
      (response) => {
        record(request, routeOf(request) ?? OTHER, response.status, started);
        return response;
      },
      (error: unknown) => {
        record(request, routeOf(request) ?? OTHER, statusOf(error), started);
        throw error;
      },
    );
  };
}
