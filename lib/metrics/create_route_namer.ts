import type { HttpRequest } from "../http/mod.ts";

/** Options of {@linkcode createRouteNamer}. */
export interface RouteNamerOptions {
  /**
   * The name of a path no pattern matches.
   * @default {"other"}
   */
  fallback?: string;
}

interface Pattern {
  readonly name: string;
  readonly segments: readonly string[];
  /** Whether the last pattern segment is `*`, matching one or more segments. */
  readonly rest: boolean;
}

/**
 * Builds a route namer for `withMetrics`: it answers the first pattern that
 * matches a request's path, or the fallback, so the `route` label has only as
 * many values as there are patterns. Patterns use the router's syntax
 * (`/items/:id`) plus a final `*` for any deeper path (`/oauth2/*`). A
 * trailing slash is ignored.
 * @param patterns path patterns, tried in order; each is also its route's name
 * @param options the fallback name
 * @returns a function from request to route name
 * @throws {TypeError} when a pattern does not start with `/`
 * @example
 * ```ts
 * const route = createRouteNamer(["/webhook", "/tenants/:id/*"]);
 * route(request); // "/tenants/:id/*" for "/tenants/t1/endpoints/e2"
 * ```
 */
export function createRouteNamer(
  patterns: readonly string[],
  options: RouteNamerOptions = {},
): (request: HttpRequest) => string {
  const fallback = options.fallback ?? "other";
  const literal = new Map<string, string>();
  const compiled: Pattern[] = [];
  for (const pattern of patterns) {
    if (typeof pattern !== "string" || !pattern.startsWith("/")) {
      const found = JSON.stringify(pattern);
      throw new TypeError(`Cannot name routes: a pattern must start with "/": found ${found}`);
    }
    const segments = splitPath(pattern);
    const rest = segments[segments.length - 1] === "*";
    const dynamic = rest || segments.some((segment) => segment.startsWith(":"));
    // Literal patterns ahead of every dynamic one take one map lookup; later
    // ones stay in the ordered list so an earlier dynamic pattern still wins.
    if (!dynamic && compiled.length === 0) {
      const key = `/${segments.join("/")}`;
      if (!literal.has(key)) literal.set(key, pattern);
      continue;
    }
    compiled.push({ name: pattern, segments: rest ? segments.slice(0, -1) : segments, rest });
  }
  return function routeName(request: HttpRequest): string {
    const exact = literal.get(request.path);
    if (exact !== undefined) return exact;
    const segments = splitPath(request.path);
    const key = `/${segments.join("/")}`;
    const trimmed = literal.get(key);
    if (trimmed !== undefined) return trimmed;
    for (const pattern of compiled) {
      if (matches(pattern, segments)) return pattern.name;
    }
    return fallback;
  };
}

function matches(pattern: Pattern, segments: readonly string[]): boolean {
  const wanted = pattern.segments;
  const fits = pattern.rest ? segments.length > wanted.length : segments.length === wanted.length;
  if (!fits) return false;
  for (let i = 0; i < wanted.length; i++) {
    const segment = wanted[i]!;
    if (segment.startsWith(":") ? segments[i] === "" : segment !== segments[i]) return false;
  }
  return true;
}

function splitPath(path: string): string[] {
  const segments = path.split("/").slice(1);
  if (segments.length > 0 && segments[segments.length - 1] === "") segments.pop();
  return segments;
}
