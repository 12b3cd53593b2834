import { Counter, type CounterOptions } from "./counter.ts";
import { MetricsError } from "./errors.ts";
import { Gauge, type GaugeOptions } from "./gauge.ts";
import { Histogram, type HistogramOptions } from "./histogram.ts";
import type { MetricSnapshot } from "./types.ts";

/** A metric a {@linkcode MetricsRegistry} holds. */
export type Metric = Counter | Gauge | Histogram;

/**
 * Holds the metrics of a process, in registration order, and refuses a second
 * metric whose exposed series names would clash with one already held.
 * @example
 * ```ts
 * const registry = new MetricsRegistry();
 * const requests = registry.counter({ name: "app_requests_total", help: "Requests answered" });
 * requests.inc();
 * const text = renderMetrics(registry);
 * ```
 */
export class MetricsRegistry {
  readonly #metrics: Metric[] = [];
  /** Every series name in use, including a histogram's `_bucket`, `_sum` and `_count`. */
  readonly #names = new Set<string>();

  /**
   * Creates and registers a counter.
   * @param options name (ending in `_total`), help, label names, optional collect callback
   * @returns the counter
   * @throws {MetricsError} `ERR_METRICS_DUPLICATE` when the name is taken, and the codes of
   *   {@linkcode Counter}
   */
  counter(options: CounterOptions): Counter {
    return this.#add(new Counter(options), []);
  }

  /**
   * Creates and registers a gauge.
   * @param options name, help, label names, optional collect callback
   * @returns the gauge
   * @throws {MetricsError} `ERR_METRICS_DUPLICATE` when the name is taken, and the codes of
   *   {@linkcode Gauge}
   */
  gauge(options: GaugeOptions): Gauge {
    return this.#add(new Gauge(options), []);
  }

  /**
   * Creates and registers a histogram.
   * @param options name, help, label names and buckets
   * @returns the histogram
   * @throws {MetricsError} `ERR_METRICS_DUPLICATE` when the name or one of its `_bucket`,
   *   `_sum`, `_count` series is taken, and the codes of {@linkcode Histogram}
   */
  histogram(options: HistogramOptions): Histogram {
    return this.#add(new Histogram(options), ["_bucket", "_sum", "_count"]);
  }

  /**
   * Copies every metric's current values, running `collect` callbacks.
   * @returns one snapshot per metric, in registration order
   * @throws {MetricsError} when a `collect` callback returns bad or repeated labels
   */
  snapshot(): MetricSnapshot[] {
    return this.#metrics.map((metric) => metric.snapshot());
  }

  #add<M extends Metric>(metric: M, suffixes: readonly string[]): M {
    const names = [metric.name, ...suffixes.map((suffix) => metric.name + suffix)];
    for (const name of names) {
      if (this.#names.has(name)) {
        throw new MetricsError(
          "ERR_METRICS_DUPLICATE",
          `Cannot register ${metric.name}: the series name ${name} is already registered`,
        );
      }
    }
    for (const name of names) this.#names.add(name);
    this.#metrics.push(metric);
    return metric;
  }
}
