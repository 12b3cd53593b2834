import { statusOfCode } from "./error_status.ts";
import type { HttpResponse } from "./types.ts";


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
 * @returns the status from `ERROR_STATUS`, or 500 for an error without a known code
 */
export function statusOf(error: unknown): number {
  const code = codeOf(error);
  return code === undefined ? 500 : (statusOfCode(code) ?? 500);
}

/**
 * Builds the error detail of an error: its code, message, and where present
 * its `target` and `position`. Unknown errors reveal nothing of themselves.
 * @param error anything thrown
 * @returns the detail for the response body
 */
export function errorDetail(error: unknown): ErrorDetail {
  const code = codeOf(error);
  // A code answered 500 is a start-up or programming error: its message stays inside.
  if (code === undefined || (statusOfCode(code) ?? 500) === 500 || !(error instanceof Error)) {
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
