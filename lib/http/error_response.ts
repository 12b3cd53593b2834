import { type ErrorStatuses, statusOfCode } from "./error_status.ts";
import { mergeHeaders } from "./merge_headers.ts";
import type { Handler, HttpRequest, HttpResponse } from "./types.ts";

const ERROR_HEADERS: Readonly<Record<string, string>> = {
  "content-type": "application/json; charset=utf-8",
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
 * @param statuses the statuses known (`errorStatuses` of the modules' tables); lib/http's own by default
 * @returns the status of its code, or 500 for an error without a known code
 */
export function statusOf(error: unknown, statuses?: ErrorStatuses): number {
  const code = codeOf(error);
  return code === undefined ? 500 : (statusOfCode(code, statuses) ?? 500);
}

/**
 * Builds the error detail of an error: its code, message, and where present
 * its `target` and `position`. Unknown errors reveal nothing of themselves.
 * @param error anything thrown
 * @param statuses the statuses known; lib/http's own by default
 * @returns the detail for the response body
 */
export function errorDetail(error: unknown, statuses?: ErrorStatuses): ErrorDetail {
  const code = codeOf(error);
  // A code answered 500 is a start-up or programming error: its message stays inside.
  if (
    code === undefined || (statusOfCode(code, statuses) ?? 500) === 500 || !(error instanceof Error)
  ) {
    return {
      code: "ERR_INTERNAL",
      message: "Cannot answer the request: an internal error occurred",
    };
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
 * @param statuses the statuses known; lib/http's own by default
 * @returns the serialized body
 */
export function errorBody(error: unknown, statuses?: ErrorStatuses): string {
  const detail = errorDetail(error, statuses);
  return JSON.stringify({ error: detail, errors: [detail] });
}

/**
 * Turns an error into a complete JSON response, with the headers what it
 * carries asks for: `Retry-After` from `retryAfterMs` (whole seconds, at
 * least 1), `WWW-Authenticate` from `challenge`, and an `HttpError`'s own
 * headers (`Allow`, …).
 * @param error anything thrown
 * @param statuses the statuses known; lib/http's own by default
 * @returns the response record
 */
export function errorResponse(error: unknown, statuses?: ErrorStatuses): HttpResponse {
  const status = statusOf(error, statuses);
  const extra = status === 500 ? {} : headersOf(error);
  return {
    status,
    headers: mergeHeaders(extra, ERROR_HEADERS),
    body: errorBody(error, statuses),
  };
}

/**
 * Answers the errors a handler throws whose codes the modules' tables in
 * `statuses` add to lib/http's (joined by `errorStatuses`) with their JSON
 * answers, as {@linkcode errorResponse} makes them; lib/http's own codes go
 * on as thrown (the edge answers them), and so does an error no table knows
 * or one answered 500, to be logged where the server logs them.
 * @param handler the module's handler
 * @param statuses the statuses of its codes
 * @returns the handler whose known errors come back as answers
 * @example
 * ```ts
 * const handler = withErrorStatuses(router, errorStatuses(WATER_ERROR_STATUS));
 * ```
 */
export function withErrorStatuses(handler: Handler, statuses: ErrorStatuses): Handler {
  const answer = (error: unknown): HttpResponse => {
    const code = codeOf(error);
    // lib/http's own codes (and those below it) go on as thrown: the edge answers them, as it always has.
    if (
      code === undefined || statusOfCode(code) !== undefined || statusOf(error, statuses) === 500
    ) throw error;
    return errorResponse(error, statuses);
  };
  return (request: HttpRequest): HttpResponse | Promise<HttpResponse> => {
    let result: HttpResponse | Promise<HttpResponse>;
    try {
      result = handler(request);
    } catch (error) {
      return answer(error);
    }
    return result instanceof Promise ? result.catch(answer) : result;
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

/** The headers an error asks for: an `HttpError`'s own, then those its data says (`retryAfterMs`, `challenge`). */
function headersOf(error: unknown): Readonly<Record<string, string>> {
  if (typeof error !== "object" || error === null) return {};
  const headers: Record<string, string> = {};
  const found: unknown = (error as Record<string, unknown>)["headers"];
  if (typeof found === "object" && found !== null) {
    for (const [name, value] of Object.entries(found)) {
      if (typeof value === "string") headers[name.toLowerCase()] = value;
    }
  }
  const retryAfterMs = numberProperty(error, "retryAfterMs");
  if (retryAfterMs !== undefined) {
    headers["retry-after"] = String(Math.max(1, Math.ceil(retryAfterMs / 1000)));
  }
  const challenge = stringProperty(error, "challenge");
  if (challenge !== undefined) headers["www-authenticate"] = challenge;
  return headers;
}
