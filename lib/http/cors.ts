import { HttpError } from "./errors.ts";
import { errorResponse } from "./error_response.ts";
import { mergeHeaders } from "./merge_headers.ts";
import type { Handler, HttpRequest, HttpResponse } from "./types.ts";

/** Options of {@linkcode withCors}. */
export interface CorsOptions {
  /** Exact origins allowed, e.g. `https://app.example.org`. */
  origins: readonly string[];
  /**
   * Methods a browser may use.
   * @default {["GET", "HEAD"]}
   */
  methods?: readonly string[];
  /**
   * Request headers a browser may send.
   * @default {["x-api-key", "authorization", "content-type"]}
   */
  allowHeaders?: readonly string[];
  /**
   * Response headers a browser script may read.
   * @default {["link", "retry-after"]}
   */
  exposeHeaders?: readonly string[];
  /**
   * How long a browser may cache a preflight answer, in seconds.
   * @default {600}
   */
  maxAgeSeconds?: number;
}

/**
 * Adds CORS to a handler: answers preflight requests from allowed origins,
 * refuses those from other origins with 403, and marks every response to an
 * allowed origin, errors included, so that browser code can read it.
 * @param handler the handler to wrap
 * @param options allowed origins, methods and headers
 * @returns the wrapped handler
 */
export function withCors(handler: Handler, options: CorsOptions): Handler {
  const origins = new Set(options.origins);
  const methods = (options.methods ?? ["GET", "HEAD"]).map((m) => m.toUpperCase());
  const allowHeaders = (options.allowHeaders ?? ["x-api-key", "authorization", "content-type"])
    .map((h) => h.toLowerCase());
  const expose = (options.exposeHeaders ?? ["link", "retry-after"]).join(", ");
  const maxAge = String(options.maxAgeSeconds ?? 600);
  // An answer given at once stays synchronous through here, with an origin or without.
  return function cors(request: HttpRequest): HttpResponse | Promise<HttpResponse> {
    const origin = request.headers["origin"];
    if (origin === undefined) return handler(request);
    const requestedMethod = request.headers["access-control-request-method"];
    if (request.method === "OPTIONS" && requestedMethod !== undefined) {
      if (!origins.has(origin)) {
        return errorResponse(
          new HttpError(
            "ERR_HTTP_ORIGIN_NOT_ALLOWED",
            `Cannot allow cross-origin requests from ${origin}: the origin is not on the allow-list`,
          ),
        );
      }
      if (!methods.includes(requestedMethod.toUpperCase())) {
        return errorResponse(
          new HttpError(
            "ERR_HTTP_ORIGIN_NOT_ALLOWED",
            `Cannot allow cross-origin ${requestedMethod} requests: allowed methods are ${
              methods.join(", ")
            }`,
          ),
        );
      }
      return {
        status: 204,
        headers: {
          "access-control-allow-origin": origin,
          "access-control-allow-methods": methods.join(", "),
          "access-control-allow-headers": allowHeaders.join(", "),
          "access-control-max-age": maxAge,
          vary: "Origin",
        },
      };
    }
    const allowed = (response: HttpResponse): HttpResponse => {
      if (!origins.has(origin)) return response;
      const headers = mergeHeaders(response.headers);
      headers["access-control-allow-origin"] = origin;
      headers["access-control-expose-headers"] = expose;
      headers["vary"] = "Origin";
      return { ...response, headers };
    };
    let response: HttpResponse | Promise<HttpResponse>;
    try {
      response = handler(request);
    } catch (error) {
      return allowed(errorResponse(error));
    }
    return response instanceof Promise
      ? response.then(allowed, (error: unknown) => allowed(errorResponse(error)))
      : allowed(response);
  };
}
