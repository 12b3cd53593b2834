// The statuses of the errors lib/http and the layers below it raise (HTTP,
// storage, crypto, configuration). A service module contributes the table of
// its own domain's codes (its `ErrorStatusTable`, complete by its type) and
// puts its handler behind `withErrorStatuses`, so that the table of statuses
// never names a domain above this one.
import type { ConfigError } from "../config/mod.ts";
import type { CryptoErrorCode } from "../crypto/mod.ts";
import type { StorageErrorCode } from "../storage/mod.ts";
import type { HttpErrorCode } from "./errors.ts";

/**
 * A status for every code of a union `C`, as a module contributes it: the
 * compiler refuses a code without a status. 500 marks a code that never
 * answers a request by design (start-up and programming errors): if one
 * does, it is answered as an internal error, without its message.
 */
export type ErrorStatusTable<C extends string> = { readonly [K in C]: number };

/** Every code lib/http knows by itself: its own, and those of the layers below it. */
export type ErrorCode = HttpErrorCode | StorageErrorCode | CryptoErrorCode | ConfigError["code"];

/**
 * The HTTP status of each code of lib/http and the layers below it. Core code
 * raises errors with stable codes and never knows statuses.
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
  ERR_CRYPTO_INVALID_KEY: 500,
  ERR_CRYPTO_DECRYPT_FAILED: 500,
  ERR_CRYPTO_SIGNATURE_INVALID: 500,
  ERR_STORAGE_UNAVAILABLE: 503,
  ERR_STORAGE_CORRUPT: 500,
  ERR_CONFIG_INVALID: 500,
} as const satisfies ErrorStatusTable<ErrorCode>;

/** Statuses by code, from tables: a look-up that finds nothing of Object's (`constructor`). */
export type ErrorStatuses = ReadonlyMap<string, number>;

const BASE: ErrorStatuses = new Map(Object.entries(ERROR_STATUS));

/**
 * Joins modules' tables to lib/http's own, for the layers that turn errors
 * into answers (`withErrorStatuses`, `errorResponse`) and documents
 * (`errorResponses`).
 * @param tables the modules' tables
 * @returns every code's status
 * @throws {TypeError} when two tables give one code different statuses
 */
export function errorStatuses(
  ...tables: readonly Readonly<Record<string, number>>[]
): ErrorStatuses {
  const joined = new Map(BASE);
  for (const table of tables) {
    for (const [code, status] of Object.entries(table)) {
      const known = joined.get(code);
      if (known !== undefined && known !== status) {
        throw new TypeError(
          `Cannot join error statuses: ${code} is ${known} in one table and ${status} in another`,
        );
      }
      joined.set(code, status);
    }
  }
  return joined;
}

/**
 * The status of an error code.
 * @param code any text
 * @param statuses the statuses known (modules' tables joined); lib/http's own by default
 * @returns its status, or undefined when no table has that code
 */
export function statusOfCode(code: string, statuses: ErrorStatuses = BASE): number | undefined {
  return statuses.get(code) ?? BASE.get(code);
}
