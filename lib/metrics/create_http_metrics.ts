import type { Counter } from "./counter.ts";
import type { Histogram } from "./histogram.ts";
import type { MetricsRegistry } from "./metrics_registry.ts";

/** The two metrics {@linkcode withMetrics} updates, shared by every service of a server. */
export interface HttpMetrics {
  /** `tributary_http_requests_total{service,route,method,status}`. */
  readonly requests: Counter;
  /** `tributary_http_request_duration_seconds{service,route}`. */
  readonly duration: Histogram;
}

/** Options of {@linkcode createHttpMetrics}. */
export interface HttpMetricsOptions {
  /**
   * Bucket bounds of the duration histogram, in seconds.
   * @default {DEFAULT_BUCKETS}
   */
  buckets?: readonly number[];
}

/**
 * Registers the request counter and the request duration histogram. Call it
 * once per registry and hand the result to every {@linkcode withMetrics}.
 * @param registry the registry
 * @param options the duration buckets
 * @returns the two metrics
 * @throws {MetricsError} `ERR_METRICS_DUPLICATE` when called twice on one registry,
 *   `ERR_METRICS_INVALID_BUCKETS` for bad buckets
 */
export function createHttpMetrics(
  registry: MetricsRegistry,
  options: HttpMetricsOptions = {},
): HttpMetrics {
  const requests = registry.counter({
    name: "tributary_http_requests_total",
    help: "HTTP requests answered, by service, route, method and status",
    labelNames: ["service", "route", "method", "status"],
  });
  const duration = registry.histogram({
    name: "tributary_http_request_duration_seconds",
    help: "Seconds from receiving a request to having its response (before a streamed body)",
    labelNames: ["service", "route"],
    ...(options.buckets === undefined ? {} : { buckets: options.buckets }),
  });
  return { requests, duration };
}
