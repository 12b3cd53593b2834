import type { SyncData, SyncDiff, SyncObject } from "./types.ts";

/**
 * Applies a diff to the snapshot of its base revision, as a client does:
 * deleted keys are removed, changed objects replace or join the others, and
 * `me` is replaced when the diff carries one.
 * @param data the snapshot of `diff.base_revision`
 * @param diff the diff
 * @returns the snapshot of `diff.revision`, lists sorted by `uuid`
 * @throws {TypeError} when the diff does not start at the snapshot's revision
 * @example
 * ```ts
 * const current = applyDiff(snapshotAtBase, diff); // what a snapshot at diff.revision holds
 * ```
 */
export function applyDiff(data: SyncData, diff: SyncDiff): SyncData {
  if (diff.base_revision !== data.revision) {
    const from = diff.base_revision;
    throw new TypeError(`Cannot apply diff: it starts at ${from}, not at ${data.revision}`);
  }
  let me = data.objects.me;
  if (me !== null && diff.deleted_objects.me === me["uuid"]) me = null;
  return Object.freeze({
    revision: diff.revision,
    serial: diff.serial,
    created_at: diff.created_at,
    objects: Object.freeze({
      me: diff.objects.me ?? me,
      messages: merge(data.objects.messages, diff.deleted_objects.messages, diff.objects.messages),
      teams: merge(data.objects.teams, diff.deleted_objects.teams, diff.objects.teams),
    }),
  });
}

function merge(
  objects: readonly SyncObject[],
  deleted: readonly string[],
  changed: readonly SyncObject[],
): readonly SyncObject[] {
  const byKey = new Map<unknown, SyncObject>();
  for (const object of objects) byKey.set(object["uuid"], object);
  for (const key of deleted) byKey.delete(key);
  for (const object of changed) byKey.set(object["uuid"], object);
  const list = [...byKey.values()];
  return Object.freeze(list.sort((a, b) => (String(a["uuid"]) < String(b["uuid"]) ? -1 : 1)));
}
