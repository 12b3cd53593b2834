import type { ErrorStatusTable } from "../http/mod.ts";
import type { AuthErrorCode } from "./errors.ts";

/**
 * The HTTP statuses of the token service's codes, complete by its type: the
 * service answers its errors with them (`withErrorStatuses`), documents them,
 * and an app joins them for the services that check its bearer tokens.
 */
export const AUTH_ERROR_STATUS = {
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
} as const satisfies ErrorStatusTable<AuthErrorCode>;
