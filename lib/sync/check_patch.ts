import type { ObjectView } from "./revision_log.ts";
import { ENTITIES, LIST_ENTITY_NAMES } from "./schema.ts";
import type {
  EntityName,
  ErrorLevel,
  ErrorMessage,
  ErrorMessageCode,
  ListEntityName,
  ObjectErrors,
  SyncObject,
  SyncPatch,
} from "./types.ts";
import { completeObject } from "./_values.ts";

/** The user a patch is submitted by. */
export interface PatchUser {
  readonly uuid: string;
  readonly username: string;
}

type Section = ObjectErrors["section"];

/** A level and code of the reference API's error list. */
interface Kind {
  readonly level: ErrorLevel;
  readonly code: ErrorMessageCode;
}
const INPUT_DATA: Kind = { level: "dev_error", code: "input_data" };
const ACCESS_DENIED: Kind = { level: "user_error", code: "access_denied" };
const NOT_FOUND: Kind = { level: "user_error", code: "object_not_found" };
const INPUT: Kind = { level: "user_error", code: "input" };

/** Gathers messages by object and attribute, in the order first reported, each once. */
class Report {
  readonly #entries = new Map<string, { errors: ObjectErrors; messages: ErrorMessage[] }>();

  add(
    section: Section,
    entity: EntityName,
    key: string | null,
    attribute: string | null,
    kind: Kind,
    message: string,
  ): void {
    const { level, code } = kind;
    const id = JSON.stringify([section, entity, key, attribute]);
    let entry = this.#entries.get(id);
    if (entry === undefined) {
      const messages: ErrorMessage[] = [];
      const keyFields = key === null ? null : { uuid: key };
      const errors = { section, entity, key: keyFields, attribute, messages };
      entry = { errors, messages };
      this.#entries.set(id, entry);
    }
    const same = (m: ErrorMessage): boolean =>
      m.code === code && m.level === level && m.message === message;
    if (!entry.messages.some(same)) {
      entry.messages.push({ level, code, message });
    }
  }

