import { readFile } from "node:fs/promises";
import { AUTH_SECURITY_SCHEMES } from "../auth/_internal.ts";
import {
  type ApiService,
  jsonResponse,
  type OpenApiDocument,
  openApiDocument,
  type SecuritySchemeDoc,
} from "../http/_internal.ts";
import { createRouter, type Router } from "../http/mod.ts";
import { RELAY_SECURITY_SCHEMES } from "../relay/_internal.ts";
import { WATER_SECURITY_SCHEMES } from "../water/_internal.ts";
import { OPENAPI_DOC } from "./_api_docs.ts";

/** Options of {@linkcode createOpenApiHandler}. */
export interface OpenApiHandlerOptions {
  /** The services whose routes the document describes, asked at each request (the host's own, then those started). */
  readonly services: () => readonly ApiService[];
  /**
   * The API's version, `info.version`.
   * @default the package's version, read from its package.json
   */
  readonly version?: () => Promise<string>;
}

/** The security schemes the services' routes name, each domain's own. */
export const SECURITY_SCHEMES: Readonly<Record<string, SecuritySchemeDoc>> = {
  ...WATER_SECURITY_SCHEMES,
  ...AUTH_SECURITY_SCHEMES,
  ...RELAY_SECURITY_SCHEMES,
};

/** What each service is, for the document's tags. */
const SERVICE_DESCRIPTIONS: Readonly<Record<string, string>> = {
  host: "The server's own routes: health, metrics and this document",
  water: "Water-data query API: OData v4 over DataStream-schema datasets, and the datasets' admin",
  explorer: "The water-data explorer, a page for people",
  sync: "OAuth 2.0 token service and the user's sync API",
  relay: "Multi-tenant webhook relay: intake, endpoints, the message log, dead letters, the portal",
};

/**
 * The route `GET /openapi.json`: the OpenAPI 3.1 document of the routes the
 * services serve, built at each request from their route tables (so it
 * shows the services mounted, and only those), with `servers` the origin
 * the request was made to (`PUBLIC_URL` when the server has one).
 * @param options the services and the version
 * @returns the router of the one route
 * @example
 * ```ts
 * const openapi = createOpenApiHandler({ services: () => [{ name: "water", routes: water.handler.routes }] });
 * ```
 */
export function createOpenApiHandler(options: OpenApiHandlerOptions): Router {
  let version: Promise<string> | undefined;
  const versionOf = options.version ?? packageVersion;
  const router: Router = createRouter([
    {
      method: "GET",
      path: "/openapi.json",
      handler: async (request) => {
        version ??= versionOf();
        const document = apiDocument(options.services(), request.origin, await version);
        return jsonResponse(200, document, { "cache-control": "no-cache" });
      },
      doc: OPENAPI_DOC,
    },
  ]);
  return router;
}

/**
 * The OpenAPI 3.1 document of services served at an origin.
 * @param services the services, each with its routes
 * @param origin where they are served, e.g. `http://127.0.0.1:8000`
 * @param version the API's version
 * @returns the document
 * @throws {TypeError} when a route has no doc or the docs do not fit together (see `openApiDocument`)
 */
export function apiDocument(
  services: readonly ApiService[],
  origin: string,
  version: string,
): OpenApiDocument {
  return openApiDocument({
    info: {
      title: "tributary",
      version,
      description:
        "Water-data OData API, OAuth token and sync service, and multi-tenant webhook relay. " +
        'Errors are JSON: `{"error": {code, message, target?}, "errors": [...]}`, except the OAuth endpoints\' ' +
        'RFC 6749 `{"error", "error_description"}` and the 422 field lists. `GET` routes answer `HEAD` too.',
    },
    servers: [{ url: origin }],
    services: services.map((service) => {
      const description = service.description ?? SERVICE_DESCRIPTIONS[service.name];
      return description === undefined ? service : { ...service, description };
    }),
    securitySchemes: SECURITY_SCHEMES,
  });
}

async function packageVersion(): Promise<string> {
  try {
    // lib/app/ and dist/app/ are both two folders below the package's root.
    const manifest: unknown = JSON.parse(
      await readFile(new URL("../../package.json", import.meta.url), "utf8"),
    );
    const found = typeof manifest === "object" && manifest !== null
      ? (manifest as { version?: unknown }).version
      : undefined;
    return typeof found === "string" ? found : "0.0.0";
  } catch {
    return "0.0.0";
  }
}
