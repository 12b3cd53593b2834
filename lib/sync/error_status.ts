import type { ErrorStatusTable } from "../http/mod.ts";
import type { SyncErrorCode } from "./errors.ts";

/**
 * The codes of a refused bearer token the sync API answers with (its
 * `authorize` is the token service's guard): their statuses are RFC 6750
 * §3.1's, and an app joining this table with the token service's checks
 * that the two agree.
 */
export type BearerErrorCode =
  | "ERR_AUTH_MISSING_TOKEN"
  | "ERR_AUTH_INVALID_REQUEST"
  | "ERR_AUTH_INVALID_TOKEN"
  | "ERR_AUTH_INSUFFICIENT_SCOPE";

/**
 * The HTTP statuses of the sync API's codes, and of the bearer-token
 * refusals it answers with, complete by its type: the service answers its
 * errors with them (`withErrorStatuses`) and documents them.
 */
export const SYNC_ERROR_STATUS = {
  ERR_AUTH_MISSING_TOKEN: 401,
  ERR_AUTH_INVALID_REQUEST: 400,
  ERR_AUTH_INVALID_TOKEN: 401,
  ERR_AUTH_INSUFFICIENT_SCOPE: 403,
  ERR_SYNC_INVALID_PATCH: 422,
  ERR_SYNC_INVALID_ID: 400,
  ERR_SYNC_NO_CONTEXT: 404,
  ERR_SYNC_BUSY: 429,
  ERR_SYNC_UNKNOWN_REVISION: 404,
  ERR_SYNC_REVISION_EXPIRED: 410,
  ERR_SYNC_UNKNOWN_TICKET: 404,
  ERR_SYNC_TICKET_EXPIRED: 410,
  ERR_SYNC_INVALID_IDEMPOTENCY_KEY: 400,
  ERR_SYNC_IDEMPOTENCY_MISMATCH: 422,
  ERR_SYNC_INVALID_WAIT: 400,
  ERR_SYNC_TOO_MANY_STREAMS: 429,
  ERR_SYNC_STREAMS_UNAVAILABLE: 503,
} as const satisfies ErrorStatusTable<SyncErrorCode | BearerErrorCode>;
