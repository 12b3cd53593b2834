import { mergeHeaders } from "./merge_headers.ts";
import type { HttpResponse } from "./types.ts";

/** The content type of every JSON response. */
export const JSON_CONTENT_TYPE = "application/json; charset=utf-8";

const JSON_HEADERS: Readonly<Record<string, string>> = { "content-type": JSON_CONTENT_TYPE };

/**
 * Builds a JSON response.
 * @param status HTTP status
 * @param value anything `JSON.stringify` accepts
 * @param headers extra headers
 * @returns the response record
 * @example
 * ```ts
 * jsonResponse(201, { id: "e1" }, { location: "/items/e1" });
 * // { status: 201, headers: { "content-type": "application/json; charset=utf-8", location: "/items/e1" }, body: '{"id":"e1"}' }
 * ```
 */
export function jsonResponse(
  status: number,
  value: unknown,
  headers: Readonly<Record<string, string>> = {},
): HttpResponse {
  return {
    status,
    headers: mergeHeaders(headers, JSON_HEADERS),
    body: JSON.stringify(value),
  };
}