  list(): ObjectErrors[] {
    return [...this.#entries.values()].map((entry) => entry.errors);
  }
}

/** An object a patch names that changed after the patch's base: who changed it is `serial`. */
export interface Conflict {
  readonly section: Section;
  readonly entity: EntityName;
  /** The object's key; null for `me`. */
  readonly key: string | null;
  readonly serial: number;
}

/**
 * Finds what makes a patch with a base revision a conflict (optimistic
 * concurrency): every object it writes or deletes that some revision after
 * the base changed. Costs the objects of the patch.
 * @param patch the patch
 * @param view the current objects, with the serial of each one's last change
 * @param base the serial of the patch's base revision
 * @returns the conflicts, in the patch's order; empty when the patch may go on
 */
export function findConflicts(patch: SyncPatch, view: ObjectView, base: number): Conflict[] {
  const conflicts: Conflict[] = [];
  const look = (section: Section, entity: EntityName, key: string | null, lookup: string): void => {
    const serial = view.lastChange(entity, lookup);
    if (serial !== undefined && serial > base) conflicts.push({ section, entity, key, serial });
  };
  const me = view.me?.["uuid"];
  if (patch.objects.me !== null && typeof me === "string") look("objects", "me", null, me);
  for (const entity of LIST_ENTITY_NAMES) {
    for (const object of patch.objects[entity]) {
      const key = object["uuid"];
      if (typeof key === "string") look("objects", entity, key, key);
    }
    for (const key of patch.deleted_objects[entity]) look("deleted_objects", entity, key, key);
  }
  return conflicts;
}

/**
 * The ticket errors of conflicts: `user_error` / `conflict` per object, with
 * the revision that changed it.
 * @param conflicts from {@linkcode findConflicts}
 * @param revisionOf the id of the revision of a serial
 * @returns the errors
 */
export function conflictErrors(
  conflicts: readonly Conflict[],
  revisionOf: (serial: number) => string,
): ObjectErrors[] {
  return conflicts.map(({ section, entity, key, serial }) => {
    const revision = revisionOf(serial);
    return {
      section,
      entity,
      key: key === null ? null : { uuid: key },
      attribute: null,
      messages: [{
        level: "user_error",
        code: "conflict",
        message:
          `Changed by revision ${revision} after the patch's base revision: nothing of the patch was applied; fetch the changes and send it again`,
        revision,
      }],
    };
  });
}

/**
 * The ticket error of a patch whose base revision cannot be checked against:
 * expired (past the retention) or never issued to this user.
 * @param base the base revision's id
 * @param why which
 * @returns the errors (one)
 */
export function baseErrors(base: string, why: "expired" | "unknown"): ObjectErrors[] {
  const message = why === "expired"
    ? `Cannot check the patch against base revision ${base}: it is past the retention window; take a snapshot and send the patch again`
    : `Cannot check the patch against base revision ${base}: it was never issued to this user`;
  return [{
    section: "objects",
    entity: "me",
    key: null,
    attribute: "base_revision",
    messages: [
      why === "expired"
        ? { level: "user_error", code: "conflict", message }
        : { level: "dev_error", code: "input_data", message },
    ],
  }];
}

/**
 * Checks a parsed patch against the current data and the rules of the user
 * context. Objects of a patch are complete: an absent field takes its default
 * (or, when read-only, keeps its current value), so an object lacking a
 * required field is an error whether it is new or not. Rules:
 *
 * - `me.uuid` is not the user's own: `user_error` / `access_denied`;
 * - a read-only field (`me.username`) differs from its value: `user_error` / `input`;
 * - `deleted_objects.me` is set to another uuid than the user's (the user's own deletes the account before any patch is queued): `user_error` / `access_denied`;
 * - a deleted message or team never existed: `user_error` / `object_not_found` (one deleted already is left as it is);
 * - a team the patch makes active (new, renamed or unarchived) shares its name, in any
 *   case, with another non-archived team: `user_error` / `input`;
 * - an object lacks a required field: `dev_error` / `input_data`;
 * - a key is listed twice in a section, or in both sections: `dev_error` / `input_data`.
 *
 * @param patch the patch from {@linkcode parsePatch}
 * @param log the context's log, read for the current data
 * @param user the user submitting it
 * @returns the errors (the ticket's `errors`), grouped by object and attribute; empty when
 * the patch may be applied
 */
export function checkPatch(patch: SyncPatch, log: ObjectView, user: PatchUser): ObjectErrors[] {
  const report = new Report();
  checkMe(patch, log, user, report);
  for (const entity of LIST_ENTITY_NAMES) checkList(entity, patch, log, report);
  checkTeamNames(patch, log, report);
  return report.list();
}

function checkMe(patch: SyncPatch, log: ObjectView, user: PatchUser, report: Report): void {
  const me = patch.objects.me;
  if (me !== null) {
    const current = log.me ?? undefined;
    if (Object.hasOwn(me, "uuid") && me["uuid"] !== user.uuid) {
      const message = "Cannot change another user's profile";
      report.add("objects", "me", null, "uuid", ACCESS_DENIED, message);
    } else {
      checkReadOnly("me", me, current, null, report);
    }
    for (const field of completeObject(ENTITIES.me, me, current).missing) {
      report.add("objects", "me", null, field, INPUT_DATA, `Missing the required field ${field}`);
    }
  }
  if (patch.deleted_objects.me !== null) {
    const message = "Cannot delete another user's account";
    report.add("deleted_objects", "me", null, null, ACCESS_DENIED, message);
  }
}

function checkList(
  entity: ListEntityName,
  patch: SyncPatch,
  log: ObjectView,
  report: Report,
): void {
  const deleted = new Set<string>();
  for (const key of patch.deleted_objects[entity]) {
    if (deleted.has(key)) {
      const message = "Listed more than once in deleted_objects";
      report.add("deleted_objects", entity, key, null, INPUT_DATA, message);
    } else if (log.get(entity, key) === undefined && log.lastChange(entity, key) === undefined) {
      // Deleted already (a retry): nothing to do. Never there: an error.
      const message = "Cannot delete: there is no such object";
      report.add("deleted_objects", entity, key, null, NOT_FOUND, message);
    }
    deleted.add(key);
  }
  const seen = new Set<string>();
  for (const object of patch.objects[entity]) {
    const key = object["uuid"];
    if (typeof key !== "string") {
      report.add("objects", entity, null, "uuid", INPUT_DATA, "Missing the key uuid");
      continue;
    }
    if (seen.has(key)) {
      report.add("objects", entity, key, null, INPUT_DATA, "Listed more than once in objects");
    }
    seen.add(key);
    if (deleted.has(key)) {
      const message = "Listed in both objects and deleted_objects";
      report.add("objects", entity, key, null, INPUT_DATA, message);
    }
    const current = log.get(entity, key);
    checkReadOnly(entity, object, current, key, report);
    for (const field of completeObject(ENTITIES[entity], object, current).missing) {
      report.add("objects", entity, key, field, INPUT_DATA, `Missing the required field ${field}`);
    }
  }
}

/** A read-only field may be sent only with its current value. */
function checkReadOnly(
  entity: EntityName,
  object: SyncObject,
  current: SyncObject | undefined,
  key: string | null,
  report: Report,
): void {
  for (const field of ENTITIES[entity].fields) {
    const name = field.name;
    if (!field.readOnly || current === undefined || !Object.hasOwn(object, name)) continue;
    if (object[name] !== current[name]) {
      report.add("objects", entity, key, name, INPUT, `Cannot change ${name}: it is read-only`);
    }
  }
}

/**
 * Names of non-archived teams are unique regardless of case, in the data as
 * the patch would leave it. Only teams the patch makes active under a name
 * (new, renamed or unarchived) answer for a clash: a clash made before is
 * not the patch's fault.
 */
function checkTeamNames(patch: SyncPatch, log: ObjectView, report: Report): void {
  const sent = patch.objects.teams;
  if (sent.length === 0) return;
  const replaced = new Set<unknown>(patch.deleted_objects.teams);
  const counts = new Map<string, number>();
  const count = (name: string): void => void counts.set(name, (counts.get(name) ?? 0) + 1);
  const candidates: { key: string; name: string }[] = [];
  for (const object of sent) {
    const key = object["uuid"];
    if (typeof key !== "string") continue;
    replaced.add(key);
    const current = log.get("teams", key);
    const name = activeName(completeObject(ENTITIES.teams, object, current).object);
    if (name === undefined) continue;
    count(name);
    if (current === undefined || activeName(current) !== name) candidates.push({ key, name });
  }
  for (const team of log.objects("teams")) {
    const name = activeName(team);
    if (!replaced.has(team["uuid"]) && name !== undefined) count(name);
  }
  for (const candidate of candidates) {
    if (Number(counts.get(candidate.name)) > 1) {
      const message = "Cannot use this name: another team has it";
      report.add("objects", "teams", candidate.key, "name", INPUT, message);
    }
  }
}

/** The lower-cased name of a team that is not archived. */
function activeName(team: SyncObject): string | undefined {
  const name = team["name"];
  return team["archived"] !== true && typeof name === "string" ? name.toLowerCase() : undefined;
}
