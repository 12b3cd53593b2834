import { createRouter, type HttpResponse, type Router } from "../http/mod.ts";
import { jsonResponse } from "../http/_internal.ts";
import { HEALTH_DOCS } from "./_api_docs.ts";
import type { AppState } from "./app_state.ts";
import type { ReadinessReport } from "./create_readiness_check.ts";

/** Where an app is in its life. */

/** Options of {@linkcode createHealthHandler}. */
export interface HealthHandlerOptions {
  /** The app's state now. */
  readonly state: () => AppState;
  /** The modules the app runs, by name (`water`, `sync`, `relay` for the built-in ones). */
  readonly services: readonly string[];
  /** Asks the services' backends (see `createReadinessCheck`); asked only once the app has started. */
  readonly ready: () => Promise<ReadinessReport>;
}

const NO_STORE = { "cache-control": "no-store" } as const;

/**
 * The host's health routes: `GET /health/live` (and its alias `/health`)
 * answers 200 while the process runs, whatever its backends do, with the
 * app's state (`ok` once started, `starting` or `closing` around it);
 * `GET /health/ready` answers 200 once the app has started and every backend
 * of its services answers, else 503 with `Retry-After` and the parts that do
 * not, each with its service and why.
 * @param options the app's state, services and readiness check
 * @returns the router of the three routes
 * @example
 * ```ts
 * const health = createHealthHandler({ state: () => "started", services: ["relay"], ready: createReadinessCheck(sources, { now }) });
 * ```
 */
export function createHealthHandler(options: HealthHandlerOptions): Router {
  const { services } = options;
  const live = (): HttpResponse => {
    const state = options.state();
    return jsonResponse(200, { status: state === "started" ? "ok" : state, services }, NO_STORE);
  };
  return createRouter([
    { method: "GET", path: "/health", handler: live, doc: HEALTH_DOCS.health },
    { method: "GET", path: "/health/live", handler: live, doc: HEALTH_DOCS.live },
    {
      method: "GET",
      path: "/health/ready",
      handler: async () => {
        const state = options.state();
        if (state !== "started") {
          const reason = state === "new" || state === "starting"
            ? "is starting (loading data, connecting stores)"
            : "is shutting down";
          return unavailable(state, services, [{ service: "server", part: "server", reason }]);
        }
        const report = await options.ready();
        // Closed meanwhile: the backends' answer no longer matters.
        const after = options.state();
        if (after !== "started") {
          return unavailable(after, services, [{
            service: "server",
            part: "server",
            reason: "is shutting down",
          }]);
        }
        return report.ready
          ? jsonResponse(200, { status: "ok", services }, NO_STORE)
          : unavailable("unavailable", services, report.problems);
      },
      doc: HEALTH_DOCS.ready,
    },
  ]);
}

function unavailable(
  status: string,
  services: readonly string[],
  problems: ReadinessReport["problems"],
): HttpResponse {
  return jsonResponse(503, { status, services, problems }, { ...NO_STORE, "retry-after": "1" });
}
