import { type PatchFieldError, SyncError } from "./errors.ts";
import { ENTITIES, type EntitySchema, fieldOf, isEntityName } from "./schema.ts";
import type {
  FieldValue,
  SyncDeletedObjects,
  SyncObject,
  SyncObjects,
  SyncPatch,
} from "./types.ts";
import { isUuid } from "./_uuid.ts";
import { describe, readField } from "./_values.ts";

/** Options of {@linkcode parsePatch}. */
export interface ParsePatchOptions {
  /**
   * Objects and deletions a patch may hold in all.
   * @default {10000}
   */
  maxObjects?: number;
  /**
   * Problems reported before giving up on a body.
   * @default {100}
   */
  maxErrors?: number;
}

type Json = { readonly [key: string]: unknown };

/** The members of a patch body (the API's `DataPatch`). */
export const PATCH_MEMBERS = ["objects", "deleted_objects", "serial", "base_revision"] as const;
const TOP_LEVEL: readonly string[] = PATCH_MEMBERS;
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const NONE: readonly never[] = Object.freeze([]);
const EMPTY_OBJECTS: SyncObjects = Object.freeze({ me: null, messages: NONE, teams: NONE });
const NO_DELETIONS: SyncDeletedObjects = Object.freeze({ me: null, messages: NONE, teams: NONE });

/** Thrown inside the parser when `maxErrors` problems were found. */
class TooManyErrors {}

/** Collects the problems of a body. */
class Problems {
  readonly list: PatchFieldError[] = [];
  readonly #max: number;

  constructor(max: number) {
    this.#max = max;
  }

