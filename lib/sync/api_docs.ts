import {
  type ErrorCode,
  errorStatuses,
  type HeaderDoc,
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
import { envelope, NULL, QUEUED, SCHEMAS, UUID } from "./_api_schemas.ts";

// The sync API's routes as the OpenAPI document describes them: the objects'
// schemas come from the entity table (schema.ts) that patches are checked
// against, the patch's members from the patch reader; the routes
// (create_sync_service.ts) carry these docs.
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
      "connect again, from the last event's id. A stream also ends at the first heartbeat after its token " +
      "expires or is revoked: connecting again gives 401, and a refreshed token opens it again.",
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
