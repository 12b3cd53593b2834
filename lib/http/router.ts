import { HttpError } from "./errors.ts";
import { decodeComponent } from "./parse_query.ts";
import type { RouteDoc } from "./route_doc.ts";
import type { Handler, HttpRequest, HttpResponse, RouteHandler, RouteParams } from "./types.ts";

/** One route: a method, a path pattern and its handler. */
export interface Route {
  /** Upper-case method; `GET` routes also answer `HEAD`. */
  readonly method: string;
  /**
   * Path pattern: literal segments and `:name` parameters, e.g.
   * `/api/v2/sync/user/since/:revision`.
   */
  readonly path: string;
  readonly handler: RouteHandler;
  /** What the route tells the OpenAPI document (see `openApiDocument`). */
  readonly doc?: RouteDoc;
}

/** A route as data: its method, path pattern and doc. */
export interface RouteInfo {
  readonly method: string;
  readonly path: string;
  readonly doc?: RouteDoc;
}

/**
 * A handler built from routes that tells which route answers a request, so
 * that metrics and documents derive from the routes instead of a copy of them.
 */
export interface Router {
  (request: HttpRequest): HttpResponse | Promise<HttpResponse>;
  /** The routes, in the order they are tried. */
  readonly routes: readonly RouteInfo[];
  /**
   * The path pattern of the route that answers a request (the one the
   * dispatch picks, whether or not the request got that far: a rate limit in
   * front of the router may refuse it), or, when no route answers its method,
   * of the first route whose path matches.
   * @param request a request
   * @returns the pattern, e.g. `/api/v2/sync/user/since/:revision`; undefined when no route's path matches
   */
  routeOf(request: HttpRequest): string | undefined;
}

interface CompiledRoute {
  /** The router the route is one of: a note of another router's match is not this one's. */
  readonly owner: object;
  readonly method: string;
  readonly path: string;
  readonly segments: readonly string[];
  readonly handler: RouteHandler;
  readonly doc: RouteDoc | undefined;
}

/**
 * Builds a handler that dispatches on method and path. An unknown path answers
 * 404, a known path with another method 405 with `Allow`, and `OPTIONS` on a
 * known path 204 with `Allow`. A trailing slash is ignored. The router also
 * tells which route answers a request ({@linkcode Router.routeOf}).
 * @param routes the routes, tried in order
 * @returns the dispatching handler, with its routes
 * @throws {TypeError} when a route's path does not start with `/`
 * @example
 * ```ts
 * const handler = createRouter([
 *   { method: "GET", path: "/items/:id", handler: (_req, { id }) => jsonResponse(200, { id }) },
 * ]);
 * ```
 */
