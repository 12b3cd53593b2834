import {
  type ErrorCode,
  errorStatuses,
  type HeaderDoc,
  type JsonSchema,
  type ParameterDoc,
  type ResponseDoc,
  type RouteDoc,
} from "../http/mod.ts";
import {
  errorBodySchema,
  errorResponses,
  FIELD_ERRORS_SCHEMA,
  schemaRef,
} from "../http/_internal.ts";
import { type BearerErrorCode, SYNC_ERROR_STATUS } from "./error_status.ts";
import type { SyncErrorCode } from "./errors.ts";
import { ENTITIES, ENTITY_NAMES, type EntitySchema, type FieldSchema } from "./schema.ts";
import { PATCH_MEMBERS } from "./parse_patch.ts";
import type { TicketStatus } from "./ticket_store.ts";
import type { ErrorLevel, ErrorMessageCode } from "./types.ts";

// The sync API's routes as the OpenAPI document describes them: the objects'
// schemas come from the entity table (schema.ts) that patches are checked
// against, the patch's members from the patch reader; the routes
// (create_sync_service.ts) carry these docs.

/** What each ticket status means: one entry per status. */
const TICKET_STATUSES: Readonly<Record<TicketStatus, string>> = {
  new: "not started",
  work: "running",
  done: "finished; a snapshot's or diff's data is set",
  aborted: "a patch refused for its input: see errors",
  failed: "a server failure: send the request again later",
};

/** The levels and codes of a ticket's messages: one entry each. */
const ERROR_LEVELS: Readonly<Record<ErrorLevel, true>> = {
  dev_error: true,
  dev_warning: true,
  user_logic: true,
  user_error: true,
  service: true,
};
const MESSAGE_CODES: Readonly<Record<ErrorMessageCode, true>> = {
  input_data: true,
  input_format: true,
  teams_the_only_admin: true,
  team_has_subscription: true,
  input: true,
  access_denied: true,
  object_not_found: true,
  conflict: true,
  internal: true,
};

const UUID: JsonSchema = { type: "string", format: "uuid" };
const TIME: JsonSchema = {
  type: "string",
  format: "date-time",
  description: "UTC, `yyyy-mm-ddThh:mm:ssZ`",
};

/**
 * The JSON Schema of a field's values, from the rules patches are checked by.
 * @param field the field
 * @returns the schema
 */
export function fieldSchema(field: FieldSchema): JsonSchema {
  const base: Record<string, unknown> = { description: field.description };
  switch (field.type) {
    case "uuid":
      Object.assign(base, UUID);
      break;
    case "datetime":
      Object.assign(base, { type: "string", format: "date-time" });
      break;
    case "boolean":
      base["type"] = "boolean";
      break;
    case "string":
      base["type"] = "string";
      if (field.minLength !== undefined) base["minLength"] = field.minLength;
      if (field.maxLength !== undefined) base["maxLength"] = field.maxLength;
      if (field.pattern !== undefined) base["pattern"] = field.pattern.source;
      if (field.values !== undefined) {
        base["enum"] = [...field.values, ...(field.nullable ? [null] : [])];
      }
      break;
    default: {
      const never: never = field.type;
      throw new TypeError(`Cannot describe field type ${String(never)}`);
    }
  }
  if (field.nullable) base["type"] = [base["type"], "null"];
  if (field.readOnly) base["readOnly"] = true;
  if (field.default !== undefined) base["default"] = field.default;
  return base;
}

/** A stored object of an entity: every field, and no other. */
function objectSchema(entity: EntitySchema): JsonSchema {
  return {
    type: "object",
    description: entity.description,
    required: entity.fields.map((field) => field.name),
    additionalProperties: false,
    properties: Object.fromEntries(entity.fields.map((field) => [field.name, fieldSchema(field)])),
  };
}

/** An object as a patch sends it: the fields it sets (a list entity's key always), and no other. */
function patchObjectSchema(entity: EntitySchema): JsonSchema {
  return {
    type: "object",
    description:
      `${entity.description}, as a patch sets it: a field left out takes its default, or keeps its value when read-only`,
    ...(entity.singleton ? {} : { required: [entity.key] }),
    additionalProperties: false,
    properties: Object.fromEntries(entity.fields.map((field) => [field.name, fieldSchema(field)])),
  };
}

const NAMES: Readonly<Record<string, string>> = {
  me: "SyncMe",
  messages: "SyncMessage",
  teams: "SyncTeam",
};

function named(entity: string): string {
  return NAMES[entity] ?? entity;
}

