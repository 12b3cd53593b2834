// One cohesive structure, over 600 lines on purpose: the relay's OpenAPI
// description, one table of its routes (each with its parameters, bodies,
// answers and links) and the JSON schemas they share, read as a whole as the
// document it becomes.
import {
  type ErrorCode,
  errorStatuses,
  type JsonSchema,
  type ParameterDoc,
  type ResponseDoc,
  type RouteDoc,
} from "../http/mod.ts";
import {
  errorResponses as statusesResponses,
  schemaRef,
  type SecuritySchemeDoc,
} from "../http/_internal.ts";
import { RELAY_ERROR_STATUS } from "./error_status.ts";
import type { RelayErrorCode } from "./errors.ts";
import { EVENT_NAME, MAX_EVENT_LENGTH } from "./event_patterns.ts";
import { DEAD_LETTER_LIMIT, DELIVERY_STATUSES, MESSAGE_LIMIT } from "./manage_relay.ts";
import type { AttemptOutcome, JobState } from "./queue.ts";
import {
  ENDPOINT_FIELDS,
  type EndpointInput,
  MAX_RATE,
  MAX_URL_LENGTH,
  MIN_RATE,
  RELAY_ID,
  UPDATE_FIELDS,
} from "./tenants.ts";

/** A code the service's answers may carry: its own, or one of lib/http and below. */
type DocumentedCode = RelayErrorCode | ErrorCode;

/** The statuses of the codes the service documents. */
const STATUSES = errorStatuses(RELAY_ERROR_STATUS);

/**
 * The error answers of a route: one per status its codes have.
 * @param codes the codes the route may answer with
 * @returns the responses, by status
 */
function errorResponses(codes: readonly DocumentedCode[]): Record<string, ResponseDoc> {
  return statusesResponses(codes, STATUSES);
}

// The relay's routes as the OpenAPI document describes them: event names,
// endpoint fields and their limits, query limits and states come from the
// tables intake and the management API check requests with. The routes
// (create_relay_service.ts) carry these docs.

/** The security schemes of the relay: a tenant's API key, as a bearer token or in `x-api-key`. */
export const RELAY_SECURITY_SCHEMES: Readonly<Record<string, SecuritySchemeDoc>> = {
  tenantBearer: {
    type: "http",
    scheme: "bearer",
    description:
      "A tenant's API key (`TENANTS_FILE`), as `Authorization: Bearer <key>`; missing or unknown: 401",
  },
  tenantApiKey: {
    type: "apiKey",
    in: "header",
    name: "x-api-key",
    description: "A tenant's API key, in `x-api-key`",
  },
};

const SECURITY = [{ tenantBearer: [] }, { tenantApiKey: [] }] as const;

/** How an attempt ends and where a job is: one entry each. */
const OUTCOMES: Readonly<Record<AttemptOutcome, true>> = {
  success: true,
  failure: true,
  timeout: true,
  blocked: true,
  gone: true,
  throttled: true,
};
const STATES: Readonly<Record<JobState, true>> = {
  ready: true,
  delayed: true,
  leased: true,
  delivered: true,
  dead: true,
};

const TIME: JsonSchema = { type: "string", format: "date-time" };
const ID: JsonSchema = { type: "string", pattern: RELAY_ID.source };
const SECRET: JsonSchema = {
  type: "string",
  pattern: "^whsec_[A-Za-z0-9+/]+={0,2}$",
  description: "`whsec_` and the base64 of 24 to 64 random bytes",
};
const EVENT: JsonSchema = {
  type: "string",
  maxLength: MAX_EVENT_LENGTH,
  pattern: EVENT_NAME.source,
};

/** Each field an endpoint may be given, as the tenant directory checks it. */
const ENDPOINT_INPUT: Readonly<Record<keyof EndpointInput, JsonSchema>> = {
  id: { ...ID, description: "Made (`ep_…`) when not given" },
  url: {
    type: "string",
    format: "uri",
    maxLength: MAX_URL_LENGTH,
    description: "http or https, without a user, password or fragment",
  },
  events: {
    type: "array",
    items: { type: "string", maxLength: MAX_EVENT_LENGTH },
    description:
      "Event patterns: `*` for all, a name (`invoice.paid`), or a prefix ending in `.*` (`invoice.*`)",
  },
  secret: { ...SECRET, description: "The signing secret; made when not given" },
  public_key: {
    type: ["string", "null"],
    description: "An RSA public key (PEM) to encrypt deliveries for; null removes it",
  },
  rate_limit_per_second: {
    type: ["number", "null"],
    minimum: MIN_RATE,
    maximum: MAX_RATE,
    description: "Deliveries per second at most; null for no limit",
  },
  enabled: { type: "boolean" },
};

