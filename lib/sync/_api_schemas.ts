import type { JsonSchema } from "../http/mod.ts";
import { schemaRef } from "../http/_internal.ts";
import { ENTITIES, ENTITY_NAMES, type EntitySchema, type FieldSchema } from "./schema.ts";
import { PATCH_MEMBERS } from "./parse_patch.ts";
import type { TicketStatus } from "./ticket_store.ts";
import type { ErrorLevel, ErrorMessageCode } from "./types.ts";

// The sync API's schemas as the OpenAPI document describes them: the objects'
// schemas come from the entity table (schema.ts) that patches are checked
// against, the patch's members from the patch reader.

/** What each ticket status means: one entry per status. */
export const TICKET_STATUSES: Readonly<Record<TicketStatus, string>> = {
  new: "not started",
  work: "running",
  done: "finished; a snapshot's or diff's data is set",
  aborted: "a patch refused for its input: see errors",
  failed: "a server failure: send the request again later",
};

/** The levels and codes of a ticket's messages: one entry each. */
export const ERROR_LEVELS: Readonly<Record<ErrorLevel, true>> = {
  dev_error: true,
  dev_warning: true,
  user_logic: true,
  user_error: true,
  service: true,
};
export const MESSAGE_CODES: Readonly<Record<ErrorMessageCode, true>> = {
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

export const UUID: JsonSchema = { type: "string", format: "uuid" };
export const TIME: JsonSchema = {
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
export function objectSchema(entity: EntitySchema): JsonSchema {
  return {
    type: "object",
    description: entity.description,
    required: entity.fields.map((field) => field.name),
    additionalProperties: false,
    properties: Object.fromEntries(entity.fields.map((field) => [field.name, fieldSchema(field)])),
  };
}

/** An object as a patch sends it: the fields it sets (a list entity's key always), and no other. */
export function patchObjectSchema(entity: EntitySchema): JsonSchema {
  return {
    type: "object",
    description:
      `${entity.description}, as a patch sets it: a field left out takes its default, or keeps its value when read-only`,
    ...(entity.singleton ? {} : { required: [entity.key] }),
    additionalProperties: false,
    properties: Object.fromEntries(entity.fields.map((field) => [field.name, fieldSchema(field)])),
  };
}

export const NAMES: Readonly<Record<string, string>> = {
  me: "SyncMe",
  messages: "SyncMessage",
  teams: "SyncTeam",
};

export function named(entity: string): string {
  return NAMES[entity] ?? entity;
}

/** The schema name of an entity's object as a patch sends it, e.g. `SyncPatchMessage`. */
export function patchNamed(entity: string): string {
  return named(entity).replace(/^Sync/, "SyncPatch");
}

/** The objects of a context, or of a diff: `me` (null in a diff when it did not change) and the lists. */
export const OBJECTS: JsonSchema = {
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

export const DELETED: JsonSchema = {
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
export const DELETED_KEY: JsonSchema = {
  oneOf: [UUID, {
    type: "object",
    required: ["uuid"],
    additionalProperties: false,
    properties: { uuid: UUID },
  }],
};

export const MEMBER_SCHEMAS: Readonly<Record<(typeof PATCH_MEMBERS)[number], JsonSchema>> = {
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

export const PATCH: JsonSchema = {
  type: "object",
  description: "At least one of objects and deleted_objects",
  additionalProperties: false,
  properties: Object.fromEntries(PATCH_MEMBERS.map((member) => [member, MEMBER_SCHEMAS[member]])),
};

export const TICKET: JsonSchema = {
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

export const DATA: JsonSchema = {
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

export const DIFF: JsonSchema = {
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
export const SCHEMAS: Readonly<Record<string, JsonSchema>> = {
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
export function envelope(ticket: JsonSchema, data: JsonSchema): JsonSchema {
  return {
    type: "object",
    required: ["ticket", "data"],
    additionalProperties: false,
    properties: { ticket, data },
  };
}

export const NULL: JsonSchema = { type: "null" };
export const QUEUED = envelope(schemaRef("Ticket"), NULL);
