import type { EntityName, FieldValue, ListEntityName } from "./types.ts";

/** The JSON types of sync fields: `uuid` and `datetime` are strings with a format. */
export type SyncFieldType = "uuid" | "string" | "boolean" | "datetime";

/** One field of an entity. */
export interface FieldSchema {
  readonly name: string;
  readonly type: SyncFieldType;
  readonly description: string;
  /** Whether null is a valid value. */
  readonly nullable: boolean;
  /** Whether a new object must carry it (fields with a default never are). */
  readonly required: boolean;
  /**
   * Whether sync may not change it: a patch may omit it (the current value
   * is kept) or repeat the current value.
   */
  readonly readOnly: boolean;
  /** The value given to a new object that omits it. */
  readonly default?: FieldValue;
  /** Least length of a string, in code points. */
  readonly minLength?: number;
  /** Greatest length of a string, in code points. */
  readonly maxLength?: number;
  /** What a string must match. */
  readonly pattern?: RegExp;
  /** The only values a string may take. */
  readonly values?: readonly string[];
}

/** One entity set of the context. */
export interface EntitySchema {
  readonly name: EntityName;
  readonly description: string;
  /** Whether it is one object (`me`) rather than a list keyed by `uuid`. */
  readonly singleton: boolean;
  /** The key field, the same for every entity. */
  readonly key: "uuid";
  /** Fields in the order objects are written. */
  readonly fields: readonly FieldSchema[];
}

/** The fields of every entity of the user context, used by validation and docs. */
export const ENTITIES: { readonly [E in EntityName]: EntitySchema } = {
  me: {
    name: "me",
    description: "The user's own profile",
    singleton: true,
    key: "uuid",
    fields: [
      {
        name: "uuid",
        type: "uuid",
        description: "The user's id",
        nullable: false,
        required: true,
        readOnly: true,
      },
      {
        name: "username",
        type: "string",
        description: "The user's login name",
        nullable: false,
        required: true,
        readOnly: true,
        minLength: 3,
        maxLength: 64,
      },
      {
        name: "notify_language",
        type: "string",
        description: "Language of notifications; null for the default",
        nullable: true,
        required: false,
        readOnly: false,
        default: null,
        values: ["en", "fr", "ru", "es", "de"],
      },
    ],
  },
  messages: {
    name: "messages",
    description: "The user's messages",
    singleton: false,
    key: "uuid",
    fields: [
      {
        name: "uuid",
        type: "uuid",
        description: "The message's id",
        nullable: false,
        required: true,
        readOnly: false,
      },
      {
        name: "subject",
        type: "string",
        description: "Subject line",
        nullable: false,
        required: true,
        readOnly: false,
        minLength: 1,
        maxLength: 200,
      },
      {
        name: "body",
        type: "string",
        description: "Text of the message",
        nullable: false,
        required: true,
        readOnly: false,
        minLength: 0,
        maxLength: 10_000,
      },
      {
        name: "read",
        type: "boolean",
        description: "Whether the user has read it",
        nullable: false,
        required: false,
        readOnly: false,
        default: false,
      },
      {
        name: "sent_at",
        type: "datetime",
        description: "When it was sent, ISO 8601 UTC",
        nullable: false,
        required: true,
        readOnly: false,
      },
    ],
  },
  teams: {
    name: "teams",
    description: "Teams the user belongs to",
    singleton: false,
    key: "uuid",
    fields: [
      {
        name: "uuid",
        type: "uuid",
        description: "The team's id",
        nullable: false,
        required: true,
        readOnly: false,
      },
      {
        name: "name",
        type: "string",
        description: "Name, unique among non-archived teams regardless of case",
        nullable: false,
        required: true,
        readOnly: false,
        minLength: 1,
        maxLength: 100,
      },
      {
        name: "color",
        type: "string",
        description: "Colour as #RRGGBB; null for none",
        nullable: true,
        required: false,
        readOnly: false,
        default: null,
        pattern: /^#[0-9A-Fa-f]{6}$/,
      },
      {
        name: "archived",
        type: "boolean",
        description: "Whether the team is archived",
        nullable: false,
        required: false,
        readOnly: false,
        default: false,
      },
    ],
  },
};

/** The entity names in the order of {@linkcode ENTITIES}. */
export const ENTITY_NAMES: readonly EntityName[] = ["me", "messages", "teams"];

/** The list entity names. */
export const LIST_ENTITY_NAMES: readonly ListEntityName[] = ["messages", "teams"];

/**
 * Finds a field of an entity.
 * @param entity the entity
 * @param name the field name
 * @returns its schema, or undefined when the entity has no such field
 */
export function fieldOf(entity: EntitySchema, name: string): FieldSchema | undefined {
  return entity.fields.find((field) => field.name === name);
}

/**
 * Tells whether a name is an entity name.
 * @param name any text
 * @returns whether it names an entity of {@linkcode ENTITIES}
 */
export function isEntityName(name: string): name is EntityName {
  return name === "me" || name === "messages" || name === "teams";
}
