import { checkNames, collectedError, collectSamples, readChild, SeriesMap } from "./_series.ts";
import type { CollectFunction, Labels, ScalarSnapshot } from "./types.ts";

/** Options of {@linkcode Gauge}. */
export interface GaugeOptions {
  /** Metric name, e.g. `tributary_relay_queue_depth`. */
  name: string;
  /** One line saying what is measured. */
  help: string;
  /**
   * The label names every update must give, in exposition order.
   * @default {[]}
   */
  labelNames?: readonly string[];
  /**
   * Reads the values at scrape time instead of `set` (e.g. queue depth by
   * state); the gauge then refuses direct updates.
   */
  collect?: CollectFunction;
}

/** One series of a {@linkcode Gauge}: a value that goes up and down. */
export class GaugeChild {
  /** Label values in the order of the gauge's label names. */
  readonly labelValues: readonly string[];
  #value = 0;

  /**
   * Creates a series at 0; {@linkcode Gauge.labels} does this.
   * @param labelValues the series' label values
   */
  constructor(labelValues: readonly string[]) {
    this.labelValues = labelValues;
  }

  /** The current value. */
  get value(): number {
    return this.#value;
  }

  /**
   * Sets the value.
   * @param value the new value
   */
  set(value: number): void {
    this.#value = value;
  }

  /**
   * Adds to the value.
   * @param value how much to add; may be negative
   */
  inc(value = 1): void {
    this.#value += value;
  }

  /**
   * Subtracts from the value.
   * @param value how much to subtract
   */
  dec(value = 1): void {
    this.#value -= value;
  }
}

/**
 * A gauge with fixed label names, set directly or read from a `collect`
 * callback at scrape time. Create it with `registry.gauge(...)`.
 * @example
 * ```ts
 * registry.gauge({
 *   name: "app_queue_depth",
 *   help: "Jobs by state",
 *   labelNames: ["state"],
 *   collect: () => [{ labels: { state: "ready" }, value: queue.size }],
 * });
 * ```
 */
export class Gauge {
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly string[];
  readonly #series: SeriesMap<GaugeChild>;
  readonly #collect: CollectFunction | undefined;

  /**
   * Creates a gauge, not yet registered.
   * @param options name, help, label names and an optional collect callback
   * @throws {MetricsError} `ERR_METRICS_INVALID_NAME` for a bad metric or label name,
   *   `ERR_METRICS_DUPLICATE` for a label name given twice
   */
  constructor(options: GaugeOptions) {
    this.labelNames = checkNames(options.name, options.labelNames ?? [], []);
    this.name = options.name;
    this.help = options.help;
    this.#collect = options.collect;
    this.#series = new SeriesMap(this.name, this.labelNames, (values) => new GaugeChild(values));
  }

  /**
   * Gives the series of a label set, creating it at 0 on first use.
   * @param labels a string value for every declared label name
   * @returns the series, the same object for the same label values
   * @throws {MetricsError} `ERR_METRICS_INVALID_LABELS` when the label set does not match,
   *   `ERR_METRICS_COLLECTED` when the values come from `collect`
   */
  labels(labels: Labels): GaugeChild {
    if (this.#collect !== undefined) throw collectedError(this.name);
    return this.#series.get(labels);
  }

  /**
   * Sets the series of a label set.
   * @param labels a string value for every declared label name; `{}` when there are none
   * @param value the new value
   * @throws {MetricsError} as {@linkcode Gauge.labels}
   */
  set(labels: Labels, value: number): void {
    this.labels(labels).set(value);
  }

  /**
   * Adds to the series of a label set.
   * @param labels a string value for every declared label name; omit when there are none
   * @param value how much to add
   * @throws {MetricsError} as {@linkcode Gauge.labels}
   */
  inc(labels?: Labels, value = 1): void {
    if (this.#collect !== undefined) throw collectedError(this.name);
    this.#series.get(labels).inc(value);
  }

  /**
   * Subtracts from the series of a label set.
   * @param labels a string value for every declared label name; omit when there are none
   * @param value how much to subtract
   * @throws {MetricsError} as {@linkcode Gauge.labels}
   */
  dec(labels?: Labels, value = 1): void {
    if (this.#collect !== undefined) throw collectedError(this.name);
    this.#series.get(labels).dec(value);
  }

  /**
   * Copies the current values, calling `collect` when there is one.
   * @returns the plain snapshot
   * @throws {MetricsError} when `collect` returns bad or repeated labels
   */
  snapshot(): ScalarSnapshot {
    const samples = this.#collect === undefined
      ? Array.from(this.#series.values(), readChild)
      : collectSamples(this.name, this.labelNames, this.#collect);
    const { name, help, labelNames } = this;
    return { kind: "gauge", name, help, labelNames, samples };
  }
}
