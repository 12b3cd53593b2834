import { checkNames, collectedError, collectSamples, readChild, SeriesMap } from "./_series.ts";
import { MetricsError } from "./errors.ts";
import type { CollectFunction, Labels, ScalarSnapshot } from "./types.ts";

/** Options of {@linkcode Counter}. */
export interface CounterOptions {
  /** Metric name; must end in `_total`, e.g. `tributary_http_requests_total`. */
  name: string;
  /** One line saying what is counted. */
  help: string;
  /**
   * The label names every update must give, in exposition order.
   * @default {[]}
   */
  labelNames?: readonly string[];
  /**
   * Reads the values at scrape time instead of `inc` (e.g. CPU seconds kept by
   * the runtime); the metric then refuses direct updates.
   */
  collect?: CollectFunction;
}

/** One series of a {@linkcode Counter}: a total that only goes up. */
export class CounterChild {
  /** Label values in the order of the counter's label names. */
  readonly labelValues: readonly string[];
  #value = 0;

  /**
   * Creates a series at 0; {@linkcode Counter.labels} does this.
   * @param labelValues the series' label values
   */
  constructor(labelValues: readonly string[]) {
    this.labelValues = labelValues;
  }

  /** The current total. */
  get value(): number {
    return this.#value;
  }

  /**
   * Adds to the total.
   * @param value how much to add
   * @throws {RangeError} when `value` is negative or not finite
   */
  inc(value = 1): void {
    if (!(value >= 0 && value !== Infinity)) {
      throw new RangeError(
        `Cannot increment a counter: the value must be finite and >= 0: found ${value}`,
      );
    }
    this.#value += value;
  }
}

/**
 * A counter with fixed label names. Create it with `registry.counter(...)`;
 * on a hot path keep the child from {@linkcode Counter.labels} and call its
 * `inc()`, which skips the label lookup.
 * @example
 * ```ts
 * const requests = registry.counter({
 *   name: "app_requests_total",
 *   help: "Requests answered",
 *   labelNames: ["status"],
 * });
 * requests.inc({ status: "200" });
 * ```
 */
export class Counter {
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly string[];
  readonly #series: SeriesMap<CounterChild>;
  readonly #collect: CollectFunction | undefined;

  /**
   * Creates a counter, not yet registered.
   * @param options name, help, label names and an optional collect callback
   * @throws {MetricsError} `ERR_METRICS_INVALID_NAME` for a bad name, a name without `_total`
   *   or a bad label name; `ERR_METRICS_DUPLICATE` for a label name given twice
   */
  constructor(options: CounterOptions) {
    this.labelNames = checkNames(options.name, options.labelNames ?? [], []);
    if (!options.name.endsWith("_total")) {
      throw new MetricsError(
        "ERR_METRICS_INVALID_NAME",
        `Cannot create counter ${options.name}: a counter's name must end in "_total"`,
      );
    }
    this.name = options.name;
    this.help = options.help;
    this.#collect = options.collect;
    this.#series = new SeriesMap(this.name, this.labelNames, (values) => new CounterChild(values));
  }

  /**
   * Gives the series of a label set, creating it at 0 on first use.
   * @param labels a string value for every declared label name
   * @returns the series, the same object for the same label values
   * @throws {MetricsError} `ERR_METRICS_INVALID_LABELS` when the label set does not match,
   *   `ERR_METRICS_COLLECTED` when the values come from `collect`
   */
  labels(labels: Labels): CounterChild {
    if (this.#collect !== undefined) throw collectedError(this.name);
    return this.#series.get(labels);
  }

  /**
   * Adds to the series of a label set.
   * @param labels a string value for every declared label name; omit when there are none
   * @param value how much to add
   * @throws {MetricsError} as {@linkcode Counter.labels}
   * @throws {RangeError} when `value` is negative or not finite
   */
  inc(labels?: Labels, value = 1): void {
    if (this.#collect !== undefined) throw collectedError(this.name);
    this.#series.get(labels).inc(value);
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
    return { kind: "counter", name, help, labelNames, samples };
  }
}
