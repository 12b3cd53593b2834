import {
  type ErrorCode,
  errorStatuses,
  type JsonSchema,
  type ParameterDoc,
  type ResponseDoc,
  type RouteDoc,
} from "../../http/mod.ts";
import {
  errorResponses as statusesResponses,
  schemaRef,
  type SecuritySchemeDoc,
} from "../../http/_internal.ts";
import { WATER_ERROR_STATUS } from "../error_status.ts";
import type { FilterSyntaxError, ODataErrorCode } from "../../odata/mod.ts";
import type { CsvSyntaxError, WaterErrorCode } from "../errors.ts";
import { describeQueryOptions } from "../../odata/_internal.ts";
import { type FilterFieldType } from "../../odata/mod.ts";
import { type CollectionName, COLLECTIONS, type CollectionSchema } from "../fields.ts";

/** A code the service's answers may carry: its own, or one of lib/http and below. */
type DocumentedCode =
  | WaterErrorCode
  | CsvSyntaxError["code"]
  | ODataErrorCode
  | FilterSyntaxError["code"]
  | ErrorCode;

/** The statuses of the codes the service documents. */
const STATUSES = errorStatuses(WATER_ERROR_STATUS);

/**
 * The error answers of a route: one per status its codes have.
 * @param codes the codes the route may answer with
 * @returns the responses, by status
 */
function errorResponses(codes: readonly DocumentedCode[]): Record<string, ResponseDoc> {
  return statusesResponses(codes, STATUSES);
}

// The water API's routes as the OpenAPI document describes them: the row
// schemas come from the collection table (fields.ts), the query options from
// the OData reader's own list, the errors from the error table. The routes
// (create_water_service.ts, create_datasets_admin.ts) carry these docs.

/** The security schemes the water API's routes name. */
export const WATER_SECURITY_SCHEMES: Readonly<Record<string, SecuritySchemeDoc>> = {
  apiKey: {
    type: "apiKey",
    in: "header",
    name: "x-api-key",
    description: "A key of `API_KEYS` or `API_KEYS_FILE`: missing 401, unknown 403. " +
      "`GET` requests from an origin of `CORS_ORIGINS` may leave it out.",
  },
  adminBearer: {
    type: "http",
    scheme: "bearer",
    description: "A key of `ADMIN_API_KEYS`, as `Authorization: Bearer <key>`",
  },
  adminApiKey: {
    type: "apiKey",
    in: "header",
    name: "x-api-key",
    description: "A key of `ADMIN_API_KEYS`, in `x-api-key`",
  },
};

/** The JSON Schema of each filter type as the rows write it. */
const VALUE_SCHEMAS: Readonly<Record<FilterFieldType, JsonSchema>> = {
  string: { type: "string" },
  number: { type: "number" },
  integer: { type: "integer" },
  date: { type: "string", format: "date" },
  datetime: { type: "string", format: "date-time" },
  guid: { type: "string", format: "uuid" },
  boolean: { type: "boolean" },
};

/** The schema name of one row of each collection. */
const ROW_NAMES: Readonly<Record<CollectionName, string>> = {
  Metadata: "Dataset",
  Locations: "Location",
  Observations: "Observation",
  Records: "Record",
};

/** Examples of each collection's options that answer rows of the demo data. */
const EXAMPLES: Readonly<
  Record<
    CollectionName,
    {
      readonly filter: string;
      readonly select: string;
      readonly orderby: string;
      readonly skiptoken: string;
    }
  >
> = {
  Metadata: {
    filter: "RegionId eq 'hub.pacific'",
    select: "Id,DOI,DatasetName,Citation,Licence",
    orderby: "DatasetName desc",
    skiptoken: "Id:21f6d1aa-00f8-4ceb-8e09-cd9e9efb77db",
  },
  Locations: {
    filter: "CharacteristicName eq 'pH'",
    select: "Id,Name,Latitude,Longitude",
    orderby: "Name",
    skiptoken: "Id:1",
  },
  Observations: {
    filter: "CharacteristicName eq 'pH' and ResultValue gt 7",
    select: "Id,LocationId,ActivityStartDate,CharacteristicName,ResultValue,ResultUnit",
    orderby: "ResultValue desc",
    skiptoken: "Id:1",
  },
  Records: {
    filter: "MonitoringLocationID eq 'FVS-001' and ActivityStartDate ge 2015-01-01",
    select: "Id,MonitoringLocationID,ActivityStartDate,CharacteristicName,ResultValue",
    orderby: "ActivityStartDate desc",
    skiptoken: "Id:1",
  },
};