function endpointInput(
  fields: ReadonlySet<keyof EndpointInput>,
  required: readonly string[],
): JsonSchema {
  return {
    type: "object",
    required,
    additionalProperties: false,
    properties: Object.fromEntries([...fields].map((name) => [name, ENDPOINT_INPUT[name]])),
  };
}

const ENDPOINT_REQUIRED = [
  "id",
  "url",
  "events",
  "enabled",
  "disabled_reason",
  "rate_limit_per_second",
  "encryption_key_id",
  "created_at",
  "updated_at",
];
const ENDPOINT_PROPERTIES: Readonly<Record<string, JsonSchema>> = {
  id: ID,
  url: { type: "string", format: "uri" },
  events: { type: "array", items: { type: "string" } },
  enabled: { type: "boolean" },
  disabled_reason: {
    type: ["string", "null"],
    description: "Why it is disabled, e.g. a 410 from the receiver",
  },
  rate_limit_per_second: { type: ["number", "null"] },
  encryption_key_id: { type: ["string", "null"], description: "The key id of its RSA public key" },
  created_at: TIME,
  updated_at: TIME,
};
const ENDPOINT: JsonSchema = {
  type: "object",
  required: ENDPOINT_REQUIRED,
  additionalProperties: false,
  properties: ENDPOINT_PROPERTIES,
};

const JOB: JsonSchema = {
  type: "object",
  description: "One delivery of a message, to one endpoint",
  required: ["id", "message_id", "endpoint_id", "event", "state", "next_attempt_at", "attempts"],
  additionalProperties: false,
  properties: {
    id: { type: "string" },
    message_id: { type: "string" },
    endpoint_id: ID,
    event: { type: "string" },
    state: { enum: Object.keys(STATES) },
    reason: { type: "string", description: "Why it is a dead letter" },
    next_attempt_at: { type: ["string", "null"], format: "date-time" },
    attempts: {
      type: "array",
      items: {
        type: "object",
        required: ["at", "outcome", "status", "latency_ms", "error"],
        additionalProperties: false,
        properties: {
          at: TIME,
          outcome: { enum: Object.keys(OUTCOMES) },
          status: {
            type: ["integer", "null"],
            description: "The receiver's status; null without an answer",
          },
          latency_ms: { type: "number", minimum: 0 },
          error: { type: ["string", "null"] },
        },
      },
    },
  },
};

const MESSAGE: JsonSchema = {
  type: "object",
  required: ["id", "event", "created_at", "deliveries"],
  additionalProperties: false,
  properties: {
    id: { type: "string" },
    event: { type: "string" },
    created_at: TIME,
    deliveries: { type: "array", items: schemaRef("WebhookDelivery") },
  },
};

const SECRETS: JsonSchema = {
  type: "object",
  required: ["secrets"],
  additionalProperties: false,
  properties: {
    secrets: {
      type: "array",
      description: "The secrets that sign now, newest first",
      items: {
        type: "object",
        required: ["secret", "expires_at"],
        additionalProperties: false,
        properties: {
          secret: SECRET,
          expires_at: { type: ["string", "null"], format: "date-time" },
        },
      },
    },
  },
};

const SCHEMAS: Readonly<Record<string, JsonSchema>> = {
  WebhookEndpoint: ENDPOINT,
  WebhookDelivery: JOB,
  WebhookMessage: MESSAGE,
  WebhookSecrets: SECRETS,
};

/** What every route may answer besides its own: no usable key, a backend that cannot be reached. */
const ACCESS: readonly DocumentedCode[] = [
  "ERR_HTTP_UNAUTHORIZED",
  "ERR_RELAY_QUEUE_UNAVAILABLE",
  "ERR_STORAGE_UNAVAILABLE",
];
const JSON_BODY: readonly DocumentedCode[] = [
  "ERR_HTTP_INVALID_JSON",
  "ERR_HTTP_JSON_TOO_DEEP",
  "ERR_HTTP_BODY_TOO_LARGE",
  "ERR_HTTP_UNSUPPORTED_MEDIA_TYPE",
];

function json(
  description: string,
  schema: JsonSchema,
  extra: Partial<ResponseDoc> = {},
): ResponseDoc {
  return { description, ...extra, content: { "application/json": { schema } } };
}

