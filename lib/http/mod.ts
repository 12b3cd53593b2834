/**
 * The HTTP layer shared by every service: plain request and response records,
 * a router, `node:http` and Web `fetch` adapters, body and JSON limits, JSON
 * errors from one code-to-status table, CORS, API keys, rate limits and
 * deadlines.
 * @module
 */
export { HttpError } from "./errors.ts";
export type { HttpErrorCode, HttpErrorOptions } from "./errors.ts";
export { errorResponse, withErrorStatuses } from "./error_response.ts";
export { ERROR_STATUS, errorStatuses } from "./error_status.ts";
export type { ErrorCode, ErrorStatuses, ErrorStatusTable } from "./error_status.ts";
export { createRouter, keepRoutes } from "./router.ts";
export type { Route, RouteInfo, Router } from "./router.ts";
export type {
  BodyDoc,
  HeaderDoc,
  JsonSchema,
  JsonValue,
  LinkDoc,
  MediaDoc,
  ParameterDoc,
  ResponseDoc,
  RouteDoc,
  SecurityRequirement,
} from "./route_doc.ts";
export { readJson } from "./read_json.ts";
export type { ReadJsonOptions } from "./read_json.ts";
export { createNodeListener } from "./node_adapter.ts";
export { createClientErrorListener } from "./create_client_error_listener.ts";
export type {
  ClientErrorListenerOptions,
  ClientErrorSocket,
} from "./create_client_error_listener.ts";
export { answeredBy, noteAnsweredBy } from "./answered_by.ts";
export type { AnsweredBy } from "./answered_by.ts";
export type {
  NodeListener,
  NodeListenerOptions,
  NodeListenerRequest,
  NodeListenerResponse,
  ResponseEntry,
} from "./node_adapter.ts";
export type { ForwardedHeaders, TrustedProxies } from "./trusted_proxies.ts";
export { createFetchHandler } from "./fetch_adapter.ts";
export type { FetchHandlerOptions } from "./fetch_adapter.ts";
export { withCors } from "./cors.ts";
export type { CorsOptions } from "./cors.ts";
export { authenticateApiKey, indexApiKeys, parseApiKey } from "./api_keys.ts";
export { readApiKeysFile } from "./read_api_keys_file.ts";
export type { ApiKey, AuthenticateOptions, Identity } from "./api_keys.ts";
export { RateLimiter } from "./rate_limiter.ts";
export { RedisRateLimiter } from "./redis_rate_limiter.ts";
export type { RedisRateLimiterOptions, ScriptRunner } from "./redis_rate_limiter.ts";
export type { RateDecision, RateLimiterOptions, RateQuota } from "./rate_limiter.ts";
export { withRateLimit } from "./with_rate_limit.ts";
export type { KeyLimiter } from "./with_rate_limit.ts";
export { createDeadline } from "./deadline.ts";
export type { Deadline } from "./deadline.ts";
export type {
  BodyChunks,
  BodyParts,
  BodyReader,
  Handler,
  HttpRequest,
  HttpResponse,
  ResponseBody,
  RouteHandler,
  RouteParams,
} from "./types.ts";
export type {
  ReadinessProbe,
  RunningService,
  ServiceCredential,
  ServiceDescription,
  ServiceEndpoint,
  ServiceLog,
} from "./service.ts";
export { mountHandlers } from "./mount.ts";
export type { Mount } from "./mount.ts";
