/**
 * A small Prometheus client: a registry of counters, gauges and histograms
 * with fixed label names, the text exposition format 0.0.4, process metrics
 * read at scrape time, request instrumentation for `lib/http` handlers, and
 * the `GET /metrics` handler.
 * @module
 */
export { MetricsError } from "./errors.ts";
export type { MetricsErrorCode } from "./errors.ts";
export { METRICS_ERROR_STATUS } from "./error_status.ts";
export type {
  CollectFunction,
  HistogramSeriesSnapshot,
  HistogramSnapshot,
  Labels,
  MetricSnapshot,
  Sample,
  SampleSnapshot,
  ScalarSnapshot,
} from "./types.ts";
export { Counter, CounterChild } from "./counter.ts";
export type { CounterOptions } from "./counter.ts";
export { Gauge, GaugeChild } from "./gauge.ts";
export type { GaugeOptions } from "./gauge.ts";
export { Histogram, HistogramChild } from "./histogram.ts";
export type { HistogramOptions } from "./histogram.ts";
export { MetricsRegistry } from "./metrics_registry.ts";
export { renderMetrics } from "./render_metrics.ts";
export { registerProcessMetrics } from "./register_process_metrics.ts";
export type { ProcessMetricsOptions, ProcessSource } from "./register_process_metrics.ts";
export { createHttpMetrics } from "./create_http_metrics.ts";
export type { HttpMetrics, HttpMetricsOptions } from "./create_http_metrics.ts";
export { withMetrics } from "./with_metrics.ts";
export type { WithMetricsOptions } from "./with_metrics.ts";
export { createMetricsHandler } from "./create_metrics_handler.ts";
export type { MetricsHandlerOptions } from "./create_metrics_handler.ts";