/** What every request of the API may be refused for: its key, the rate limits, and a limiter that cannot be reached. */
const ACCESS_ERRORS: readonly DocumentedCode[] = [
  "ERR_HTTP_UNAUTHORIZED",
  "ERR_HTTP_FORBIDDEN",
  "ERR_HTTP_ORIGIN_NOT_ALLOWED",
  "ERR_HTTP_RATE_LIMITED",
  "ERR_HTTP_UNAVAILABLE",
];

/** What a query of a collection may be refused for. */
const QUERY_ERRORS: readonly DocumentedCode[] = [
  "ERR_HTTP_MALFORMED_URL",
  "ERR_ODATA_SYNTAX",
  "ERR_ODATA_UNKNOWN_FIELD",
  "ERR_ODATA_TYPE",
  "ERR_ODATA_QUERY_OPTION",
  "ERR_ODATA_UNSUPPORTED",
  "ERR_WATER_INVALID_ORDER",
  "ERR_HTTP_TIMEOUT",
  ...ACCESS_ERRORS,
];

const ODATA_VERSION = {
  "OData-Version": { description: "Always 4.0", schema: { type: "string", const: "4.0" } },
} as const;
const SECURITY = [{ apiKey: [] }] as const;

/**
 * The schema of one row of a collection: each field it can select, typed as
 * the rows write it (`null` for an empty value, except the key; lists never
 * null). A row holds the selected fields only, so none is required; a row
 * holds no other field.
 * @param collection the collection
 * @returns the schema
 */
export function rowSchema(collection: CollectionSchema): JsonSchema {
  const properties: Record<string, JsonSchema> = {};
  for (const field of collection.select) {
    const value = VALUE_SCHEMAS[field.source.type];
    properties[field.name] = field.source.multiValued === true
      ? { type: "array", items: value }
      : field.name === "Id"
      ? value
      : { ...value, type: [value["type"], "null"] };
  }
  return { type: "object", description: `A row of /${collection.name}`, properties };
}

/** Every collection's row schema, shared by the routes. */
function rowSchemas(): Record<string, JsonSchema> {
  return Object.fromEntries(
    [...COLLECTIONS.values()].map((
      collection,
    ) => [ROW_NAMES[collection.name], rowSchema(collection)]),
  );
}

function queryParameters(collection: CollectionSchema, forCount: boolean): ParameterDoc[] {
  const examples = EXAMPLES[collection.name];
  const fields = [...collection.filter.keys()].join(", ");
  const shown = collection.select.map((field) => field.name).join(", ");
  const byName: Readonly<
    Record<string, { readonly example: string | number | boolean; readonly more?: string }>
  > = {
    $filter: { example: examples.filter, more: `. Fields: ${fields}` },
    $select: { example: examples.select, more: `. Fields: ${shown}` },
    $top: { example: 2 },
    $skiptoken: { example: examples.skiptoken },
    $count: { example: true },
    $format: { example: "csv" },
    $orderby: { example: examples.orderby },
    $skip: { example: 1 },
    $apply: collection.level === "location"
      ? {
        example:
          "filter(CharacteristicName eq 'pH')/groupby((DOI,MonitoringLocationType), aggregate($count as Locations))",
        more:
          ". It must group or aggregate. Groupable: the locations' own fields and their dataset's (not RegionId, nor an observation's: filter by them); summable: the coordinates and measures",
      }
      : {
        example:
          "filter(CharacteristicName eq 'pH')/groupby((LocationId), aggregate(ResultValue with average as Mean, $count as N))",
        more:
          ". Groupable: every filterable field but RegionId (filter by region instead); summable: the numbers",
      },
  };
  // A count reads the filter (and the $apply, whose rows it counts) only; /Metadata takes no $apply.
  const applies = collection.level !== "dataset";
  const options = describeQueryOptions().filter((option) =>
    (option.name !== "$apply" || applies) &&
    (!forCount || option.name === "$filter" || option.name === "$apply")
  );
  return options.map((option) => {
    const doc = byName[option.name];
    if (doc === undefined) {
      throw new TypeError(`Cannot document query option ${option.name}: it has no example`);
    }
    return {
      name: option.name,
      in: "query",
      description: `${option.description}${doc.more ?? ""}`,
      schema: option.schema,
      example: doc.example,
    };
  });
}

/**
 * The doc of a collection's route, `GET <base>/<Collection>`.
 * @param collection the collection
 * @returns the doc
 */
