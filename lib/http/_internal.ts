/**
 * What the package's other domains use of http and its users need not:
 * reached only from inside the package (package.json exports no `_`
 * module), so it can change without a change to the public surface.
 * @module
 */
export { statusOf } from "./error_response.ts";
export { mergeHeaders } from "./merge_headers.ts";
export { JSON_CONTENT_TYPE, jsonResponse } from "./json_response.ts";
export { ifNoneMatch } from "./if_none_match.ts";
export { parseQuery } from "./parse_query.ts";
export type { QueryParameter } from "./parse_query.ts";
export { schemaRef } from "./route_doc.ts";
export type { SecuritySchemeDoc } from "./route_doc.ts";
export {
  codesByStatus,
  errorBodySchema,
  errorHeaders,
  errorReason,
  errorResponses,
  FIELD_ERRORS_SCHEMA,
} from "./error_responses.ts";
export { openApiDocument } from "./openapi_document.ts";
export type { ApiService, OpenApiDocument } from "./openapi_document.ts";
export { checkJsonDepth } from "./read_json.ts";
export { parseTrustedProxies } from "./trusted_proxies.ts";
export { compressBytes, compressParts, negotiateEncoding, withCompression } from "./compression.ts";
export type { ContentCoding } from "./compression.ts";
export { parseOrigin } from "./parse_origin.ts";
export { startPeriodicTask } from "./start_periodic_task.ts";
export type { TaskOutcomes } from "./start_periodic_task.ts";
export { waitAtMost } from "./wait_at_most.ts";