/** The schema name of an entity's object as a patch sends it, e.g. `SyncPatchMessage`. */
function patchNamed(entity: string): string {
  return named(entity).replace(/^Sync/, "SyncPatch");
}

/** The objects of a context, or of a diff: `me` (null in a diff when it did not change) and the lists. */
const OBJECTS: JsonSchema = {
  type: "object",
  required: [...ENTITY_NAMES],
  additionalProperties: false,
  properties: Object.fromEntries(ENTITY_NAMES.map((name) => [
    name,
    ENTITIES[name].singleton
      ? { oneOf: [schemaRef(named(name)), { type: "null" }] }
      : { type: "array", items: schemaRef(named(name)) },
  ])),
};

const DELETED: JsonSchema = {
  type: "object",
  required: [...ENTITY_NAMES],
  additionalProperties: false,
  properties: Object.fromEntries(
    ENTITY_NAMES.map((name) => [
      name,
      ENTITIES[name].singleton
        ? { type: ["string", "null"], format: "uuid" }
        : { type: "array", items: UUID },
    ]),
  ),
};

/** A deleted object's key as a patch may send it: a UUID or `{"uuid"}`. */
const DELETED_KEY: JsonSchema = {
  oneOf: [UUID, {
    type: "object",
    required: ["uuid"],
    additionalProperties: false,
    properties: { uuid: UUID },
  }],
};

const MEMBER_SCHEMAS: Readonly<Record<(typeof PATCH_MEMBERS)[number], JsonSchema>> = {
  objects: {
    type: ["object", "null"],
    description: "Objects to create or replace",
    additionalProperties: false,
    properties: Object.fromEntries(ENTITY_NAMES.map((name) => [
      name,
      ENTITIES[name].singleton
        ? { oneOf: [schemaRef(patchNamed(name)), { type: "null" }] }
        : { type: ["array", "null"], items: schemaRef(patchNamed(name)) },
    ])),
  },
  deleted_objects: {
    type: ["object", "null"],
    description: "Keys of objects to delete; `me` set to the user's own uuid deletes the account",
    additionalProperties: false,
    properties: Object.fromEntries(ENTITY_NAMES.map((name) => [
      name,
      ENTITIES[name].singleton
        ? { oneOf: [DELETED_KEY, { type: "null" }] }
        : { type: ["array", "null"], items: DELETED_KEY },
    ])),
  },
  serial: {
    type: ["integer", "null"],
    minimum: 0,
    description: "The client's number, echoed as the ticket's client_serial",
  },
  base_revision: {
    type: ["string", "null"],
    format: "uuid",
    description:
      "The revision the patch was made from: an object it names that changed after it makes the whole patch a conflict",
  },
};

const PATCH: JsonSchema = {
  type: "object",
  description: "At least one of objects and deleted_objects",
  additionalProperties: false,
  properties: Object.fromEntries(PATCH_MEMBERS.map((member) => [member, MEMBER_SCHEMAS[member]])),
};

const TICKET: JsonSchema = {
  type: "object",
  required: ["uuid", "client_serial", "status", "created_at", "status_changed_at", "errors"],
  additionalProperties: false,
  properties: {
    uuid: UUID,
    client_serial: { type: ["integer", "null"] },
    status: {
      enum: Object.keys(TICKET_STATUSES),
      description: Object.entries(TICKET_STATUSES).map(([status, meaning]) =>
        `\`${status}\`: ${meaning}`
      ).join("; "),
    },
    created_at: TIME,
    status_changed_at: TIME,
    errors: {
      type: "array",
      items: {
        type: "object",
        required: ["section", "entity", "key", "attribute", "messages"],
        additionalProperties: false,
        properties: {
          section: { enum: ["objects", "deleted_objects"] },
          entity: { enum: [...ENTITY_NAMES] },
          key: {
            oneOf: [{
              type: "object",
              required: ["uuid"],
              additionalProperties: false,
              properties: { uuid: UUID },
            }, { type: "null" }],
          },
          attribute: { type: ["string", "null"] },
          messages: {
            type: "array",
            items: {
              type: "object",
              required: ["level", "code", "message"],
              additionalProperties: false,
              properties: {
                level: { enum: Object.keys(ERROR_LEVELS) },
                code: { enum: Object.keys(MESSAGE_CODES) },
                message: { type: "string" },
                revision: {
                  ...UUID,
                  description:
                    "For a conflict: the revision that changed the object after the patch's base",
                },
              },
            },
          },
        },
      },
    },
  },
};