export function collectionDoc(collection: CollectionSchema): RouteDoc {
  const row = ROW_NAMES[collection.name];
  const page: JsonSchema = {
    type: "object",
    required: ["@odata.context", "value"],
    additionalProperties: false,
    properties: {
      "@odata.context": { type: "string", format: "uri" },
      value: {
        type: "array",
        items: { $ref: `#/components/schemas/${row}`, unevaluatedProperties: false },
      },
      "@odata.nextLink": {
        type: "string",
        format: "uri",
        description: "The next page; absent on the last",
      },
    },
  };
  // The rows of an aggregating $apply: its groups and aliases, which are not entities of the set.
  const aggregated: JsonSchema = {
    type: "object",
    required: ["@odata.context", "value"],
    additionalProperties: false,
    properties: {
      "@odata.context": { type: "string", format: "uri" },
      value: {
        type: "array",
        items: {
          type: "object",
          required: ["@odata.id"],
          properties: { "@odata.id": { type: "null" } },
        },
      },
      "@odata.nextLink": { type: "string", format: "uri" },
    },
  };
  const count: JsonSchema = {
    type: "object",
    required: ["@odata.count", "value"],
    additionalProperties: false,
    properties: {
      "@odata.count": { type: "integer", minimum: 0 },
      value: { type: "integer", minimum: 0 },
    },
    description: "With `$count=true`: the number of matching rows, twice (DataStream's shape)",
  };
  return {
    operationId: `list${collection.name}`,
    summary: `Rows of ${collection.name}, a page at a time`,
    description:
      "Rows in ascending `Id` (or `$orderby`); a page with more after it carries `@odata.nextLink` and the same " +
      "URL in `Link`. `$format=csv` or `Accept: text/csv` answers CSV (streamed whole without `$top`).",
    parameters: queryParameters(collection, false),
    responses: {
      "200": {
        description: "A page of rows, their count, or CSV",
        headers: {
          ...ODATA_VERSION,
          Link: {
            description: '`<next page>; rel="next"` when there is one',
            schema: { type: "string" },
          },
        },
        content: {
          "application/json": {
            schema: collection.level !== "dataset"
              ? { anyOf: [page, count, aggregated] }
              : { oneOf: [page, count] },
          },
          "text/csv": {
            schema: { type: "string", description: "A header record, then a record a row" },
          },
        },
      },
      ...errorResponses([
        ...QUERY_ERRORS,
        "ERR_WATER_TOKEN_GONE",
        "ERR_WATER_RESPONSE_TOO_LARGE",
        ...(collection.level !== "dataset" ? ["ERR_WATER_TOO_MANY_GROUPS" as const] : []),
      ]),
    },
    security: SECURITY,
    schemas: rowSchemas(),
  };
}

/**
 * The doc of a collection's count, `GET <base>/<Collection>/$count`.
 * @param collection the collection
 * @returns the doc
 */
export function countDoc(collection: CollectionSchema): RouteDoc {
  return {
    operationId: `count${collection.name}`,
    summary: `The number of rows of ${collection.name}, as plain text`,
    parameters: queryParameters(collection, true),
    responses: {
      "200": {
        description: "The count",
        headers: ODATA_VERSION,
        content: { "text/plain": { schema: { type: "string", pattern: "^[0-9]+$" } } },
      },
      ...errorResponses(QUERY_ERRORS),
    },
    security: SECURITY,
  };
}

const COLLECTION_NAMES = [...COLLECTIONS.keys()];

function queryOption(name: string): { readonly name: string; readonly schema: JsonSchema } {
  const option = describeQueryOptions().find((candidate) => candidate.name === name);
  if (option === undefined) {
    throw new TypeError(`Cannot document query option ${name}: the reader does not know it`);
  }
  return { name: option.name, schema: option.schema };
}

/** The water API's other routes' docs. */
export const WATER_DOCS: Readonly<
  Record<"service" | "metadata" | "entity" | "unknownCount", RouteDoc>
