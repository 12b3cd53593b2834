import type { ErrorStatusTable } from "../http/mod.ts";
import type { RelayErrorCode } from "./errors.ts";

/**
 * The HTTP statuses of the relay's codes, complete by its type: the relay
 * answers its errors with them (`withErrorStatuses`) and documents them.
 */
export const RELAY_ERROR_STATUS = {
  ERR_RELAY_INVALID_WEBHOOK: 400,
  ERR_RELAY_INVALID_ENDPOINT: 400,
  ERR_RELAY_UNKNOWN_ENDPOINT: 404,
  ERR_RELAY_UNKNOWN_MESSAGE: 404,
  ERR_RELAY_ENDPOINT_EXISTS: 409,
  ERR_RELAY_IDEMPOTENCY_CONFLICT: 409,
  ERR_RELAY_QUEUE_FULL: 503,
  ERR_RELAY_QUEUE_UNAVAILABLE: 503,
  ERR_RELAY_INVALID_TENANTS: 500,
  ERR_RELAY_INVALID_SCHEDULE: 500,
  ERR_RELAY_INVALID_CIDR: 500,
  ERR_RELAY_BLOCKED_ADDRESS: 500,
} as const satisfies ErrorStatusTable<RelayErrorCode>;
