/** A field value: every sync field is a string, a boolean or null. */
export type FieldValue = string | boolean | null;

/**
 * One object of an entity set: its fields by name. Stored objects are frozen
 * and always carry their key in `uuid`.
 */
export interface SyncObject {
  readonly [field: string]: FieldValue;
}

/** The entity sets of the user context: the `me` singleton and two keyed lists. */
export type EntityName = "me" | "messages" | "teams";

/** The entity sets that are lists of objects keyed by `uuid`. */
export type ListEntityName = "messages" | "teams";

/** A revision of a context: every change to the context creates one. */
export interface Revision {
  /** Its identifier, a lower-case UUID. */
  readonly uuid: string;
  /** 1, 2, 3, … in the order of commits; only comparisons are meaningful. */
  readonly serial: number;
  /** When it was committed, in epoch milliseconds. */
  readonly createdAt: number;
}

/** One change of a commit: `value` null deletes the object with that key. */
export interface Change {
  readonly entity: EntityName;
  /** The object's key; equals `value.uuid` when `value` is not null. */
  readonly key: string;
  readonly value: SyncObject | null;
}

/** The objects of a context (or the changed ones, in a diff), lists sorted by `uuid`. */
export interface SyncObjects {
  /** The `me` object; in a diff, null when it did not change. */
  readonly me: SyncObject | null;
  readonly messages: readonly SyncObject[];
  readonly teams: readonly SyncObject[];
}

/** The keys of deleted objects, lists sorted. */
export interface SyncDeletedObjects {
  /** The key of the deleted `me`, or null. */
  readonly me: string | null;
  readonly messages: readonly string[];
  readonly teams: readonly string[];
}

/** A snapshot (the API's `Data`): every object of the context at a revision. */
export interface SyncData {
  readonly revision: string;
  readonly serial: number;
  /** `yyyy-mm-ddThh:mm:ssZ`, UTC. */
  readonly created_at: string;
  readonly objects: SyncObjects;
}

/** A diff (the API's `DataDiff`): what changed after `base_revision` up to `revision`. */
export interface SyncDiff {
  readonly base_revision: string;
  readonly revision: string;
  readonly serial: number;
  /** `yyyy-mm-ddThh:mm:ssZ`, UTC. */
  readonly created_at: string;
  /** Keys of objects that existed at the base and no longer exist. */
  readonly deleted_objects: SyncDeletedObjects;
  /** Current state of every object created or updated after the base that still exists. */
  readonly objects: SyncObjects;
}

/**
 * A parsed patch (the API's `DataPatch`), every member present: objects are
 * as sent (defaults not yet filled), deletions are bare keys.
 */
export interface SyncPatch {
  readonly objects: SyncObjects;
  readonly deleted_objects: SyncDeletedObjects;
  /** The client's number, echoed as the ticket's `client_serial`. */
  readonly serial: number | null;
  /**
   * The revision the patch was made from, lower-case: when set, an object
   * the patch names that changed after it makes the whole patch a conflict
   * (optimistic concurrency); null keeps the last writer winning.
   */
  readonly base_revision: string | null;
}

/** Severity of an {@linkcode ErrorMessage}. */
export type ErrorLevel = "dev_error" | "dev_warning" | "user_logic" | "user_error" | "service";

/** Codes of an {@linkcode ErrorMessage}, by level as in the reference API. */
export type ErrorMessageCode =
  | "input_data"
  | "input_format"
  | "teams_the_only_admin"
  | "team_has_subscription"
  | "input"
  | "access_denied"
  | "object_not_found"
  | "conflict"
  | "internal";

/** One message about an object of a patch. */
export interface ErrorMessage {
  readonly level: ErrorLevel;
  readonly code: ErrorMessageCode;
  readonly message: string;
  /** For a `conflict`: the revision that changed the object after the patch's base. */
  readonly revision?: string;
}

/** The errors of one object (or one of its attributes) of a patch, as a ticket reports them. */
export interface ObjectErrors {
  /** The patch member the object is in. */
  readonly section: "objects" | "deleted_objects";
  readonly entity: EntityName;
  /** The object's key; null for `me`. */
  readonly key: { readonly uuid: string } | null;
  /** The field at fault; null for the whole object. */
  readonly attribute: string | null;
  readonly messages: readonly ErrorMessage[];
}