> = {
  service: {
    operationId: "getServiceDocument",
    summary: "The OData service document: the four entity sets",
    responses: {
      "200": {
        description: "The entity sets",
        headers: ODATA_VERSION,
        content: {
          "application/json": {
            schema: {
              type: "object",
              required: ["@odata.context", "value"],
              additionalProperties: false,
              properties: {
                "@odata.context": { type: "string", format: "uri" },
                value: {
                  type: "array",
                  items: {
                    type: "object",
                    required: ["name", "kind", "url"],
                    additionalProperties: false,
                    properties: {
                      name: { enum: COLLECTION_NAMES },
                      kind: { const: "EntitySet" },
                      url: { enum: COLLECTION_NAMES },
                    },
                  },
                },
              },
            },
          },
        },
      },
      ...errorResponses(ACCESS_ERRORS),
    },
    security: SECURITY,
  },
  metadata: {
    operationId: "getMetadataDocument",
    summary: "CSDL XML (OData 4.0) of the four entity sets: their properties, types and keys",
    responses: {
      "200": {
        description: "The CSDL document",
        headers: ODATA_VERSION,
        content: { "application/xml": { schema: { type: "string" } } },
      },
      ...errorResponses(ACCESS_ERRORS),
    },
    security: SECURITY,
  },
  entity: {
    operationId: "getEntity",
    summary: "One entity by its key, e.g. `Locations(1)` or `Metadata(<uuid>)`",
    description:
      "The row itself with its `@odata.context`; `$select` applies. The key is an integer, a UUID for `Metadata`.",
    parameters: [
      {
        name: "collection",
        in: "path",
        description: "The collection and the key in parentheses",
        schema: { type: "string", pattern: `^(${COLLECTION_NAMES.join("|")})\\((.+)\\)$` },
        example: "Locations(1)",
      },
      {
        ...queryOption("$select"),
        in: "query",
        description: "The fields to answer with",
        example: "Id,Name",
      },
    ],
    responses: {
      "200": {
        description: "The entity",
        headers: ODATA_VERSION,
        content: {
          "application/json": {
            schema: {
              oneOf: [...COLLECTIONS.values()].map((collection) => ({
                $ref: `#/components/schemas/${ROW_NAMES[collection.name]}`,
                required: ["@odata.context"],
                properties: {
                  "@odata.context": {
                    type: "string",
                    pattern: `#${collection.name}(\\(.*\\))?/\\$entity$`,
                  },
                },
                unevaluatedProperties: false,
              })),
            },
          },
        },
      },
      ...errorResponses([...QUERY_ERRORS, "ERR_WATER_NOT_FOUND"]),
    },
    security: SECURITY,
    schemas: rowSchemas(),
  },
  unknownCount: {
    operationId: "countUnknownCollection",
    summary: "The count of a collection that does not exist: always 404",
    parameters: [{
      name: "collection",
      in: "path",
      description: "A name that is not a collection",
      schema: { type: "string" },
      example: "Rivers",
    }],
    responses: errorResponses([...ACCESS_ERRORS, "ERR_WATER_NOT_FOUND"]),
    security: SECURITY,
  },
};

const REPORT: JsonSchema = {
  type: "object",
  required: ["datasets", "removed", "failures", "locations", "observations"],
  additionalProperties: false,
  properties: {
    reloading: {
      type: "boolean",
      description: "Whether a reload runs now (the last load's report only)",
    },
    datasets: {
      type: "array",
      items: {
        type: "object",
        required: ["folder", "doi", "change", "locations", "observations", "skippedRows"],
        additionalProperties: false,
        properties: {
          folder: { type: "string" },
          doi: { type: "string" },
          change: { enum: ["added", "replaced", "unchanged", "kept"] },
          locations: { type: "integer", minimum: 0 },
          observations: { type: "integer", minimum: 0 },
          skippedRows: { type: "integer", minimum: 0 },
        },
      },
    },
    removed: {
      type: "array",
      items: {
        type: "object",
        required: ["folder", "id", "doi"],
        additionalProperties: false,
        properties: {
          folder: { type: "string" },
          id: { type: "string", format: "uuid" },
          doi: { type: "string" },
        },
      },
    },
    failures: {
      type: "array",
      items: {
        type: "object",
        required: ["folder", "file", "line", "column", "message", "kept"],
        additionalProperties: false,
        properties: {
          folder: { type: "string" },
          file: { type: "string" },
          line: { type: "integer", minimum: 0 },
          column: { type: "integer", minimum: 0 },
          message: { type: "string" },
          kept: { type: "boolean", description: "Whether the version loaded before serves on" },
        },
      },
    },
    locations: { type: "integer", minimum: 0 },
    observations: { type: "integer", minimum: 0 },
  },
};

const ADMIN_SECURITY = [{ adminBearer: [] }, { adminApiKey: [] }] as const;
const NO_STORE = {
  "Cache-Control": { description: "`no-store`", schema: { type: "string" } },
} as const;

function reportResponse(description: string): ResponseDoc {
  return {
    description,
    headers: NO_STORE,
    content: { "application/json": { schema: schemaRef("ReloadReport") } },
  };
}

/** The datasets admin routes' docs. */
export const ADMIN_DOCS: Readonly<Record<"report" | "reload", RouteDoc>> = {
  report: {
    operationId: "getDatasetsReport",
    summary: "What the last load of `DATA_DIR` served, skipped and could not load",
    responses: {
      "200": reportResponse("The last load's report"),
      ...errorResponses(["ERR_HTTP_UNAUTHORIZED", "ERR_HTTP_FORBIDDEN"]),
    },
    security: ADMIN_SECURITY,
    schemas: { ReloadReport: REPORT },
  },
  reload: {
    operationId: "reloadDatasets",
    summary: "Loads `DATA_DIR` again and answers once the new datasets serve",
    responses: {
      "200": reportResponse("The reload's report"),
      ...errorResponses(["ERR_HTTP_UNAUTHORIZED", "ERR_HTTP_FORBIDDEN"]),
    },
    security: ADMIN_SECURITY,
    schemas: { ReloadReport: REPORT },
  },
};