const DATA: JsonSchema = {
  type: "object",
  description: "A snapshot: every object of the context at a revision",
  required: ["revision", "serial", "created_at", "objects"],
  additionalProperties: false,
  properties: {
    revision: UUID,
    serial: { type: "integer", minimum: 1 },
    created_at: TIME,
    objects: schemaRef("SyncObjects"),
  },
};

const DIFF: JsonSchema = {
  type: "object",
  description:
    "What changed after base_revision up to revision: the current state of every object changed, the keys of those deleted",
  required: ["base_revision", "revision", "serial", "created_at", "deleted_objects", "objects"],
  additionalProperties: false,
  properties: {
    base_revision: UUID,
    revision: UUID,
    serial: { type: "integer", minimum: 1 },
    created_at: TIME,
    deleted_objects: DELETED,
    objects: schemaRef("SyncObjects"),
  },
};

/** The schemas the sync routes share. */
const SCHEMAS: Readonly<Record<string, JsonSchema>> = {
  ...Object.fromEntries(ENTITY_NAMES.map((name) => [named(name), objectSchema(ENTITIES[name])])),
  ...Object.fromEntries(
    ENTITY_NAMES.map((name) => [patchNamed(name), patchObjectSchema(ENTITIES[name])]),
  ),
  SyncObjects: OBJECTS,
  SyncData: DATA,
  SyncDiff: DIFF,
  SyncPatch: PATCH,
  Ticket: TICKET,
};

/** `{ticket, data}`: every answer of the API. */
function envelope(ticket: JsonSchema, data: JsonSchema): JsonSchema {
  return {
    type: "object",
    required: ["ticket", "data"],
    additionalProperties: false,
    properties: { ticket, data },
  };
}

const NULL: JsonSchema = { type: "null" };
const QUEUED = envelope(schemaRef("Ticket"), NULL);
const CACHE: Readonly<Record<string, HeaderDoc>> = {
  "Cache-Control": { description: "`private, no-cache`", schema: { type: "string" } },
};
const ETAG: HeaderDoc = {
  description: "The revision (or base and revision) the answer is of, for `If-None-Match`",
  schema: { type: "string" },
  required: true,
};

/** A code the sync API's answers may carry: its own, a refused bearer token's, or one of lib/http and below. */
type DocumentedCode = SyncErrorCode | BearerErrorCode | ErrorCode;

/** The statuses of the codes the sync API documents. */
const STATUSES = errorStatuses(SYNC_ERROR_STATUS);

/** What the sync API's documented errors are answered with. */
function errors(codes: readonly DocumentedCode[]): Record<string, ResponseDoc> {
  return errorResponses(codes, STATUSES);
}

const BEARER_ERRORS: readonly DocumentedCode[] = [
  "ERR_AUTH_MISSING_TOKEN",
  "ERR_AUTH_INVALID_REQUEST",
  "ERR_AUTH_INVALID_TOKEN",
  "ERR_AUTH_INSUFFICIENT_SCOPE",
  "ERR_STORAGE_UNAVAILABLE",
];

const IF_NONE_MATCH: ParameterDoc = {
  name: "If-None-Match",
  in: "header",
  description: "The ETag of an answer the client holds: 304 when it is still current",
  schema: { type: "string" },
  example: '"0b5b6c9e-2f44-4c1b-9d2a-3e4f5a6b7c8d"',
};

const SECURITY = [{ oauth2: ["UserActivity"] }] as const;
const QUEUED_RESPONSE = {
  description: "Queued (larger than `SYNC_QUEUE_ABOVE_OBJECTS`): follow the ticket",
  content: { "application/json": { schema: QUEUED } },
  links: {
    ticket: { operationId: "getSyncTicket", parameters: { ticket: "$response.body#/ticket/uuid" } },
  },
} as const;
const NOT_MODIFIED = {
  description: "Not modified: `If-None-Match` named the current answer",
  headers: { ETag: ETAG, ...CACHE },
} as const;

/** The sync API's routes' docs. */
export const SYNC_DOCS: Readonly<
  Record<"snapshot" | "diff" | "changes" | "ticket" | "patch" | "deleteAccount", RouteDoc>