  add(field: string | undefined, message: string): void {
    this.list.push(field === undefined ? { message } : { message, field });
    if (this.list.length >= this.#max) throw new TooManyErrors();
  }
}

/**
 * Checks the structure of a patch body (the API's `DataPatch`: `objects`,
 * `deleted_objects`, `serial`) and of every object against
 * {@linkcode ENTITIES}: JSON types, lengths, patterns, nullability, unknown
 * members. Whether a required field is missing, and every rule that needs
 * the current data, is left to {@linkcode checkPatch}. UUIDs are lower-cased;
 * absent or null members become empty ones.
 * @param body the parsed JSON body
 * @param options limits
 * @returns the patch
 * @throws {SyncError} `ERR_SYNC_INVALID_PATCH` listing every problem found (up to `maxErrors`),
 * each with the path of its field, e.g. `objects.messages[2].subject`
 * @example
 * ```ts
 * const patch = parsePatch(JSON.parse(text));
 * const errors = checkPatch(patch, log, user);
 * if (errors.length === 0) applyPatch(patch, log);
 * ```
 */
export function parsePatch(body: unknown, options: ParsePatchOptions = {}): SyncPatch {
  const maxObjects = options.maxObjects ?? 10_000;
  const problems = new Problems(Math.max(1, options.maxErrors ?? 100));
  try {
    const patch = readPatch(body, maxObjects, problems);
    if (problems.list.length === 0) return patch;
  } catch (error) {
    if (!(error instanceof TooManyErrors)) throw error;
    problems.list.push({ message: `Too many problems: stopped after ${problems.list.length}` });
  }
  const count = problems.list.length;
  const shown = problems.list
    .slice(0, 3)
    .map((p) => (p.field === undefined ? p.message : `${p.field}: ${p.message}`));
  const problemsText = `${count} problem${count === 1 ? "" : "s"}`;
  const more = count > 3 ? "; …" : "";
  const message = `Cannot accept patch: ${problemsText}: ${shown.join("; ")}${more}`;
  throw new SyncError("ERR_SYNC_INVALID_PATCH", message, { errors: problems.list });
}

function readPatch(body: unknown, maxObjects: number, problems: Problems): SyncPatch {
  if (!isJson(body)) {
    problems.add(undefined, `Expected a JSON object, got ${describe(body)}`);
    return {
      objects: EMPTY_OBJECTS,
      deleted_objects: NO_DELETIONS,
      serial: null,
      base_revision: null,
    };
  }
  for (const key of Object.keys(body)) {
    if (!TOP_LEVEL.includes(key)) {
      const message = "Unknown member: expected objects, deleted_objects, serial or base_revision";
      problems.add(memberPath(undefined, key), message);
    }
  }
  const objects = member(body, "objects");
  const deleted = member(body, "deleted_objects");
  if (objects === null && deleted === null) {
    problems.add("objects", "Expected objects or deleted_objects: both are missing or null");
  }
  const total = countObjects(objects) + countObjects(deleted);
  if (total > maxObjects) {
    // Reading a body far beyond the limit would only produce more problems.
    problems.add(undefined, `Too many objects: ${total}, at most ${maxObjects} per patch`);
    return {
      objects: EMPTY_OBJECTS,
      deleted_objects: NO_DELETIONS,
      serial: null,
      base_revision: null,
    };
  }
  return Object.freeze({
    objects: readObjects(objects, problems),
    deleted_objects: readDeleted(deleted, problems),
    serial: readSerial(member(body, "serial"), problems),
    base_revision: readBase(member(body, "base_revision"), problems),
  });
}

function readObjects(raw: unknown, problems: Problems): SyncObjects {
  if (raw === null) return EMPTY_OBJECTS;
  if (!isJson(raw)) {
    problems.add("objects", `Expected an object with me, messages and teams, got ${describe(raw)}`);
    return EMPTY_OBJECTS;
  }
  checkEntityNames(raw, "objects", problems);
  const me = member(raw, "me");
  let readMe: SyncObject | null = null;
  if (isJson(me)) readMe = readObject(ENTITIES.me, me, "objects.me", problems);
  else if (me !== null) problems.add("objects.me", `Expected an object, got ${describe(me)}`);
  return Object.freeze({
    me: readMe,
    messages: readList(ENTITIES.messages, member(raw, "messages"), "objects.messages", problems),
    teams: readList(ENTITIES.teams, member(raw, "teams"), "objects.teams", problems),
  });
}

function readList(
  entity: EntitySchema,
  raw: unknown,
  path: string,
  problems: Problems,
): readonly SyncObject[] {
  if (raw === null) return NONE;
  if (!Array.isArray(raw)) {
    problems.add(path, `Expected an array of objects, got ${describe(raw)}`);
    return NONE;
  }
  const list: SyncObject[] = [];
  raw.forEach((element: unknown, index) => {
    const at = `${path}[${index}]`;
    if (!isJson(element)) problems.add(at, `Expected an object, got ${describe(element)}`);
    else list.push(readObject(entity, element, at, problems));
  });
  return Object.freeze(list);
}

function readObject(entity: EntitySchema, raw: Json, path: string, problems: Problems): SyncObject {
  for (const key of Object.keys(raw)) {
    if (fieldOf(entity, key) === undefined) {
      problems.add(memberPath(path, key), `Unknown field of ${entity.name}`);
    }
  }
  const object: { [field: string]: FieldValue } = {};
  for (const field of entity.fields) {
    if (!Object.hasOwn(raw, field.name)) {
      // The key of a list entity is needed to tell which object this is; `me` has only one.
      if (field.name === entity.key && !entity.singleton) {
        problems.add(`${path}.${field.name}`, "Missing the key uuid");
      }
      continue;
    }
    const read = readField(field, raw[field.name]);
    if ("error" in read) problems.add(`${path}.${field.name}`, read.error);
    else object[field.name] = read.value;
  }
  return Object.freeze(object);
}

function readDeleted(raw: unknown, problems: Problems): SyncDeletedObjects {
  if (raw === null) return NO_DELETIONS;
  if (!isJson(raw)) {
    const got = describe(raw);
    problems.add("deleted_objects", `Expected an object with me, messages and teams, got ${got}`);
    return NO_DELETIONS;
  }
  checkEntityNames(raw, "deleted_objects", problems);
  const me = member(raw, "me");
  return Object.freeze({
    me: me === null ? null : (readKey(me, "deleted_objects.me", problems) ?? null),
    messages: readKeys(member(raw, "messages"), "deleted_objects.messages", problems),
    teams: readKeys(member(raw, "teams"), "deleted_objects.teams", problems),
  });
}

function readKeys(raw: unknown, path: string, problems: Problems): readonly string[] {
  if (raw === null) return NONE;
  if (!Array.isArray(raw)) {
    problems.add(path, `Expected an array of UUIDs or {"uuid": …} objects, got ${describe(raw)}`);
    return NONE;
  }
  const keys: string[] = [];
  raw.forEach((element: unknown, index) => {
    const key = readKey(element, `${path}[${index}]`, problems);
    if (key !== undefined) keys.push(key);
  });
  return Object.freeze(keys);
}

/** A deleted object's key: a bare UUID or `{"uuid": …}`, as the API allows both. */
function readKey(raw: unknown, path: string, problems: Problems): string | undefined {
  if (isUuid(raw)) return raw.toLowerCase();
  if (!isJson(raw)) {
    problems.add(path, `Expected a UUID or {"uuid": …}, got ${describe(raw)}`);
    return undefined;
  }
  let ok = true;
  for (const key of Object.keys(raw)) {
    if (key !== "uuid") {
      problems.add(memberPath(path, key), "Unknown key field: expected only uuid");
      ok = false;
    }
  }
  const uuid = Object.hasOwn(raw, "uuid") ? raw["uuid"] : undefined;
  if (!isUuid(uuid)) {
    problems.add(`${path}.uuid`, `Expected a UUID, got ${describe(uuid)}`);
    return undefined;
  }
  return ok ? uuid.toLowerCase() : undefined;
}

function readSerial(raw: unknown, problems: Problems): number | null {
  if (raw === null) return null;
  if (typeof raw === "number" && Number.isSafeInteger(raw) && raw >= 0) return raw;
  problems.add("serial", `Expected a non-negative integer or null, got ${describe(raw)}`);
  return null;
}

function readBase(raw: unknown, problems: Problems): string | null {
  if (raw === null) return null;
  if (isUuid(raw)) return raw.toLowerCase();
  problems.add("base_revision", `Expected a revision id (a UUID) or null, got ${describe(raw)}`);
  return null;
}

function checkEntityNames(raw: Json, path: string, problems: Problems): void {
  for (const key of Object.keys(raw)) {
    if (!isEntityName(key)) {
      problems.add(memberPath(path, key), "Unknown entity: expected me, messages or teams");
    }
  }
}

/** Objects and deletions a section holds, from lengths alone. */
function countObjects(section: unknown): number {
  if (!isJson(section)) return 0;
  let count = 0;
  for (const name of ["me", "messages", "teams"]) {
    const value = member(section, name);
    if (Array.isArray(value)) count += value.length;
    else if (value !== null) count++;
  }
  return count;
}

/** An own member of an object, undefined read as null. */
function member(object: Json, key: string): unknown {
  return Object.hasOwn(object, key) ? (object[key] ?? null) : null;
}

function isJson(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The path of a member: `a.b` for plain names, `a["…"]` (shortened) otherwise. */
function memberPath(path: string | undefined, key: string): string {
  if (NAME.test(key) && key.length <= 64) return path === undefined ? key : `${path}.${key}`;
  const quoted = JSON.stringify(key.length > 64 ? `${key.slice(0, 64)}…` : key);
  return `${path ?? ""}[${quoted}]`;
}
