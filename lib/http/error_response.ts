import type { HttpResponse } from "./types.ts";

/**
 * The one table from error codes, of every domain, to HTTP statuses. Core code
 * raises errors with stable codes and never knows statuses.
 */
export const ERROR_STATUS: Readonly<Record<string, number>> = {
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
  ERR_RELAY_INVALID_WEBHOOK: 400,
  ERR_RELAY_INVALID_ENDPOINT: 400,
  ERR_RELAY_UNKNOWN_ENDPOINT: 404,
  ERR_RELAY_UNKNOWN_MESSAGE: 404,
  ERR_RELAY_ENDPOINT_EXISTS: 409,
  ERR_RELAY_IDEMPOTENCY_CONFLICT: 409,
  ERR_RELAY_QUEUE_FULL: 503,
  ERR_RELAY_QUEUE_UNAVAILABLE: 503,
  ERR_WATER_NOT_FOUND: 404,
  ERR_WATER_RESPONSE_TOO_LARGE: 413,
};

/** What {@linkcode errorBody} puts in the body for one error. */
export interface ErrorDetail {
  readonly code: string;
  readonly message: string;
  readonly target?: string;
  readonly innererror?: Readonly<Record<string, unknown>>;
}

/**
 * Gives the HTTP status for an error from its `code`.
 * @param error anything thrown
 * @returns the status from {@linkcode ERROR_STATUS}, or 500 for an error without a known code
 */
export function statusOf(error: unknown): number {
  const code = codeOf(error);
  return code === undefined ? 500 : (ERROR_STATUS[code] ?? 500);
}

/**
 * Builds the error detail of an error: its code, message, and where present
 * its `target` and `position`. Unknown errors reveal nothing of themselves.
 * @param error anything thrown
 * @returns the detail for the response body
 */
export function errorDetail(error: unknown): ErrorDetail {
  const code = codeOf(error);
  if (code === undefined || ERROR_STATUS[code] === undefined || !(error instanceof Error)) {
    return { code: "ERR_INTERNAL", message: "Cannot answer the request: an internal error occurred" };
  }
  const target = stringProperty(error, "target");
  const position = numberProperty(error, "position");
  return {
    code,
    message: error.message,
    ...(target === undefined ? {} : { target }),
    ...(position === undefined ? {} : { innererror: { position } }),
  };
}

/**
 * Renders an error as the JSON body `{"error": {...}, "errors": [{...}]}`:
 * OData's `error` object plus the `errors` array the DataStream clients read.
 * @param error anything thrown
 * @returns the serialized body
 */
export function errorBody(error: unknown): string {
  const detail = errorDetail(error);
  return JSON.stringify({ error: detail, errors: [detail] });
}

/**
 * Turns an error into a complete JSON response, with the headers the error
 * carries (`Retry-After`, `Allow`, `WWW-Authenticate`).
 * @param error anything thrown
 * @returns the response record
 */
export function errorResponse(error: unknown): HttpResponse {
  const status = statusOf(error);
  const extra = status === 500 ? {} : headersOf(error);
  return {
    status,
    headers: { ...extra, "content-type": "application/json; charset=utf-8" },
    body: errorBody(error),
  };
}

function codeOf(error: unknown): string | undefined {
  return stringProperty(error, "code");
}

function stringProperty(value: unknown, key: string): string | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const found: unknown = (value as Record<string, unknown>)[key];
  return typeof found === "string" ? found : undefined;
}

function numberProperty(value: unknown, key: string): number | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const found: unknown = (value as Record<string, unknown>)[key];
  return typeof found === "number" ? found : undefined;
}

function headersOf(error: unknown): Readonly<Record<string, string>> {
  if (typeof error !== "object" || error === null) return {};
  const found: unknown = (error as Record<string, unknown>)["headers"];
  if (typeof found !== "object" || found === null) return {};
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(found)) {
    if (typeof value === "string") headers[name.toLowerCase()] = value;
  }
  return headers;
}
