import type { HttpRequest } from "./types.ts";

/** Which service and route answered a request: what an access log names it by. */
export interface AnsweredBy {
  /** The service, e.g. `water`, or `host` for the server's own routes. */
  readonly service: string;
  /** The pattern of the route that answered, e.g. `/items/:id`; `other` when none matched. */
  readonly route: string;
}

/**
 * The slot a request record keeps its {@linkcode AnsweredBy} in. The node
 * adapter's records declare it, so noting a request changes no object's
 * shape; a side table (a `WeakMap`) would take an entry per request and make
 * every garbage collection dearer.
 */
export const ANSWERED_BY: unique symbol = Symbol("tributary.answeredBy");

/** A request record with the slot. */
interface Noted {
  [ANSWERED_BY]?: AnsweredBy;
}

/** Where the note of a record that takes no new property (a frozen one) is kept instead. */
const sealed = new WeakMap<HttpRequest, AnsweredBy>();

/**
 * Notes which service and route answered a request, for the access log to
 * read once the response is sent ({@linkcode answeredBy}). A later note
 * replaces an earlier one (the innermost handler that knows the route notes
 * last). Share one `by` between the requests of a route: noting then
 * allocates nothing.
 * @param request the request being answered
 * @param by its service and route
 * @example
 * ```ts
 * const by = { service: "items", route: "/items/:id" };
 * noteAnsweredBy(request, by);
 * answeredBy(request); // by
 * ```
 */
export function noteAnsweredBy(request: HttpRequest, by: AnsweredBy): void {
  if (!Reflect.set(request, ANSWERED_BY, by)) sealed.set(request, by);
}

/**
 * The service and route that answered a request, as noted with
 * {@linkcode noteAnsweredBy}; undefined when nothing noted it (no service's
 * prefix matched).
 * @param request the request answered
 * @returns its note, if any
 */
export function answeredBy(request: HttpRequest): AnsweredBy | undefined {
  return (request as Noted)[ANSWERED_BY] ?? sealed.get(request);
}
