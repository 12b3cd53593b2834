import { type ErrorStatuses, statusOfCode } from "./error_status.ts";
import type { HeaderDoc, JsonSchema, ResponseDoc } from "./route_doc.ts";

/** What each error status means, for the document's response descriptions. */
const REASONS: Readonly<Record<number, string>> = {
  400: "Bad request",
  401: "No usable credentials",
  403: "Credentials not allowed here",
  404: "Not found",
  405: "Method not allowed",
  408: "Past the deadline",
  409: "Conflict",
  410: "Gone",
  413: "Too large",
  415: "Unsupported content type",
  422: "Unprocessable body",
  429: "Too many requests",
  431: "Request line and headers too large",
  503: "Unavailable for now",
};

const RETRY_AFTER: HeaderDoc = {
  description: "Seconds to wait before trying again",
  schema: { type: "string", pattern: "^[0-9]+$" },
};

/** Headers an error of a status may carry (`HttpError`'s and the domains' errors set them). */
const ERROR_HEADERS: Readonly<Record<number, Readonly<Record<string, HeaderDoc>>>> = {
  401: {
    "WWW-Authenticate": {
      description: "The challenge: the scheme and realm to authenticate with",
      schema: { type: "string" },
    },
  },
  405: { Allow: { description: "The methods the resource allows", schema: { type: "string" } } },
  429: { "Retry-After": RETRY_AFTER },
  503: { "Retry-After": RETRY_AFTER },
};

/**
 * The headers an error answer of a status may carry: `WWW-Authenticate` on
 * 401, `Allow` on 405, `Retry-After` on 429 and 503.
 * @param status the status
 * @returns the headers, by name
 */
export function errorHeaders(status: number): Readonly<Record<string, HeaderDoc>> {
  return ERROR_HEADERS[status] ?? {};
}

/**
 * A short description of an error status, e.g. `Not found`.
 * @param status the status
 * @returns the description
 */
export function errorReason(status: number): string {
  return REASONS[status] ?? `Error ${status}`;
}

/**
 * Groups error codes by the status the tables give them, in ascending
 * status order.
 * @param codes the codes
 * @param statuses the statuses known (the module's table joined by `errorStatuses`); lib/http's own by default
 * @returns the codes of each status
 * @throws {TypeError} for a code answered 500 (it never answers a request), or one no table has
 */
export function codesByStatus(
  codes: readonly string[],
  statuses?: ErrorStatuses,
): ReadonlyMap<number, readonly string[]> {
  const grouped = new Map<number, string[]>();
  for (const code of new Set(codes)) {
    const status = statusOfCode(code, statuses) ?? 500;
    if (status === 500) {
      throw new TypeError(
        `Cannot document error ${code}: it is answered 500, as an internal error`,
      );
    }
    grouped.set(status, [...(grouped.get(status) ?? []), code]);
  }
  return new Map([...grouped].sort(([a], [b]) => a - b));
}

/**
 * The error answers of a route, for its document: one response per status
 * that the tables give the codes, each with the JSON
 * error body every service writes (`{"error": {code, message, target?,
 * innererror?}, "errors": [...]}`, see `errorBody`) and the codes of that
 * status as the values `code` may take.
 * @param codes the codes the route may answer with
 * @param statuses the statuses known (the module's table joined by `errorStatuses`); lib/http's own by default
 * @returns the responses, by status
 * @throws {TypeError} for a code answered 500, or one no table has
 * @example
 * ```ts
 * const responses = { "200": ok, ...errorResponses(["ERR_HTTP_UNAUTHORIZED", "ERR_HTTP_FORBIDDEN"]) };
 * ```
 */
export function errorResponses(
  codes: readonly string[],
  statuses?: ErrorStatuses,
): Record<string, ResponseDoc> {
  const responses: Record<string, ResponseDoc> = {};
  for (const [status, group] of codesByStatus(codes, statuses)) {
    const headers = errorHeaders(status);
    responses[String(status)] = {
      description: `${errorReason(status)}: ${group.join(", ")}`,
      ...(Object.keys(headers).length === 0 ? {} : { headers }),
      content: { "application/json": { schema: errorBodySchema(group) } },
    };
  }
  return responses;
}

/**
 * The body of a 422 that lists field problems, as the sign-up and sync APIs
 * answer a body that is not valid: `[{"message", "field"?}]`.
 */
export const FIELD_ERRORS_SCHEMA: JsonSchema = {
  type: "array",
  minItems: 1,
  items: {
    type: "object",
    required: ["message"],
    additionalProperties: false,
    properties: {
      message: { type: "string" },
      field: {
        type: "string",
        description: "The field at fault, e.g. `objects.messages[2].subject`",
      },
    },
  },
};

/** The name under which documents share {@linkcode ERROR_BODY_SCHEMA}: `#/components/schemas/Error`. */
export const ERROR_SCHEMA_NAME = "Error";

const DETAIL: JsonSchema = {
  type: "object",
  required: ["code", "message"],
  additionalProperties: false,
  properties: {
    code: { type: "string", description: "A stable code, e.g. `ERR_ODATA_SYNTAX`" },
    message: { type: "string" },
    target: {
      type: "string",
      description: "The part of the request at fault, e.g. a parameter or field",
    },
    innererror: {
      type: "object",
      required: ["position"],
      additionalProperties: false,
      properties: {
        position: {
          type: "integer",
          minimum: 0,
          description: "Where in the text a syntax error is",
        },
      },
    },
  },
};

/**
 * The JSON error body every service writes (`errorBody`): OData's `error`
 * object, and the same in `errors`, as the DataStream clients read it.
 */
export const ERROR_BODY_SCHEMA: JsonSchema = {
  type: "object",
  required: ["error", "errors"],
  additionalProperties: false,
  properties: {
    error: DETAIL,
    errors: {
      type: "array",
      items: DETAIL,
      minItems: 1,
      maxItems: 1,
      description: "The same error, as the DataStream clients read it",
    },
  },
};

/**
 * The schema of the JSON error body (`errorBody`) with `code` one of
 * `codes`: the shared {@linkcode ERROR_BODY_SCHEMA}, by reference, narrowed.
 * @param codes the codes the body may carry
 * @returns the schema
 */
export function errorBodySchema(codes: readonly string[]): JsonSchema {
  const code = { properties: { code: { enum: [...codes] } } };
  return {
    $ref: `#/components/schemas/${ERROR_SCHEMA_NAME}`,
    properties: { error: code, errors: { items: code } },
  };
}
