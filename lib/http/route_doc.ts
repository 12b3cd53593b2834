// What a route says about itself for the OpenAPI document: plain data that
// lives beside the route in its service's route table. The document
// (openApiDocument) is built from these, never written apart from the routes.

/** A JSON Schema (draft 2020-12, the dialect of OpenAPI 3.1), as plain data. */
export type JsonSchema = { readonly [keyword: string]: unknown };

/** A value a parameter or body may take, shown in the document (and sent by the tests). */
export type JsonValue = string | number | boolean | null | readonly JsonValue[] | {
  readonly [key: string]: JsonValue;
};

/** A parameter of a route: a path segment, a query option or a header. */
export interface ParameterDoc {
  /** As sent: `$filter`, `id` (for a path's `:id`), `Idempotency-Key`. */
  readonly name: string;
  readonly in: "path" | "query" | "header";
  readonly description: string;
  /** Whether a request must send it; path parameters always must. @default {false} */
  readonly required?: boolean;
  readonly schema: JsonSchema;
  /** A value that works, e.g. against the demo data: requests are built from it. */
  readonly example: JsonValue;
}

/** A body of one media type, with a working example. */
export interface MediaDoc {
  readonly schema: JsonSchema;
  readonly example?: JsonValue;
}

/** A request's body: its media types, each with a schema and a working example. */
export interface BodyDoc {
  readonly description?: string;
  readonly required: boolean;
  readonly content: Readonly<Record<string, MediaDoc>>;
}

/** A response header. */
export interface HeaderDoc {
  readonly description: string;
  readonly schema: JsonSchema;
  /** Whether every answer of the status carries it. @default {false} */
  readonly required?: boolean;
}

/**
 * How a value of one answer fills a parameter of another operation (an
 * OpenAPI link): `parameters` maps the other operation's parameter names to
 * runtime expressions such as `$response.body#/id`.
 */
export interface LinkDoc {
  readonly operationId: string;
  readonly parameters: Readonly<Record<string, string>>;
  readonly description?: string;
}

/** One status of a route's answers. */
export interface ResponseDoc {
  readonly description: string;
  readonly headers?: Readonly<Record<string, HeaderDoc>>;
  /** Bodies by media type (e.g. `application/json`); none for an empty answer. */
  readonly content?: Readonly<Record<string, MediaDoc>>;
  readonly links?: Readonly<Record<string, LinkDoc>>;
}

/**
 * The schemes a request may authenticate with: each requirement names
 * security schemes (of the document's `components.securitySchemes`) with the
 * scopes it needs; one requirement met is enough, and `{}` means none.
 */
export type SecurityRequirement = Readonly<Record<string, readonly string[]>>;

/** A security scheme of the document, as OpenAPI 3.1 writes it. */
export type SecuritySchemeDoc = {
  readonly type: "apiKey" | "http" | "oauth2" | "openIdConnect" | "mutualTLS";
  readonly [field: string]: unknown;
};

/** What a route tells the OpenAPI document about itself. */
export interface RouteDoc {
  /** Unique in the document, e.g. `listLocations`; links name operations by it. */
  readonly operationId: string;
  /** One line. */
  readonly summary: string;
  readonly description?: string;
  /** The groups it is listed under. @default the name of its service */
  readonly tags?: readonly string[];
  readonly parameters?: readonly ParameterDoc[];
  readonly requestBody?: BodyDoc;
  /** By status, e.g. `"200"`; error statuses usually from `errorResponses`. */
  readonly responses: Readonly<Record<string, ResponseDoc>>;
  /** How requests authenticate; `[]` for routes open to anyone. */
  readonly security: readonly SecurityRequirement[];
  /**
   * Schemas the route's schemas refer to as `#/components/schemas/<name>`;
   * routes that share a name share the schema.
   */
  readonly schemas?: Readonly<Record<string, JsonSchema>>;
}

/**
 * A reference to a shared schema, `#/components/schemas/<name>`, that a
 * route declares in its `schemas`.
 * @param name the schema's name
 * @returns the reference
 */
export function schemaRef(name: string): JsonSchema {
  return { $ref: `#/components/schemas/${name}` };
}
