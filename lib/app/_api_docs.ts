import type { AppState } from "./app_state.ts";
import type { JsonSchema, ResponseDoc, RouteDoc } from "../http/mod.ts";

// The host's own routes (health, the OpenAPI document) as the document
// describes them; the routes (create_health_handler.ts,
// create_openapi_handler.ts) carry these docs.

/** Every state an app answers `/health/live` in: `ok` once started. */
const LIVE_STATES: Readonly<Record<Exclude<AppState, "started"> | "ok", true>> = {
  ok: true,
  new: true,
  starting: true,
  closing: true,
  closed: true,
};

const SERVICES: JsonSchema = {
  type: "array",
  items: { type: "string" },
  description: "The modules it runs, by name (`water`, `sync`, `relay` for the built-in ones)",
};
const NO_STORE = {
  "Cache-Control": {
    description: "`no-store`",
    schema: { type: "string", const: "no-store" },
    required: true,
  },
} as const;

const LIVE: ResponseDoc = {
  description: "The process runs (whatever its backends do)",
  headers: NO_STORE,
  content: {
    "application/json": {
      schema: {
        type: "object",
        required: ["status", "services"],
        additionalProperties: false,
        properties: {
          status: {
            enum: Object.keys(LIVE_STATES),
            description: "`ok` once started; else where the app is",
          },
          services: SERVICES,
        },
      },
    },
  },
};

/** The health routes' docs. */
export const HEALTH_DOCS: Readonly<Record<"health" | "live" | "ready", RouteDoc>> = {
  health: {
    operationId: "getHealth",
    summary: "The same as /health/live",
    responses: { "200": LIVE },
    security: [],
  },
  live: {
    operationId: "getLiveness",
    summary: "Liveness: 200 while the process runs; failing it means restart the process",
    responses: { "200": LIVE },
    security: [],
  },
  ready: {
    operationId: "getReadiness",
    summary:
      "Readiness: 200 once started with every backend the services need answering; else 503 with each failing part",
    responses: {
      "200": {
        description: "Ready",
        headers: NO_STORE,
        content: {
          "application/json": {
            schema: {
              type: "object",
              required: ["status", "services"],
              additionalProperties: false,
              properties: { status: { const: "ok" }, services: SERVICES },
            },
          },
        },
      },
      "503": {
        description: "Not ready: starting, closing, or a backend does not answer",
        headers: {
          ...NO_STORE,
          "Retry-After": { description: "Seconds", schema: { type: "string" }, required: true },
        },
        content: {
          "application/json": {
            schema: {
              type: "object",
              required: ["status", "services", "problems"],
              additionalProperties: false,
              properties: {
                status: { enum: ["unavailable", "new", "starting", "closing", "closed"] },
                services: SERVICES,
                problems: {
                  type: "array",
                  items: {
                    type: "object",
                    required: ["service", "part", "reason"],
                    additionalProperties: false,
                    properties: {
                      service: {
                        type: "string",
                        description: "The service that needs it, or `server`",
                      },
                      part: {
                        type: "string",
                        description: "e.g. `queue: Redis at redis://127.0.0.1:6379`",
                      },
                      reason: { type: "string" },
                    },
                  },
                },
              },
            },
          },
        },
      },
    },
    security: [],
  },
};

/** The document's own route's doc. */
export const OPENAPI_DOC: RouteDoc = {
  operationId: "getOpenApiDocument",
  summary:
    "This document: OpenAPI 3.1 of every route of the services mounted, built from their route tables",
  responses: {
    "200": {
      description: "The document; `servers` names the origin it was asked at (PUBLIC_URL when set)",
      content: {
        "application/json": {
          schema: {
            type: "object",
            required: ["openapi", "info", "paths"],
            properties: { openapi: { type: "string", pattern: "^3\\.1\\." } },
          },
        },
      },
    },
  },
  security: [],
};
