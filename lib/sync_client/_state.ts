// The local state of a client, as plain data: the replica (the server's
// objects at a revision), the outbox (local intents in order, and the patch
// in flight), and the view the app reads (the replica with the intents laid
// over it). Every change gives the storage entries it touches, so that the
// storage holds what memory holds.
import type { SyncEntityName, SyncFieldValue } from "./types.ts";

/** An object as JSON: its fields by name. */
export type JsonObject = { readonly [field: string]: SyncFieldValue };

/** The entity names, in the order of the API's members. */
export const ENTITY_NAMES: readonly SyncEntityName[] = ["me", "messages", "teams"];

/** A local write: an object put (`value`) or deleted (`value` null). */
export interface Intent {
  readonly seq: number;
  readonly entity: SyncEntityName;
  readonly uuid: string;
  readonly value: JsonObject | null;
}

/** The patch in flight: its body exactly as sent, and the key a resend reuses. */
export interface PatchRecord {
  /** The Idempotency-Key. */
  readonly key: string;
  /** The intents it carries (the last per object is what it sends). */
  readonly seqs: readonly number[];
  /** The JSON body, sent byte for byte the same on every resend. */
  readonly body: string;
}

/** The server's objects at a revision. */
export interface Replica {
  readonly revision: string | undefined;
  readonly serial: number | undefined;
  /** Objects by entity, then uuid (`me` holds at most one). */
  readonly objects: { readonly [E in SyncEntityName]: ReadonlyMap<string, JsonObject> };
}

/** The login kept between runs. */
export interface Session {
  readonly username: string;
  readonly accessToken: string;
  /** Epoch milliseconds. */
  readonly accessExpiresAt: number;
  readonly refreshToken: string | undefined;
}

/** Storage keys. */
export const KEYS = { session: "session", replica: "replica", patch: "patch" } as const;
const INTENT_PREFIX = "intent/";

/** The storage key of an intent: its sequence number, padded so keys sort as numbers. */
export function intentKey(seq: number): string {
  return `${INTENT_PREFIX}${String(seq).padStart(12, "0")}`;
}

/** An empty replica, before the first pull. */
export function emptyReplica(): Replica {
  return {
    revision: undefined,
    serial: undefined,
    objects: { me: new Map(), messages: new Map(), teams: new Map() },
  };
}

/** The defaults the server gives a field left out (lib/sync/schema.ts; a test checks they agree). */
export const DEFAULTS: { readonly [E in SyncEntityName]: JsonObject } = {
  me: { notify_language: null },
  messages: { read: false },
  teams: { color: null, archived: false },
};

/** Whether two objects have the same fields and values. */
export function sameObject(a: JsonObject | null | undefined, b: JsonObject | null | undefined) {
  if (a === b) return true;
  if (a === null || b === null || a === undefined || b === undefined) return false;
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every((key) => Object.hasOwn(b, key) && a[key] === b[key]);
}

/** The replica as stored. */
interface StoredReplica {
  readonly revision: string;
  readonly serial: number;
  readonly objects: { readonly [E in SyncEntityName]: readonly JsonObject[] };
}

/** A replica as the storage keeps it. */
export function storedReplica(replica: Replica): StoredReplica | undefined {
  if (replica.revision === undefined || replica.serial === undefined) return undefined;
  return {
    revision: replica.revision,
    serial: replica.serial,
    objects: {
      me: [...replica.objects.me.values()],
      messages: [...replica.objects.messages.values()],
      teams: [...replica.objects.teams.values()],
    },
  };
}