const ENDPOINT_ID: ParameterDoc = {
  name: "id",
  in: "path",
  description: "The endpoint's id",
  schema: ID,
  example: "orders",
};
const ENDPOINT_LINKS = {
  read: { operationId: "getEndpoint", parameters: { id: "$response.body#/id" } },
  change: { operationId: "updateEndpoint", parameters: { id: "$response.body#/id" } },
  secret: { operationId: "getEndpointSecrets", parameters: { id: "$response.body#/id" } },
  rotate: { operationId: "rotateEndpointSecret", parameters: { id: "$response.body#/id" } },
  delete: { operationId: "deleteEndpoint", parameters: { id: "$response.body#/id" } },
} as const;
const NO_STORE = {
  "Cache-Control": { description: "`no-store`", schema: { type: "string" } },
} as const;
const REPLAYED = json("Queued again", {
  type: "object",
  required: ["replayed"],
  additionalProperties: false,
  properties: { replayed: { type: "integer", minimum: 0 } },
});
const OPTIONAL_ENDPOINT_FILTER: ParameterDoc = {
  name: "endpoint",
  in: "query",
  description: "Only this endpoint's",
  schema: ID,
  example: "orders",
};

/** The relay's routes' docs. */
export const RELAY_DOCS: Readonly<
  Record<
    | "intake"
    | "listEndpoints"
    | "createEndpoint"
    | "getEndpoint"
    | "updateEndpoint"
    | "deleteEndpoint"
    | "secrets"
    | "rotateSecret"
    | "messages"
    | "stats"
    | "message"
    | "deadLetters"
    | "replayAll"
    | "replayOne",
    RouteDoc
  >
