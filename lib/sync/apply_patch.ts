import type { ObjectView, RevisionLog } from "./revision_log.ts";
import { ENTITIES, LIST_ENTITY_NAMES } from "./schema.ts";
import type { Change, EntityName, Revision, SyncObject, SyncPatch } from "./types.ts";
import { completeObject, sameObject } from "./_values.ts";

/**
 * Commits a patch that {@linkcode checkPatch} accepted as one revision:
 * objects are completed (defaults, current read-only values) and only those
 * that differ from the current ones become changes, with the deletions.
 * @param patch the checked patch
 * @param log the context's log
 * @returns the new revision, or undefined when the patch changes nothing (nothing is committed)
 * @throws {TypeError} when the patch could not have passed `checkPatch`: it deletes `me` or
 * an object that does not exist, or an object lacks a required field. Nothing is committed then.
 */
export function applyPatch(patch: SyncPatch, log: RevisionLog): Revision | undefined {
  const changes = patchChanges(patch, log);
  return changes.length === 0 ? undefined : log.commit(changes);
}

/**
 * The changes a checked patch makes to a log, without committing them: what
 * {@linkcode applyPatch} commits, and what a journal records.
 * @param patch the checked patch
 * @param log the context's log
 * @returns the changes, empty when the patch changes nothing
 * @throws {TypeError} as {@linkcode applyPatch}
 */
export function patchChanges(patch: SyncPatch, log: ObjectView): Change[] {
  const changes: Change[] = [];
  if (patch.deleted_objects.me !== null) {
    throw new TypeError("Cannot apply patch: it deletes me; check it first");
  }
  if (patch.objects.me !== null) push(changes, "me", patch.objects.me, log.me ?? undefined);
  for (const entity of LIST_ENTITY_NAMES) {
    for (const key of patch.deleted_objects[entity]) {
      if (log.get(entity, key) !== undefined) changes.push({ entity, key, value: null });
      else if (log.lastChange(entity, key) === undefined) {
        throw new TypeError(`Cannot apply patch: ${entity} ${key} does not exist; check it first`);
      }
    }
    for (const object of patch.objects[entity]) {
      const key = object["uuid"];
      push(changes, entity, object, typeof key === "string" ? log.get(entity, key) : undefined);
    }
  }
  return changes;
}

function push(
  changes: Change[],
  entity: EntityName,
  object: SyncObject,
  current: SyncObject | undefined,
): void {
  const { object: value, missing } = completeObject(ENTITIES[entity], object, current);
  const key = value["uuid"];
  if (missing.length > 0 || typeof key !== "string") {
    const lacks = missing.join(", ");
    throw new TypeError(`Cannot apply patch: a ${entity} object lacks ${lacks}; check it first`);
  }
  if (current === undefined || !sameObject(current, value)) changes.push({ entity, key, value });
}