export function createRouter(routes: readonly Route[]): Router {
  // Who the compiled routes belong to (the router itself is made below).
  const owner = {};
  const compiled = routes.map((route) => compileRoute(route, owner));
  // Literal paths (most routes) are found by one lookup of the raw path; a
  // path with a trailing slash or percent escapes takes the general match below.
  const literal = new Map<string, CompiledRoute[]>();
  for (const candidate of compiled) {
    if (candidate.segments.some((segment) => segment.startsWith(":"))) continue;
    const key = `/${candidate.segments.join("/")}`;
    literal.set(key, [...(literal.get(key) ?? []), candidate]);
  }
  const NO_PARAMS: RouteParams = Object.freeze({});
  function route(request: HttpRequest): HttpResponse | Promise<HttpResponse> {
    const exact = literal.get(request.path);
    if (exact !== undefined) {
      for (const candidate of exact) {
        if (candidate.method === request.method) {
          noteRoute(request, candidate);
          return candidate.handler(request, NO_PARAMS);
        }
      }
    }
    const segments = splitPath(request.path);
    let allowed: Set<string> | undefined;
    for (const candidate of compiled) {
      const params = matchSegments(candidate.segments, segments);
      if (params === undefined) continue;
      if (
        candidate.method === request.method ||
        (candidate.method === "GET" && request.method === "HEAD")
      ) {
        noteRoute(request, candidate);
        return candidate.handler(request, params);
      }
      allowed ??= new Set<string>();
      allowed.add(candidate.method);
      if (candidate.method === "GET") allowed.add("HEAD");
    }
    if (allowed === undefined) {
      throw new HttpError("ERR_HTTP_NOT_FOUND", `Cannot find ${request.path}: no such resource`);
    }
    allowed.add("OPTIONS");
    const allow = [...allowed].join(", ");
    if (request.method === "OPTIONS") return { status: 204, headers: { allow } };
    throw new HttpError(
      "ERR_HTTP_METHOD_NOT_ALLOWED",
      `Cannot ${request.method} ${request.path}: the resource allows ${allow}`,
      { headers: { allow } },
    );
  }
  // The route the dispatch noted on the request, else the same search as the dispatch, without dispatching.
  function routeOf(request: HttpRequest): string | undefined {
    const noted = (request as Routed)[ROUTED];
    if (noted !== undefined && noted.owner === owner) return noted.path;
    const exact = literal.get(request.path);
    if (exact !== undefined) {
      for (const candidate of exact) if (candidate.method === request.method) return candidate.path;
    }
    const segments = splitPath(request.path);
    let pathOnly: string | undefined;
    for (const candidate of compiled) {
      if (matchSegments(candidate.segments, segments) === undefined) continue;
      if (
        candidate.method === request.method ||
        (candidate.method === "GET" && request.method === "HEAD")
      ) return candidate.path;
      pathOnly ??= candidate.path;
    }
    return pathOnly;
  }
  const info: readonly RouteInfo[] = Object.freeze(
    compiled.map(({ method, path, doc }) =>
      Object.freeze(doc === undefined ? { method, path } : { method, path, doc })
    ),
  );
  return Object.assign(route, { routes: info, routeOf });
}

/**
 * Gives a handler wrapped around a router (CORS, a rate limit) the router's
 * routes and `routeOf`, so that the wrapped service still describes itself.
 * @param handler the wrapping handler
 * @param router the router inside it
 * @returns the handler, as a router
 */
export function keepRoutes(handler: Handler, router: Pick<Router, "routes" | "routeOf">): Router {
  const { routes, routeOf } = router;
  return Object.assign((request: HttpRequest) => handler(request), { routes, routeOf });
}

/**
 * Where a router notes the route it dispatched a request to (its compiled
 * record, no new object), so that whoever asks `routeOf` later (metrics, the
 * access log) reads it instead of searching again: one lookup a request.
 */
export const ROUTED: unique symbol = Symbol("tributary.routed");

interface Routed {
  [ROUTED]?: CompiledRoute;
}

function noteRoute(request: HttpRequest, route: CompiledRoute): void {
  // A frozen request record keeps no note: routeOf then searches again.
  Reflect.set(request, ROUTED, route);
}

function compileRoute(route: Route, owner: object): CompiledRoute {
  if (!route.path.startsWith("/")) {
    throw new TypeError(`Cannot add route "${route.path}": a path must start with "/"`);
  }
  return {
    owner,
    method: route.method.toUpperCase(),
    path: route.path,
    segments: splitPath(route.path),
    handler: route.handler,
    doc: route.doc,
  };
}

function splitPath(path: string): string[] {
  const trimmed = path.length > 1 && path.endsWith("/") ? path.slice(0, -1) : path;
  return trimmed.split("/").slice(1);
}

function matchSegments(
  pattern: readonly string[],
  segments: readonly string[],
): Record<string, string> | undefined {
  if (pattern.length !== segments.length) return undefined;
  let params: Record<string, string> | undefined;
  for (let i = 0; i < pattern.length; i++) {
    const expected = pattern[i]!;
    const actual = decodeSegment(segments[i]!);
    if (expected.startsWith(":")) {
      params ??= {};
      params[expected.slice(1)] = actual;
    } else if (expected !== actual) {
      return undefined;
    }
  }
  return params ?? {};
}

function decodeSegment(segment: string): string {
  // A path segment keeps "+" literally; only percent escapes are decoded.
  return segment.includes("%") ? decodeComponent(segment.replaceAll("+", "%2B"), segment) : segment;
}
