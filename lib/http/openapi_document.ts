import { ERROR_BODY_SCHEMA, ERROR_SCHEMA_NAME } from "./error_responses.ts";
import type { RouteInfo } from "./router.ts";
import type { JsonSchema, ParameterDoc, RouteDoc, SecuritySchemeDoc } from "./route_doc.ts";

/** A service whose routes the document describes: they are tagged with its name. */
export interface ApiService {
  /** e.g. `water`; the tag of its operations. */
  readonly name: string;
  /** What it is, for its tag. */
  readonly description?: string;
  /** Its routes, as its router lists them. */
  readonly routes: readonly RouteInfo[];
}

/** Options of {@linkcode openApiDocument}. */
export interface OpenApiDocumentOptions {
  readonly info: {
    readonly title: string;
    readonly version: string;
    readonly description?: string;
  };
  /** Where the API is served, e.g. `[{ url: "http://127.0.0.1:8000" }]`. */
  readonly servers?: readonly { readonly url: string; readonly description?: string }[];
  readonly services: readonly ApiService[];
  /**
   * The security schemes routes may name, by name; only those that some
   * route names are written.
   */
  readonly securitySchemes: Readonly<Record<string, SecuritySchemeDoc>>;
}

/** An OpenAPI 3.1 document, as plain JSON data. */
export type OpenApiDocument = { readonly openapi: string; readonly [field: string]: unknown };

/** Methods a route table may hold that an OpenAPI path item can describe. */
const METHODS = new Set(["GET", "PUT", "POST", "DELETE", "OPTIONS", "HEAD", "PATCH", "TRACE"]);

/**
 * Builds the OpenAPI 3.1 document of services from their routes: every
 * route is an operation (its `:name` path segments become `{name}`), with
 * what its {@linkcode RouteDoc} says: parameters, body, answers, security,
 * shared schemas. Nothing is written beside the routes, so a route cannot be
 * missing from the document: one without a doc is refused.
 * @param options the document's info, servers, services and security schemes
 * @returns the document
 * @throws {TypeError} for a route without a doc, a repeated operation id, a
 * path parameter without its doc (or a doc without its parameter), a
 * security scheme or linked operation that does not exist, or a shared
 * schema defined twice differently
 * @example
 * ```ts
 * const document = openApiDocument({
 *   info: { title: "Items", version: "1.0.0" },
 *   services: [{ name: "items", routes: router.routes }],
 *   securitySchemes: { apiKey: { type: "apiKey", in: "header", name: "x-api-key" } },
 * });
 * ```
 */
