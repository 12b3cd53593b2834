/** Codes of {@linkcode MetricsError}. */
export type MetricsErrorCode =
  | "ERR_METRICS_INVALID_NAME"
  | "ERR_METRICS_DUPLICATE"
  | "ERR_METRICS_INVALID_LABELS"
  | "ERR_METRICS_INVALID_BUCKETS"
  | "ERR_METRICS_COLLECTED";

/**
 * An error of the metrics domain: a metric or label name outside the
 * Prometheus grammar, a name registered twice, a label set that does not match
 * the declared label names, unusable histogram buckets, or a direct update of
 * a metric whose values come from a `collect` callback.
 */
export class MetricsError extends Error {
  readonly code: MetricsErrorCode;

  /**
   * Creates a metrics error.
   * @param code stable error code
   * @param message human-readable message
   * @param options standard error options (`cause`)
   */
  constructor(code: MetricsErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "MetricsError";
    this.code = code;
  }
}
