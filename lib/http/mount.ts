import { HttpError } from "./errors.ts";
import type { Handler, HttpRequest, HttpResponse } from "./types.ts";

/** A handler serving every path under a prefix. */
export interface Mount {
  /** Path prefix, e.g. `/v1/odata/v4`; `/` matches everything. */
  readonly prefix: string;
  readonly handler: Handler;
}

/**
 * Combines services by path prefix; the longest matching prefix wins, and a
 * path under no prefix answers 404.
 * @param mounts the services
 * @returns the combined handler
 */
export function mountHandlers(mounts: readonly Mount[]): Handler {
  const sorted = [...mounts].sort((a, b) => b.prefix.length - a.prefix.length);
  return function mounted(request: HttpRequest): HttpResponse | Promise<HttpResponse> {
    for (const mount of sorted) {
      const prefix = mount.prefix;
      if (prefix === "/" || request.path === prefix || request.path.startsWith(`${prefix}/`)) {
        return mount.handler(request);
      }
    }
    throw new HttpError("ERR_HTTP_NOT_FOUND", `Cannot find ${request.path}: no such resource`);
  };
}