> = {
  intake: {
    operationId: "sendWebhook",
    summary:
      "Accepts a webhook: one job per endpoint subscribed to its event, queued durably before the answer",
    parameters: [{
      name: "Idempotency-Key",
      in: "header",
      description:
        "1 to 255 visible ASCII characters: the same key within 24 hours gives the first answer again (409 with another body)",
      schema: { type: "string", pattern: "^[\\x21-\\x7e]{1,255}$" },
      example: "order-1042-created",
    }],
    requestBody: {
      required: true,
      content: {
        "application/json": {
          schema: {
            type: "object",
            required: ["event", "data"],
            additionalProperties: false,
            properties: {
              event: EVENT,
              data: {
                type: "object",
                description: "Delivered as sent, every digit of its numbers kept",
              },
            },
          },
          example: { event: "order.created", data: { id: 1042, total: 99.5 } },
        },
      },
    },
    responses: {
      "202": json("Queued", {
        type: "object",
        required: ["id", "event", "endpoints"],
        additionalProperties: false,
        properties: {
          id: { type: "string", pattern: "^msg_" },
          event: { type: "string" },
          endpoints: { type: "array", items: ID },
        },
      }, {
        headers: {
          Location: { description: "The message's status", schema: { type: "string" } },
          "Idempotent-Replayed": {
            description: "`true` when this is the first answer again",
            schema: { type: "string" },
          },
        },
        links: { message: { operationId: "getMessage", parameters: { id: "$response.body#/id" } } },
      }),
      ...errorResponses([
        ...ACCESS,
        ...JSON_BODY,
        "ERR_RELAY_INVALID_WEBHOOK",
        "ERR_RELAY_IDEMPOTENCY_CONFLICT",
        "ERR_RELAY_QUEUE_FULL",
      ]),
    },
    security: SECURITY,
  },
  listEndpoints: {
    operationId: "listEndpoints",
    summary: "The tenant's endpoints (their secrets are not listed)",
    responses: {
      "200": json("The endpoints", {
        type: "object",
        required: ["data"],
        additionalProperties: false,
        properties: { data: { type: "array", items: schemaRef("WebhookEndpoint") } },
      }),
      ...errorResponses(ACCESS),
    },
    security: SECURITY,
    schemas: SCHEMAS,
  },
  createEndpoint: {
    operationId: "createEndpoint",
    summary: "Creates an endpoint",
    requestBody: {
      required: true,
      content: {
        "application/json": {
          schema: endpointInput(ENDPOINT_FIELDS, ["url", "events"]),
          example: { url: "https://example.com/webhooks/orders", events: ["order.*"] },
        },
      },
    },
    responses: {
      "201": json("The endpoint, with its signing secret", {
        type: "object",
        required: [...ENDPOINT_REQUIRED, "secret"],
        additionalProperties: false,
        properties: { ...ENDPOINT_PROPERTIES, secret: SECRET },
      }, {
        headers: { Location: { description: "The endpoint", schema: { type: "string" } } },
        links: ENDPOINT_LINKS,
      }),
      ...errorResponses([
        ...ACCESS,
        ...JSON_BODY,
        "ERR_RELAY_INVALID_ENDPOINT",
        "ERR_RELAY_ENDPOINT_EXISTS",
      ]),
    },
    security: SECURITY,
    schemas: SCHEMAS,
  },
  getEndpoint: {
    operationId: "getEndpoint",
    summary: "An endpoint",
    parameters: [ENDPOINT_ID],
    responses: {
      "200": json("The endpoint", schemaRef("WebhookEndpoint")),
      ...errorResponses([...ACCESS, "ERR_RELAY_UNKNOWN_ENDPOINT"]),
    },
    security: SECURITY,
    schemas: SCHEMAS,
  },
  updateEndpoint: {
    operationId: "updateEndpoint",
    summary: "Changes an endpoint: the fields given",
    parameters: [ENDPOINT_ID],
    requestBody: {
      required: true,
      content: {
        "application/json": {
          schema: endpointInput(UPDATE_FIELDS, []),
          example: { events: ["order.*", "invoice.paid"], rate_limit_per_second: 10 },
        },
      },
    },
    responses: {
      "200": json("The endpoint as changed", schemaRef("WebhookEndpoint")),
      ...errorResponses([
        ...ACCESS,
        ...JSON_BODY,
        "ERR_RELAY_INVALID_ENDPOINT",
        "ERR_RELAY_UNKNOWN_ENDPOINT",
      ]),
    },
    security: SECURITY,
    schemas: SCHEMAS,
  },
  deleteEndpoint: {
    operationId: "deleteEndpoint",
    summary: "Deletes an endpoint",
    parameters: [ENDPOINT_ID],
    responses: {
      "204": { description: "Deleted" },
      ...errorResponses([...ACCESS, "ERR_RELAY_UNKNOWN_ENDPOINT"]),
    },
    security: SECURITY,
  },
  secrets: {
    operationId: "getEndpointSecrets",
    summary: "The secrets that sign an endpoint's deliveries now",
    parameters: [ENDPOINT_ID],
    responses: {
      "200": json("The secrets", schemaRef("WebhookSecrets"), { headers: NO_STORE }),
      ...errorResponses([...ACCESS, "ERR_RELAY_UNKNOWN_ENDPOINT"]),
    },
    security: SECURITY,
    schemas: SCHEMAS,
  },
  rotateSecret: {
    operationId: "rotateEndpointSecret",
    summary:
      "A new signing secret; the old one signs alongside until SECRET_ROTATION_OVERLAP_SECONDS pass",
    parameters: [ENDPOINT_ID],
    requestBody: {
      required: false,
      content: {
        "application/json": {
          schema: { type: "object", additionalProperties: false, properties: { secret: SECRET } },
          example: {},
        },
      },
    },
    responses: {
      "200": json("The secrets", schemaRef("WebhookSecrets"), { headers: NO_STORE }),
      ...errorResponses([
        ...ACCESS,
        ...JSON_BODY,
        "ERR_RELAY_INVALID_ENDPOINT",
        "ERR_RELAY_UNKNOWN_ENDPOINT",
      ]),
    },
    security: SECURITY,
    schemas: SCHEMAS,
  },
  messages: {
    operationId: "listMessages",
    summary: "The message log, newest first, a page at a time",
    parameters: [
      {
        name: "event",
        in: "query",
        description: "Only messages of this event",
        schema: { type: "string" },
        example: "order.created",
      },
      {
        name: "status",
        in: "query",
        description:
          "Only messages with a delivery in this status (`pending`: waiting for an attempt or a retry)",
        schema: { type: "string", enum: [...DELIVERY_STATUSES] },
        example: "pending",
      },
      { ...OPTIONAL_ENDPOINT_FILTER, description: "Only this endpoint's deliveries" },
      {
        name: "since",
        in: "query",
        description: "Created at or after this time",
        schema: TIME,
        example: "2026-01-01T00:00:00Z",
      },
      {
        name: "until",
        in: "query",
        description: "Created before this time",
        schema: TIME,
        example: "2099-01-01T00:00:00Z",
      },
      {
        name: "limit",
        in: "query",
        description:
          `Messages at most, 1 to ${MESSAGE_LIMIT.max} (${MESSAGE_LIMIT.default} by default)`,
        schema: { type: "integer", minimum: 1, maximum: MESSAGE_LIMIT.max },
        example: 5,
      },
      {
        name: "cursor",
        in: "query",
        description: "The `next_cursor` of the page before",
        schema: { type: "string" },
        example: "MTc2NDAwMDAwMDAwMC5tc2dfMDFK",
      },
    ],
    responses: {
      "200": json("A page of messages", {
        type: "object",
        required: ["data", "next_cursor"],
        additionalProperties: false,
        properties: {
          data: { type: "array", items: schemaRef("WebhookMessage") },
          next_cursor: {
            type: ["string", "null"],
            description: "The next page's cursor; null on the last",
          },
        },
      }),
      ...errorResponses([...ACCESS, "ERR_HTTP_MALFORMED_URL", "ERR_HTTP_BAD_REQUEST"]),
    },
    security: SECURITY,
    schemas: SCHEMAS,
  },
  stats: {
    operationId: "getDeliveryStats",
    summary:
      "Delivery attempts of each endpoint of the tenant, counted in 5-minute buckets over the last 24 hours",
    parameters: [{
      name: "since",
      in: "query",
      description: "From this time, within the last 24 hours (24 hours ago by default)",
      schema: TIME,
      example: "2026-11-24T00:00:00Z",
    }],
    responses: {
      "200": json("The counts", {
        type: "object",
        required: ["since", "data"],
        additionalProperties: false,
        properties: {
          since: TIME,
          data: {
            type: "array",
            items: {
              type: "object",
              required: ["endpoint_id", "attempts", "successes", "failures", "success_rate"],
              additionalProperties: false,
              properties: {
                endpoint_id: ID,
                attempts: { type: "integer", minimum: 0 },
                successes: { type: "integer", minimum: 0 },
                failures: { type: "integer", minimum: 0 },
                success_rate: {
                  type: ["number", "null"],
                  minimum: 0,
                  maximum: 1,
                  description: "null without attempts",
                },
              },
            },
          },
        },
      }),
      ...errorResponses([...ACCESS, "ERR_HTTP_MALFORMED_URL", "ERR_HTTP_BAD_REQUEST"]),
    },
    security: SECURITY,
  },
  message: {
    operationId: "getMessage",
    summary: "A message with its deliveries and their attempts",
    parameters: [{
      name: "id",
      in: "path",
      description: "The message's id (`msg_…`)",
      schema: { type: "string" },
      example: "msg_01JDQ4Z8X2M3N4P5Q6R7S8T9V0",
    }],
    responses: {
      "200": json("The message", schemaRef("WebhookMessage")),
      ...errorResponses([...ACCESS, "ERR_RELAY_UNKNOWN_MESSAGE"]),
    },
    security: SECURITY,
    schemas: SCHEMAS,
  },
  deadLetters: {
    operationId: "listDeadLetters",
    summary: "The tenant's exhausted jobs, newest first, with their attempts and reason",
    parameters: [
      {
        name: "limit",
        in: "query",
        description:
          `Jobs at most, 1 to ${DEAD_LETTER_LIMIT.max} (${DEAD_LETTER_LIMIT.default} by default)`,
        schema: { type: "integer", minimum: 1, maximum: DEAD_LETTER_LIMIT.max },
        example: 10,
      },
      OPTIONAL_ENDPOINT_FILTER,
    ],
    responses: {
      "200": json("The dead letters", {
        type: "object",
        required: ["data"],
        additionalProperties: false,
        properties: { data: { type: "array", items: schemaRef("WebhookDelivery") } },
      }, {
        links: {
          replay: {
            operationId: "replayDeadLetter",
            parameters: { job: "$response.body#/data/0/id" },
            description: "Replays the newest",
          },
        },
      }),
      ...errorResponses([...ACCESS, "ERR_HTTP_MALFORMED_URL", "ERR_HTTP_BAD_REQUEST"]),
    },
    security: SECURITY,
    schemas: SCHEMAS,
  },
  replayAll: {
    operationId: "replayDeadLetters",
    summary: "Queues the tenant's dead letters again, or one endpoint's",
    requestBody: {
      required: false,
      content: {
        "application/json": {
          schema: {
            type: "object",
            additionalProperties: false,
            properties: { endpoint_id: { type: "string" } },
          },
          example: { endpoint_id: "orders" },
        },
      },
    },
    responses: {
      "202": REPLAYED,
      ...errorResponses([...ACCESS, ...JSON_BODY, "ERR_HTTP_BAD_REQUEST"]),
    },
    security: SECURITY,
  },
  replayOne: {
    operationId: "replayDeadLetter",
    summary: "Queues one dead letter again",
    parameters: [{
      name: "job",
      in: "path",
      description: "The job's id (a dead letter's `id`)",
      schema: { type: "string" },
      example: "msg_01JDQ4Z8X2M3N4P5Q6R7S8T9V0.orders",
    }],
    responses: { "202": REPLAYED, ...errorResponses([...ACCESS, "ERR_RELAY_UNKNOWN_MESSAGE"]) },
    security: SECURITY,
  },
};