function isRecord(value: unknown): value is { readonly [key: string]: unknown } {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isJsonObject(value: unknown): value is JsonObject {
  return isRecord(value) && typeof value["uuid"] === "string" &&
    Object.values(value).every((field) =>
      field === null || typeof field === "string" || typeof field === "boolean"
    );
}

function objectsOf(value: unknown): Map<string, JsonObject> {
  const found = new Map<string, JsonObject>();
  if (!Array.isArray(value)) return found;
  for (const object of value) if (isJsonObject(object)) found.set(String(object["uuid"]), object);
  return found;
}

/** Reads what the storage holds back into state; entries it cannot read are left out. */
export function readStored(entries: ReadonlyMap<string, unknown>): {
  replica: Replica;
  intents: Intent[];
  patch: PatchRecord | undefined;
  session: Session | undefined;
} {
  let replica = emptyReplica();
  const stored = entries.get(KEYS.replica);
  if (
    isRecord(stored) && typeof stored["revision"] === "string" &&
    typeof stored["serial"] === "number" && isRecord(stored["objects"])
  ) {
    const objects = stored["objects"];
    replica = {
      revision: stored["revision"],
      serial: stored["serial"],
      objects: {
        me: objectsOf(objects["me"]),
        messages: objectsOf(objects["messages"]),
        teams: objectsOf(objects["teams"]),
      },
    };
  }
  const intents: Intent[] = [];
  for (const [key, value] of entries) {
    if (!key.startsWith(INTENT_PREFIX) || !isRecord(value)) continue;
    const { seq, entity, uuid } = value;
    const object = value["value"];
    if (
      typeof seq === "number" && typeof uuid === "string" &&
      (entity === "me" || entity === "messages" || entity === "teams") &&
      (object === null || isJsonObject(object))
    ) intents.push({ seq, entity, uuid, value: object });
  }
  intents.sort((a, b) => a.seq - b.seq);
  const rawPatch = entries.get(KEYS.patch);
  const patch = isRecord(rawPatch) && typeof rawPatch["key"] === "string" &&
      typeof rawPatch["body"] === "string" && Array.isArray(rawPatch["seqs"])
    ? {
      key: rawPatch["key"],
      body: rawPatch["body"],
      seqs: rawPatch["seqs"].filter((seq): seq is number => typeof seq === "number"),
    }
    : undefined;
  const rawSession = entries.get(KEYS.session);
  const session = isRecord(rawSession) && typeof rawSession["username"] === "string" &&
      typeof rawSession["accessToken"] === "string" &&
      typeof rawSession["accessExpiresAt"] === "number"
    ? {
      username: rawSession["username"],
      accessToken: rawSession["accessToken"],
      accessExpiresAt: rawSession["accessExpiresAt"],
      refreshToken: typeof rawSession["refreshToken"] === "string"
        ? rawSession["refreshToken"]
        : undefined,
    }
    : undefined;
  return { replica, intents, patch, session };
}

/** The server's data: a snapshot (no `base_revision`) or a diff. */
export interface ServerData {
  readonly base_revision?: string;
  readonly revision: string;
  readonly serial: number;
  readonly objects: {
    readonly me?: JsonObject | null;
    readonly messages?: readonly JsonObject[];
    readonly teams?: readonly JsonObject[];
  };
  readonly deleted_objects?: {
    readonly me?: string | null;
    readonly messages?: readonly string[];
    readonly teams?: readonly string[];
  };
}

/**
 * The replica after the server's data: a snapshot replaces it, a diff
 * changes the objects it names.
 * @param replica the replica before
 * @param data the server's data
 * @returns the new replica (the old one is left as it is)
 */
export function applyServerData(replica: Replica, data: ServerData): Replica {
  const snapshot = data.base_revision === undefined;
  const next = {
    me: new Map(snapshot ? [] : replica.objects.me),
    messages: new Map(snapshot ? [] : replica.objects.messages),
    teams: new Map(snapshot ? [] : replica.objects.teams),
  };
  const me = data.objects.me;
  if (me !== null && me !== undefined) {
    next.me.clear();
    next.me.set(String(me["uuid"]), me);
  }
  for (const entity of ["messages", "teams"] as const) {
    for (const key of data.deleted_objects?.[entity] ?? []) next[entity].delete(key);
    for (const object of data.objects[entity] ?? []) {
      next[entity].set(String(object["uuid"]), object);
    }
  }
  const deletedMe = data.deleted_objects?.me;
  if (typeof deletedMe === "string") next.me.delete(deletedMe);
  return { revision: data.revision, serial: data.serial, objects: next };
}

/**
 * The body of a patch sending intents: the last intent of each object, on a
 * base revision, with the server's defaults filled in.
 * @param intents the intents, oldest first
 * @param base the revision they are made on
 * @returns the JSON body
 */
export function patchBody(intents: readonly Intent[], base: string): string {
  const last = new Map<string, Intent>();
  for (const intent of intents) last.set(`${intent.entity} ${intent.uuid}`, intent);
  let me: JsonObject | null = null;
  const objects: { messages: JsonObject[]; teams: JsonObject[] } = { messages: [], teams: [] };
  const deleted: { messages: string[]; teams: string[] } = { messages: [], teams: [] };
  for (const intent of last.values()) {
    if (intent.entity === "me") {
      if (intent.value !== null) me = intent.value;
    } else if (intent.value === null) deleted[intent.entity].push(intent.uuid);
    else objects[intent.entity].push(intent.value);
  }
  return JSON.stringify({
    base_revision: base,
    serial: null,
    objects: { ...(me === null ? {} : { me }), ...objects },
    deleted_objects: deleted,
  });
}
