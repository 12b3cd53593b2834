// The one table from error codes to HTTP statuses. It names the code unions of
// every domain with type-only imports of their errors.ts (leaf files that
// import nothing), so the runtime graph keeps lib/http below the domains while
// the compiler refuses a code without a status.
import type { AuthErrorCode } from "../auth/errors.ts";
import type { ConfigError } from "../config/errors.ts";
import type { CryptoErrorCode } from "../crypto/errors.ts";
import type { MetricsErrorCode } from "../metrics/errors.ts";
import type { FilterSyntaxError, ODataErrorCode } from "../odata/errors.ts";
import type { RelayErrorCode } from "../relay/errors.ts";
import type { StorageErrorCode } from "../storage/errors.ts";
import type { SyncErrorCode } from "../sync/errors.ts";
import type { CsvSyntaxError, WaterErrorCode } from "../water/errors.ts";
import type { HttpErrorCode } from "./errors.ts";

/** Every stable error code of the package, of every domain. */
export type ErrorCode =
  | HttpErrorCode
  | ODataErrorCode
  | FilterSyntaxError["code"]
  | WaterErrorCode
  | CsvSyntaxError["code"]
  | AuthErrorCode
  | SyncErrorCode
  | RelayErrorCode
  | CryptoErrorCode
  | MetricsErrorCode
  | StorageErrorCode
  | ConfigError["code"];

/**
 * A status for every code. 500 marks a code that never answers a request by
 * design (start-up and programming errors): if one does, it is answered as an
 * internal error, without its message.
 */
export type ErrorStatusTable = { readonly [C in ErrorCode]: number };

/**
 * The HTTP status of each error code. Core code raises errors with stable
 * codes and never knows statuses; this table is checked for completeness by
 * the compiler, so a new code without a status does not compile.
 */
export const ERROR_STATUS = {
  ERR_HTTP_BAD_REQUEST: 400,
  ERR_HTTP_MALFORMED_URL: 400,
  ERR_HTTP_INVALID_JSON: 400,
  ERR_HTTP_JSON_TOO_DEEP: 400,
  ERR_HTTP_UNAUTHORIZED: 401,
  ERR_HTTP_FORBIDDEN: 403,
  ERR_HTTP_ORIGIN_NOT_ALLOWED: 403,
  ERR_HTTP_NOT_FOUND: 404,
  ERR_HTTP_METHOD_NOT_ALLOWED: 405,
  ERR_HTTP_TIMEOUT: 408,
  ERR_HTTP_REQUEST_TIMEOUT: 408,
  ERR_HTTP_HEADERS_TOO_LARGE: 431,
  ERR_HTTP_BODY_TOO_LARGE: 413,
  ERR_HTTP_ABORTED: 400,
  ERR_HTTP_UNSUPPORTED_MEDIA_TYPE: 415,
  ERR_HTTP_RATE_LIMITED: 429,
  ERR_HTTP_UNAVAILABLE: 503,
  ERR_ODATA_SYNTAX: 400,
  ERR_ODATA_UNKNOWN_FIELD: 400,
  ERR_ODATA_TYPE: 400,
  ERR_ODATA_QUERY_OPTION: 400,
  ERR_ODATA_UNSUPPORTED: 400,
  ERR_WATER_NOT_FOUND: 404,
  ERR_WATER_INVALID_ORDER: 400,
  ERR_WATER_RESPONSE_TOO_LARGE: 413,
  ERR_WATER_TOKEN_GONE: 410,
  ERR_WATER_DATASET: 500,
  ERR_WATER_SNAPSHOT: 500,
  ERR_WATER_CSV_SYNTAX: 500,
  ERR_AUTH_INVALID_REQUEST: 400,
  ERR_AUTH_INVALID_CLIENT: 401,
  ERR_AUTH_INVALID_CLIENT_CREDENTIALS: 400,
  ERR_AUTH_INVALID_GRANT: 400,
  ERR_AUTH_UNAUTHORIZED_CLIENT: 400,
  ERR_AUTH_UNSUPPORTED_GRANT_TYPE: 400,
  ERR_AUTH_INVALID_SCOPE: 400,
  ERR_AUTH_UNSUPPORTED_TOKEN_TYPE: 400,
  ERR_AUTH_THROTTLED: 429,
  ERR_AUTH_MISSING_TOKEN: 401,
  ERR_AUTH_INVALID_TOKEN: 401,
  ERR_AUTH_INSUFFICIENT_SCOPE: 403,
  ERR_AUTH_USERNAME_TAKEN: 409,
  ERR_AUTH_INVALID_SIGN_UP: 422,
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
  ERR_CRYPTO_INVALID_KEY: 500,
  ERR_CRYPTO_DECRYPT_FAILED: 500,
  ERR_CRYPTO_SIGNATURE_INVALID: 500,
  ERR_METRICS_INVALID_NAME: 500,
  ERR_METRICS_DUPLICATE: 500,
  ERR_METRICS_INVALID_LABELS: 500,
  ERR_METRICS_INVALID_BUCKETS: 500,
  ERR_METRICS_COLLECTED: 500,
  ERR_STORAGE_UNAVAILABLE: 503,
  ERR_STORAGE_CORRUPT: 500,
  ERR_CONFIG_INVALID: 500,
} as const satisfies ErrorStatusTable;

// A Map, so that a code such as "constructor" finds nothing of Object's.
const STATUS_BY_CODE: ReadonlyMap<string, number> = new Map(Object.entries(ERROR_STATUS));

/**
 * The status of an error code.
 * @param code any text
 * @returns its status, or undefined when no domain has that code
 */
export function statusOfCode(code: string): number | undefined {
  return STATUS_BY_CODE.get(code);
}
