// The answers a context's data makes, built the same way from a log in
// memory and from rows of a database: a snapshot from the objects at a
// revision, a diff from what the changes after the base did to each key.
import type { Revision, SyncData, SyncDiff, SyncObject } from "./types.ts";
import { formatTimestamp } from "./_time.ts";

/** One value per entity: `me`, `messages`, `teams`. */
export type Tables<T> = readonly [T, T, T];

/** What a diff learned of a key: whether it existed at the base, and its value at the target. */
export interface Seen {
  readonly existed: boolean;
  value: SyncObject | null;
}

/**
 * A snapshot of the objects at a revision, lists sorted by key.
 * @param revision the revision
 * @param state the objects of each entity by key
 * @returns the snapshot, frozen
 */
export function buildSnapshot(
  revision: Revision,
  state: Tables<ReadonlyMap<string, SyncObject>>,
): SyncData {
  const [me, messages, teams] = state;
  return Object.freeze({
    revision: revision.uuid,
    serial: revision.serial,
    created_at: formatTimestamp(revision.createdAt),
    objects: Object.freeze({
      me: firstValue(me),
      messages: Object.freeze([...messages].sort(byKey).map((entry) => entry[1])),
      teams: Object.freeze([...teams].sort(byKey).map((entry) => entry[1])),
    }),
  });
}

/**
 * A diff from what the changes after its base did to each key: objects that
 * exist at the target, and the keys that existed at the base and no longer do.
 * @param base the base revision's id
 * @param revision the target revision
 * @param seen per entity and key, whether it existed at the base and its value at the target
 * @returns the diff, frozen
 */
export function buildDiff(
  base: string,
  revision: Revision,
  seen: Tables<ReadonlyMap<string, Seen>>,
): SyncDiff {
  let me: SyncObject | null = null;
  let deletedMe: string | null = null;
  for (const [key, entry] of seen[0]) {
    if (entry.value !== null) me = entry.value;
    else if (entry.existed) deletedMe = key;
  }
  const messages = splitSeen(seen[1]);
  const teams = splitSeen(seen[2]);
  return Object.freeze({
    base_revision: base,
    revision: revision.uuid,
    serial: revision.serial,
    created_at: formatTimestamp(revision.createdAt),
    deleted_objects: Object.freeze({
      me: deletedMe,
      messages: messages.deleted,
      teams: teams.deleted,
    }),
    objects: Object.freeze({ me, messages: messages.objects, teams: teams.objects }),
  });
}

/** The one value of a map, or null. */
export function firstValue(map: ReadonlyMap<string, SyncObject>): SyncObject | null {
  const first = map.values().next();
  return first.done === true ? null : first.value;
}

function byKey<T>(a: readonly [string, T], b: readonly [string, T]): number {
  return a[0] < b[0] ? -1 : 1;
}

function splitSeen(
  seen: ReadonlyMap<string, Seen>,
): { objects: readonly SyncObject[]; deleted: readonly string[] } {
  const objects: SyncObject[] = [];
  const deleted: string[] = [];
  for (const [key, entry] of [...seen].sort(byKey)) {
    if (entry.value !== null) objects.push(entry.value);
    else if (entry.existed) deleted.push(key);
  }
  return { objects: Object.freeze(objects), deleted: Object.freeze(deleted) };
}
