import type { HttpRequest } from "./types.ts";

/**
 * Tells whether a request's `If-None-Match` matches an entity tag, by the
 * weak comparison of RFC 9110 §13.1.2 (`W/` ignored): a list of tags, or `*`
 * for any current representation. A match means the client's copy is
 * current: answer 304.
 * @param request the request
 * @param etag the current tag, quoted, e.g. `"abc"`
 * @returns whether the client's copy is current
 * @example
 * ```ts
 * if (ifNoneMatch(request, etag)) return { status: 304, headers: { etag } };
 * ```
 */
export function ifNoneMatch(request: HttpRequest, etag: string): boolean {
  const header = request.headers["if-none-match"];
  if (header === undefined) return false;
  if (header.trim() === "*") return true;
  const wanted = weak(etag);
  for (const tag of header.split(",")) {
    if (weak(tag.trim()) === wanted) return true;
  }
  return false;
}

function weak(tag: string): string {
  return tag.startsWith("W/") ? tag.slice(2) : tag;
}