export function openApiDocument(options: OpenApiDocumentOptions): OpenApiDocument {
  const paths: Record<string, Record<string, unknown>> = {};
  const schemas: Record<string, JsonSchema> = {};
  const schemaText = new Map<string, string>();
  const usedSchemes = new Set<string>();
  const operations = new Map<string, string>();
  const links: {
    readonly from: string;
    readonly to: string;
    readonly parameters: readonly string[];
  }[] = [];
  const parametersOf = new Map<string, ReadonlySet<string>>();
  const tags: { name: string; description?: string }[] = [];
  for (const service of options.services) {
    if (service.routes.length === 0) continue;
    // Services may share a name (the token service and the sync API are both `sync`): one tag.
    if (!tags.some((tag) => tag.name === service.name)) {
      tags.push({
        name: service.name,
        ...(service.description === undefined ? {} : { description: service.description }),
      });
    }
    for (const route of service.routes) {
      const where = `${route.method} ${route.path}`;
      const doc = route.doc;
      if (doc === undefined) throw new TypeError(`Cannot document ${where}: the route has no doc`);
      if (!METHODS.has(route.method)) {
        throw new TypeError(`Cannot document ${where}: OpenAPI has no such method`);
      }
      const seen = operations.get(doc.operationId);
      if (seen !== undefined) {
        throw new TypeError(
          `Cannot document ${where}: operation id "${doc.operationId}" is ${seen}'s too`,
        );
      }
      operations.set(doc.operationId, where);
      const path = openApiPath(route.path);
      checkPathParameters(where, route.path, doc.parameters ?? []);
      parametersOf.set(
        doc.operationId,
        new Set((doc.parameters ?? []).map((parameter) => parameter.name)),
      );
      for (const requirement of doc.security) {
        for (const name of Object.keys(requirement)) {
          if (!Object.hasOwn(options.securitySchemes, name)) {
            throw new TypeError(`Cannot document ${where}: no security scheme is named "${name}"`);
          }
          usedSchemes.add(name);
        }
      }
      for (const [name, schema] of Object.entries(doc.schemas ?? {})) {
        const text = JSON.stringify(schema);
        const before = schemaText.get(name);
        if (before !== undefined && before !== text) {
          throw new TypeError(
            `Cannot document ${where}: schema "${name}" is defined twice, differently`,
          );
        }
        schemaText.set(name, text);
        schemas[name] = schema;
      }
      for (const response of Object.values(doc.responses)) {
        for (const link of Object.values(response.links ?? {})) {
          links.push({
            from: where,
            to: link.operationId,
            parameters: Object.keys(link.parameters),
          });
        }
      }
      const item = (paths[path] ??= {});
      const method = route.method.toLowerCase();
      if (Object.hasOwn(item, method)) {
        throw new TypeError(
          `Cannot document ${where}: the path and method are another route's too`,
        );
      }
      item[method] = operation(doc, service.name);
    }
  }
  for (const link of links) {
    const target = parametersOf.get(link.to);
    if (target === undefined) {
      throw new TypeError(`Cannot document ${link.from}: its link names no operation "${link.to}"`);
    }
    for (const name of link.parameters) {
      if (!target.has(name)) {
        throw new TypeError(
          `Cannot document ${link.from}: its link fills "${name}", which ${link.to} does not have`,
        );
      }
    }
  }
  // The error body that errorResponses refers to, once for every route.
  if (JSON.stringify(paths).includes(`"#/components/schemas/${ERROR_SCHEMA_NAME}"`)) {
    schemas[ERROR_SCHEMA_NAME] ??= ERROR_BODY_SCHEMA;
  }
  const securitySchemes = Object.fromEntries(
    Object.entries(options.securitySchemes).filter(([name]) => usedSchemes.has(name)),
  );
  const components = {
    ...(Object.keys(schemas).length === 0 ? {} : { schemas }),
    ...(Object.keys(securitySchemes).length === 0 ? {} : { securitySchemes }),
  };
  return {
    openapi: "3.1.0",
    info: options.info,
    jsonSchemaDialect: "https://spec.openapis.org/oas/3.1/dialect/base",
    ...(options.servers === undefined ? {} : { servers: options.servers }),
    tags,
    paths,
    ...(Object.keys(components).length === 0 ? {} : { components }),
  };
}

/**
 * A route's path as OpenAPI templates it: `/endpoints/:id` is `/endpoints/{id}`.
 * @param path the route's pattern
 * @returns the templated path
 */
export function openApiPath(path: string): string {
  return path.split("/").map((
    segment,
  ) => (segment.startsWith(":") ? `{${segment.slice(1)}}` : segment)).join("/");
}

function checkPathParameters(
  where: string,
  path: string,
  parameters: readonly ParameterDoc[],
): void {
  const inPath = path.split("/").filter((segment) => segment.startsWith(":")).map((segment) =>
    segment.slice(1)
  );
  const documented = parameters.filter((parameter) => parameter.in === "path").map((parameter) =>
    parameter.name
  );
  for (const name of inPath) {
    if (!documented.includes(name)) {
      throw new TypeError(`Cannot document ${where}: path parameter "${name}" has no doc`);
    }
  }
  for (const name of documented) {
    if (!inPath.includes(name)) {
      throw new TypeError(`Cannot document ${where}: the path has no parameter "${name}"`);
    }
  }
  const names = parameters.map((parameter) => `${parameter.in} ${parameter.name.toLowerCase()}`);
  if (new Set(names).size !== names.length) {
    throw new TypeError(`Cannot document ${where}: a parameter is documented twice`);
  }
}

function operation(doc: RouteDoc, service: string): Record<string, unknown> {
  return {
    operationId: doc.operationId,
    summary: doc.summary,
    ...(doc.description === undefined ? {} : { description: doc.description }),
    tags: doc.tags ?? [service],
    ...(doc.parameters === undefined || doc.parameters.length === 0 ? {} : {
      parameters: doc.parameters.map((parameter) => ({
        ...parameter,
        required: parameter.in === "path" ? true : parameter.required ?? false,
      })),
    }),
    ...(doc.requestBody === undefined ? {} : { requestBody: doc.requestBody }),
    responses: doc.responses,
    security: doc.security,
  };
}
