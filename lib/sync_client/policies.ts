import type {
  ConflictPolicy,
  SyncConflict,
  SyncEntities,
  SyncEntityName,
  SyncFieldValue,
} from "./types.ts";

/**
 * The conflict policy that keeps the server's object: the local write is
 * dropped, and the local copy shows what the other device wrote.
 * @param _conflict the conflict
 * @returns undefined: the server's object stays
 * @example
 * ```ts
 * const client = createSyncClient({ baseUrl, clientId: "my-app", onConflict: serverWins });
 * ```
 */
export function serverWins(_conflict: SyncConflict): undefined {
  return undefined;
}

/**
 * The conflict policy that keeps the local write: it is sent again on the
 * server's new revision, replacing (or deleting) what the other device wrote.
 * @param conflict the conflict
 * @returns the local object, or null when the local write deletes it
 * @example
 * ```ts
 * const client = createSyncClient({ baseUrl, clientId: "my-app", onConflict: localWins });
 * ```
 */
export function localWins(conflict: SyncConflict): SyncEntities[SyncEntityName] | null {
  return conflict.local;
}

/** A field-by-field merge of a local object and the server's. */
export type MergeFunction = (
  local: { readonly [field: string]: SyncFieldValue },
  server: { readonly [field: string]: SyncFieldValue },
  conflict: SyncConflict,
) => { readonly [field: string]: SyncFieldValue };

/**
 * A conflict policy that merges: `fn` gets both objects when both exist and
 * gives the one to keep (its `uuid` is kept whatever it says). A deletion on
 * either side wins: deleted on the server, it stays deleted; deleted
 * locally, the deletion is sent again.
 * @param fn the merge of a local object and the server's
 * @returns the policy
 * @example
 * ```ts
 * // Each device edits other fields: keep the server's, then the fields this device changed.
 * const onConflict = merge((local, server) => ({ ...server, read: local["read"] === true || server["read"] === true }));
 * const client = createSyncClient({ baseUrl, clientId: "my-app", onConflict });
 * ```
 */
export function merge(fn: MergeFunction): ConflictPolicy {
  return (conflict) => {
    if (conflict.server === null) return undefined;
    if (conflict.local === null) return null;
    const merged = fn(fieldsOf(conflict.local), fieldsOf(conflict.server), conflict);
    // The caller's object carries whatever fields fn chose; the client checks them as it checks `put`.
    return { ...merged, uuid: conflict.uuid } as SyncEntities[SyncEntityName];
  };
}

/** An object's fields, as a record. */
function fieldsOf(object: object): { readonly [field: string]: SyncFieldValue } {
  const fields: { [field: string]: SyncFieldValue } = {};
  for (const [field, value] of Object.entries(object)) {
    if (value === null || typeof value === "string" || typeof value === "boolean") {
      fields[field] = value;
    }
  }
  return fields;
}