> = {
  snapshot: {
    operationId: "getSyncSnapshot",
    summary: "Every object of the user's context, at its head revision",
    parameters: [IF_NONE_MATCH],
    responses: {
      "200": {
        description: "The snapshot",
        headers: { ETag: ETAG, ...CACHE },
        content: { "application/json": { schema: envelope(NULL, schemaRef("SyncData")) } },
        links: {
          diff: {
            operationId: "getSyncDiff",
            parameters: { revision: "$response.body#/data/revision" },
            description: "What changes after this snapshot",
          },
        },
      },
      "202": QUEUED_RESPONSE,
      "304": NOT_MODIFIED,
      ...errors([...BEARER_ERRORS, "ERR_SYNC_NO_CONTEXT", "ERR_SYNC_BUSY"]),
    },
    security: SECURITY,
    schemas: SCHEMAS,
  },
  diff: {
    operationId: "getSyncDiff",
    summary: "What changed since a revision",
    parameters: [
      {
        name: "revision",
        in: "path",
        description: "A revision issued to this user (a snapshot's or diff's `revision`)",
        schema: UUID,
        example: "0b5b6c9e-2f44-4c1b-9d2a-3e4f5a6b7c8d",
      },
      IF_NONE_MATCH,
      {
        name: "wait",
        in: "query",
        description:
          "A long-poll, for clients that cannot hold a change stream: when nothing changed since the revision, " +
          "wait up to this many seconds for a change before answering (as soon as one commits), then answer as without it " +
          "(204 when the wait ended with nothing new)",
        schema: { type: "integer", minimum: 0, maximum: 60 },
        example: 1,
      },
    ],
    responses: {
      "200": {
        description: "The diff",
        headers: { ETag: ETAG, ...CACHE },
        content: { "application/json": { schema: envelope(NULL, schemaRef("SyncDiff")) } },
        links: {
          diff: {
            operationId: "getSyncDiff",
            parameters: { revision: "$response.body#/data/revision" },
            description: "What changes after this diff",
          },
        },
      },
      "202": QUEUED_RESPONSE,
      "204": {
        description: "Nothing changed since the revision",
        headers: { ETag: ETAG, ...CACHE },
      },
      "304": NOT_MODIFIED,
      ...errors([
        ...BEARER_ERRORS,
        "ERR_SYNC_INVALID_ID",
        "ERR_SYNC_NO_CONTEXT",
        "ERR_SYNC_UNKNOWN_REVISION",
        "ERR_SYNC_REVISION_EXPIRED",
        "ERR_SYNC_BUSY",
        "ERR_SYNC_INVALID_WAIT",
        "ERR_SYNC_TOO_MANY_STREAMS",
        "ERR_SYNC_STREAMS_UNAVAILABLE",
      ]),
    },
    security: SECURITY,
    schemas: SCHEMAS,
  },
  changes: {
    operationId: "streamSyncChanges",
    summary: "A stream announcing each new revision of the user's context as it commits",
    description:
      "Server-Sent Events (`text/event-stream`), read with `fetch` and the bearer token in `Authorization`. " +
      "Each revision is announced as `id: <revision>`, `event: revision`, " +
      '`data: {"revision": "<revision>", "serial": <serial>}`: the client then asks for the diff from its revision ' +
      "(several revisions committed before the client reads them are announced as the newest). " +
      "The stream opens with a `retry:` line, and sends a `: ping` comment when it has had nothing to send " +
      "for `SYNC_STREAM_HEARTBEAT_MS`. It resumes from `Last-Event-ID` (or `since`): a head past that revision " +
      "is announced at once, and without either the head is announced at once. " +
      "A user holds at most `SYNC_STREAMS_PER_USER` streams and long-polls in a process (429 above), " +
      "a process at most `SYNC_STREAMS_MAX` (503 with `Retry-After` above). The server ends streams when it shuts down: " +
      "connect again, from the last event's id.",
    parameters: [
      {
        name: "since",
        in: "query",
        description:
          "The revision the client has (a snapshot's or diff's `revision`): a head past it is announced at once",
        schema: UUID,
        example: "0b5b6c9e-2f44-4c1b-9d2a-3e4f5a6b7c8d",
      },
      {
        name: "Last-Event-ID",
        in: "header",
        description:
          "The last event's id the client saw (an EventSource sends it when it reconnects); before `since`",
        schema: UUID,
        example: "0b5b6c9e-2f44-4c1b-9d2a-3e4f5a6b7c8d",
      },
    ],
    responses: {
      "200": {
        description: "The stream, open until the client or the server ends it",
        headers: {
          "Cache-Control": { description: "`no-store, no-transform`", schema: { type: "string" } },
        },
        content: {
          "text/event-stream": {
            schema: {
              type: "string",
              description:
                "Events of three lines (`id`, `event: revision`, `data` a JSON object with `revision` and `serial`) " +
                "and a blank line each, `: ping` comments, and a `retry:` line first",
            },
            example:
              'retry: 3000\n\nid: 0b5b6c9e-2f44-4c1b-9d2a-3e4f5a6b7c8d\nevent: revision\ndata: {"revision":"0b5b6c9e-2f44-4c1b-9d2a-3e4f5a6b7c8d","serial":2}\n\n',
          },
        },
      },
      ...errors([
        ...BEARER_ERRORS,
        "ERR_SYNC_INVALID_ID",
        "ERR_SYNC_NO_CONTEXT",
        "ERR_SYNC_TOO_MANY_STREAMS",
        "ERR_SYNC_STREAMS_UNAVAILABLE",
      ]),
    },
    security: SECURITY,
  },
  ticket: {
    operationId: "getSyncTicket",
    summary: "A queued request's ticket, with its data once a snapshot or diff is done",
    parameters: [{
      name: "ticket",
      in: "path",
      description: "The ticket's uuid",
      schema: UUID,
      example: "5f0c2a7e-8f55-4c61-9b1e-3d2f7a4c9e10",
    }],
    responses: {
      "200": {
        description: "The ticket",
        headers: { "Cache-Control": { description: "`no-store`", schema: { type: "string" } } },
        content: {
          "application/json": {
            schema: envelope(schemaRef("Ticket"), {
              oneOf: [schemaRef("SyncData"), schemaRef("SyncDiff"), NULL],
            }),
          },
        },
      },
      ...errors([
        ...BEARER_ERRORS,
        "ERR_SYNC_INVALID_ID",
        "ERR_SYNC_UNKNOWN_TICKET",
        "ERR_SYNC_TICKET_EXPIRED",
      ]),
    },
    security: SECURITY,
    schemas: SCHEMAS,
  },
  patch: {
    operationId: "patchSyncContext",
    summary: "Changes the context: a patch, applied as one revision",
    description:
      "Applied before the answer when nothing of the user's is queued (the ticket comes back done or aborted), " +
      "else queued behind that work.",
    parameters: [{
      name: "Idempotency-Key",
      in: "header",
      description:
        "A key per patch (a UUID): a retry within 24 hours gets the first ticket and applies nothing",
      schema: { type: "string", minLength: 1, maxLength: 255, pattern: "^[\\x21-\\x7e]+$" },
      example: "5f0c2a7e-8f55-4c61-9b1e-3d2f7a4c9e10",
    }],
    requestBody: {
      required: true,
      content: {
        "application/json": {
          schema: schemaRef("SyncPatch"),
          example: {
            serial: 1,
            objects: {
              messages: [{
                uuid: "9d1f3c0a-2b4e-4f6a-8c7d-1e2f3a4b5c6d",
                subject: "Hello",
                body: "Welcome aboard",
                read: false,
                sent_at: "2026-11-24T08:00:00Z",
              }],
            },
          },
        },
      },
    },
    responses: {
      "202": {
        description: "The patch's ticket",
        content: { "application/json": { schema: QUEUED } },
        links: {
          ticket: {
            operationId: "getSyncTicket",
            parameters: { ticket: "$response.body#/ticket/uuid" },
          },
        },
      },
      "204": { description: "The patch deleted `me`, the user's own: the account is deleted" },
      ...errors([
        ...BEARER_ERRORS,
        "ERR_SYNC_INVALID_IDEMPOTENCY_KEY",
        "ERR_SYNC_NO_CONTEXT",
        "ERR_SYNC_BUSY",
        "ERR_HTTP_INVALID_JSON",
        "ERR_HTTP_JSON_TOO_DEEP",
        "ERR_HTTP_BODY_TOO_LARGE",
        "ERR_HTTP_UNSUPPORTED_MEDIA_TYPE",
      ]),
      "422": {
        description:
          "A body that is not a patch (each problem with its field), or an Idempotency-Key used with another patch",
        content: {
          "application/json": {
            schema: {
              oneOf: [FIELD_ERRORS_SCHEMA, errorBodySchema(["ERR_SYNC_IDEMPOTENCY_MISMATCH"])],
            },
          },
        },
      },
    },
    security: SECURITY,
    schemas: SCHEMAS,
  },
  deleteAccount: {
    operationId: "deleteAccount",
    summary:
      "Deletes the account: the context (every revision, object and ticket), the user and every token issued for the user",
    responses: {
      "204": { description: "Deleted" },
      ...errors(BEARER_ERRORS),
    },
    security: SECURITY,
  },
};
