// The one file of lib/metrics that reads the state of the running process;
// tests pass their own source instead.
import type { MetricsRegistry } from "./metrics_registry.ts";
import type { Sample } from "./types.ts";

/** Where the process metrics come from; {@linkcode nodeProcessSource} reads the real process. */
export interface ProcessSource {
  /** CPU time used so far, in microseconds, as `process.cpuUsage()` reports it. */
  cpuUsage(): { readonly user: number; readonly system: number };
  /** Memory in bytes, as `process.memoryUsage()` reports it. */
  memoryUsage(): { readonly rss: number; readonly heapUsed: number; readonly heapTotal: number };
  /** When the process started, in seconds since the Unix epoch. */
  startTimeSeconds(): number;
}

/** Options of {@linkcode registerProcessMetrics}. */
export interface ProcessMetricsOptions {
  /**
   * The process state to report.
   * @default {nodeProcessSource()}
   */
  source?: ProcessSource;
}

/**
 * Reads the state of the Node.js process this code runs in.
 * @returns a source backed by `node:process` and `performance.timeOrigin`
 */
export function nodeProcessSource(): ProcessSource {
  // performance.timeOrigin is the process start on Node, in epoch milliseconds.
  const started = performance.timeOrigin / 1000;
  return {
    cpuUsage: () => process.cpuUsage(),
    memoryUsage: () => process.memoryUsage(),
    startTimeSeconds: () => started,
  };
}

/**
 * Registers the standard process metrics, read at each scrape:
 * `process_cpu_user_seconds_total`, `process_cpu_system_seconds_total`,
 * `process_cpu_seconds_total`, `process_resident_memory_bytes`,
 * `process_start_time_seconds`, `nodejs_heap_size_used_bytes` and
 * `nodejs_heap_size_total_bytes`.
 * @param registry the registry to add them to
 * @param options the source of the process state
 * @throws {MetricsError} `ERR_METRICS_DUPLICATE` when they are registered twice
 * @example
 * ```ts
 * const registry = new MetricsRegistry();
 * registerProcessMetrics(registry);
 * ```
 */
export function registerProcessMetrics(
  registry: MetricsRegistry,
  options: ProcessMetricsOptions = {},
): void {
  const source = options.source ?? nodeProcessSource();
  const cpu =
    (pick: (usage: { readonly user: number; readonly system: number }) => number) =>
    (): readonly Sample[] => [{ value: pick(source.cpuUsage()) / 1e6 }];
  registry.counter({
    name: "process_cpu_user_seconds_total",
    help: "CPU seconds spent in user mode",
    collect: cpu((usage) => usage.user),
  });
  registry.counter({
    name: "process_cpu_system_seconds_total",
    help: "CPU seconds spent in the kernel on behalf of the process",
    collect: cpu((usage) => usage.system),
  });
  registry.counter({
    name: "process_cpu_seconds_total",
    help: "CPU seconds spent in user mode and in the kernel",
    collect: cpu((usage) => usage.user + usage.system),
  });
  registry.gauge({
    name: "process_resident_memory_bytes",
    help: "Bytes of memory the process holds in RAM (resident set size)",
    collect: () => [{ value: source.memoryUsage().rss }],
  });
  registry.gauge({
    name: "process_start_time_seconds",
    help: "When the process started, in seconds since the Unix epoch",
    collect: () => [{ value: source.startTimeSeconds() }],
  });
  registry.gauge({
    name: "nodejs_heap_size_used_bytes",
    help: "Bytes of the V8 heap in use",
    collect: () => [{ value: source.memoryUsage().heapUsed }],
  });
  registry.gauge({
    name: "nodejs_heap_size_total_bytes",
    help: "Bytes of the V8 heap allocated",
    collect: () => [{ value: source.memoryUsage().heapTotal }],
  });
}
