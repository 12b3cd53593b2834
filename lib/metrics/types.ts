/** Label values by label name; every value is a string. */
export type Labels = Readonly<Record<string, string>>;

/** One value produced by a `collect` callback at scrape time. */
export interface Sample {
  /** The series' labels; omit for a metric without labels. */
  readonly labels?: Labels;
  readonly value: number;
}

/** Produces a metric's current samples when the registry is scraped. */
export type CollectFunction = () => readonly Sample[];

/** One series of a counter or gauge at scrape time. */
export interface SampleSnapshot {
  /** Values in the order of the metric's `labelNames`. */
  readonly labelValues: readonly string[];
  readonly value: number;
}

/** One series of a histogram at scrape time. */
export interface HistogramSeriesSnapshot {
  /** Values in the order of the metric's `labelNames`. */
  readonly labelValues: readonly string[];
  /** Cumulative counts, one per bucket bound (the `+Inf` bucket is `count`). */
  readonly bucketCounts: readonly number[];
  readonly sum: number;
  readonly count: number;
}

/** What a counter or gauge holds at scrape time. */
export interface ScalarSnapshot {
  readonly kind: "counter" | "gauge";
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly string[];
  readonly samples: readonly SampleSnapshot[];
}

/** What a histogram holds at scrape time. */
export interface HistogramSnapshot {
  readonly kind: "histogram";
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly string[];
  /** Upper bounds, ascending, without `+Inf`. */
  readonly buckets: readonly number[];
  readonly series: readonly HistogramSeriesSnapshot[];
}

/** A plain copy of one metric's state, as rendered by `renderMetrics`. */
export type MetricSnapshot = ScalarSnapshot | HistogramSnapshot;
