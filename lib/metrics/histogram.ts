import { checkNames, SeriesMap } from "./_series.ts";
import { MetricsError } from "./errors.ts";
import type { HistogramSnapshot, Labels } from "./types.ts";

/** Bucket bounds in seconds used when none are given (those of the Prometheus clients). */
export const DEFAULT_BUCKETS: readonly number[] = Object.freeze([
  0.005,
  0.01,
  0.025,
  0.05,
  0.1,
  0.25,
  0.5,
  1,
  2.5,
  5,
  10,
]);

/** Options of {@linkcode Histogram}. */
export interface HistogramOptions {
  /** Metric name, e.g. `tributary_http_request_duration_seconds`. */
  name: string;
  /** One line saying what is observed. */
  help: string;
  /**
   * The label names every observation must give, in exposition order; `le` is reserved.
   * @default {[]}
   */
  labelNames?: readonly string[];
  /**
   * Upper bucket bounds, finite and strictly ascending; `+Inf` is implied.
   * @default {DEFAULT_BUCKETS}
   */
  buckets?: readonly number[];
}

/** One series of a {@linkcode Histogram}: bucket counts, a sum and a count. */
export class HistogramChild {
  /** Label values in the order of the histogram's label names. */
  readonly labelValues: readonly string[];
  readonly #bounds: readonly number[];
  /** Observations per bucket, not cumulative; the last slot is the `+Inf` bucket. */
  readonly #counts: Float64Array;
  #sum = 0;
  #count = 0;

  /**
   * Creates an empty series; {@linkcode Histogram.labels} does this.
   * @param labelValues the series' label values
   * @param bounds the histogram's checked bucket bounds
   */
  constructor(labelValues: readonly string[], bounds: readonly number[]) {
    this.labelValues = labelValues;
    this.#bounds = bounds;
    this.#counts = new Float64Array(bounds.length + 1);
  }

  /**
   * Records one observation.
   * @param value the observed value, e.g. a duration in seconds
   * @throws {RangeError} when `value` is not finite
   */
  observe(value: number): void {
    if (!Number.isFinite(value)) {
      throw new RangeError(`Cannot observe a value: it must be finite: found ${value}`);
    }
    const bounds = this.#bounds;
    let i = 0;
    // A linear scan beats a binary search for the dozen bounds histograms have.
    while (i < bounds.length && value > bounds[i]!) i++;
    this.#counts[i]! += 1;
    this.#sum += value;
    this.#count += 1;
  }

  /** @returns cumulative counts per bound, the sum and the count */
  read(): { bucketCounts: number[]; sum: number; count: number } {
    const bucketCounts: number[] = [];
    let running = 0;
    for (let i = 0; i < this.#bounds.length; i++) {
      running += this.#counts[i]!;
      bucketCounts.push(running);
    }
    return { bucketCounts, sum: this.#sum, count: this.#count };
  }
}

/**
 * A histogram with fixed label names and bucket bounds. Create it with
 * `registry.histogram(...)`; on a hot path keep the child from
 * {@linkcode Histogram.labels} and call its `observe()`.
 * @example
 * ```ts
 * const duration = registry.histogram({
 *   name: "app_request_duration_seconds",
 *   help: "Time to answer a request",
 *   labelNames: ["route"],
 * });
 * duration.observe({ route: "/items" }, 0.042);
 * ```
 */
export class Histogram {
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly string[];
  /** Upper bucket bounds, ascending, without `+Inf`. */
  readonly buckets: readonly number[];
  readonly #series: SeriesMap<HistogramChild>;

  /**
   * Creates a histogram, not yet registered.
   * @param options name, help, label names and buckets
   * @throws {MetricsError} `ERR_METRICS_INVALID_NAME` for a bad metric or label name (or `le`),
   *   `ERR_METRICS_DUPLICATE` for a label name given twice, `ERR_METRICS_INVALID_BUCKETS` for
   *   bounds that are empty, not finite or not strictly ascending
   */
  constructor(options: HistogramOptions) {
    this.labelNames = checkNames(options.name, options.labelNames ?? [], ["le"]);
    this.name = options.name;
    this.help = options.help;
    this.buckets = checkBuckets(options.name, options.buckets ?? DEFAULT_BUCKETS);
    const bounds = this.buckets;
    this.#series = new SeriesMap(
      this.name,
      this.labelNames,
      (values) => new HistogramChild(values, bounds),
    );
  }

  /**
   * Gives the series of a label set, creating it empty on first use.
   * @param labels a string value for every declared label name
   * @returns the series, the same object for the same label values
   * @throws {MetricsError} `ERR_METRICS_INVALID_LABELS` when the label set does not match
   */
  labels(labels: Labels): HistogramChild {
    return this.#series.get(labels);
  }

  /**
   * Records one observation in the series of a label set.
   * @param labels a string value for every declared label name; `{}` when there are none
   * @param value the observed value, e.g. a duration in seconds
   * @throws {MetricsError} as {@linkcode Histogram.labels}
   * @throws {RangeError} when `value` is not finite
   */
  observe(labels: Labels, value: number): void {
    this.#series.get(labels).observe(value);
  }

  /** @returns the plain snapshot, with cumulative bucket counts */
  snapshot(): HistogramSnapshot {
    const series = Array.from(this.#series.values(), (child) => ({
      labelValues: child.labelValues,
      ...child.read(),
    }));
    return {
      kind: "histogram",
      name: this.name,
      help: this.help,
      labelNames: this.labelNames,
      buckets: this.buckets,
      series,
    };
  }
}

function checkBuckets(name: string, buckets: readonly number[]): readonly number[] {
  const fail = (why: string): MetricsError =>
    new MetricsError("ERR_METRICS_INVALID_BUCKETS", `Cannot create histogram ${name}: ${why}`);
  if (!Array.isArray(buckets) || buckets.length === 0) {
    throw fail("buckets must be a non-empty array");
  }
  for (let i = 0; i < buckets.length; i++) {
    const bound: unknown = buckets[i];
    if (typeof bound !== "number" || !Number.isFinite(bound)) {
      throw fail(`bucket bounds must be finite numbers: found ${String(bound)} at index ${i}`);
    }
    if (i > 0 && bound <= buckets[i - 1]!) {
      const previous = buckets[i - 1];
      throw fail(`bucket bounds must be strictly ascending: found ${bound} after ${previous}`);
    }
  }
  return Object.freeze([...buckets]);
}
