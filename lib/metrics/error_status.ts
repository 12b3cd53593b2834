import type { ErrorStatusTable } from "../http/mod.ts";
import type { MetricsErrorCode } from "./errors.ts";

/**
 * The HTTP statuses of the metrics' codes, complete by its type: every one is
 * a programming error (500), never an answer by design.
 */
export const METRICS_ERROR_STATUS = {
  ERR_METRICS_INVALID_NAME: 500,
  ERR_METRICS_DUPLICATE: 500,
  ERR_METRICS_INVALID_LABELS: 500,
  ERR_METRICS_INVALID_BUCKETS: 500,
  ERR_METRICS_COLLECTED: 500,
} as const satisfies ErrorStatusTable<MetricsErrorCode>;
