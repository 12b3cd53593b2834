import {
  type Handler,
  HttpError,
  type HttpRequest,
  type HttpResponse,
  type RouteDoc,
} from "../http/mod.ts";
import type { MetricsRegistry } from "./metrics_registry.ts";
import { METRICS_CONTENT_TYPE, renderMetrics } from "./render_metrics.ts";

/** Options of {@linkcode createMetricsHandler}. */
export interface MetricsHandlerOptions {
  /**
   * The path the handler answers; a trailing slash is accepted too.
   * @default {"/metrics"}
   */
  path?: string;
}

/**
 * Builds the scrape endpoint: `GET` (and `HEAD`) on `/metrics` answers 200
 * with the registry in the text format 0.0.4 and `Cache-Control: no-store`.
 * Other methods get 405 with `Allow`, other paths 404.
 * @param registry the registry to expose
 * @param options the path to answer
 * @returns the handler
 * @throws {HttpError} from the handler: `ERR_HTTP_NOT_FOUND`, `ERR_HTTP_METHOD_NOT_ALLOWED`
 * @example
 * ```ts
 * mounts.push({ prefix: "/metrics", handler: createMetricsHandler(registry) });
 * ```
 */
export function createMetricsHandler(
  registry: MetricsRegistry,
  options: MetricsHandlerOptions = {},
): Handler {
  const path = options.path ?? "/metrics";
  return function metrics(request: HttpRequest): HttpResponse {
    if (request.path !== path && request.path !== `${path}/`) {
      throw new HttpError("ERR_HTTP_NOT_FOUND", `Cannot find ${request.path}: no such resource`);
    }
    if (request.method !== "GET" && request.method !== "HEAD") {
      throw new HttpError(
        "ERR_HTTP_METHOD_NOT_ALLOWED",
        `Cannot ${request.method} ${request.path}: the resource allows GET, HEAD`,
        { headers: { allow: "GET, HEAD" } },
      );
    }
    return {
      status: 200,
      headers: { "content-type": METRICS_CONTENT_TYPE, "cache-control": "no-store" },
      body: renderMetrics(registry),
    };
  };
}

/** The doc of the scrape route, for the OpenAPI document (the host lists `/metrics` with it). */
export const METRICS_ROUTE_DOC: RouteDoc = {
  operationId: "getMetrics",
  summary:
    "Prometheus text 0.0.4: requests by service, route, method and status, their durations, the relay's deliveries and queue, process metrics",
  responses: {
    "200": {
      description: "The metrics",
      headers: { "Cache-Control": { description: "`no-store`", schema: { type: "string" } } },
      content: { "text/plain": { schema: { type: "string" } } },
    },
  },
  security: [],
};
