// An account is a user (the token service's) and a sync context (the sync
// service's): how the app makes both at a sign-up, and completes an account
// that a crash in an earlier version left with a user and no context.
import type { AuthStore, UserRecord } from "../auth/mod.ts";
import type { SqlClient, SqlPool } from "../storage/mod.ts";
import type { SyncStore, SyncUser } from "../sync/mod.ts";

/** What the sync context of a user holds of the user. */
function syncUserOf(user: UserRecord): SyncUser {
  return { uuid: user.uuid, username: user.username, notifyLanguage: user.notifyLanguage };
}

/**
 * Writes a new account on stores that cannot share a write (the journals of
 * `STATE_DIR`, memory, stores a host gave): the sync context first, then the
 * user. A crash between leaves a context nobody can reach (no user names its
 * uuid), never a user without a context; a name taken meanwhile has its
 * context deleted again.
 * @param auth the users
 * @param sync the contexts
 * @returns the token service's `register`
 */
export function registerInOrder(
  auth: AuthStore,
  sync: SyncStore,
): (user: UserRecord) => Promise<boolean> {
  return async (user) => {
    // A name already taken makes no context.
    if ((await auth.userByName(user.username)) !== undefined) return false;
    await sync.createContext(syncUserOf(user));
    if (await auth.createUser(user)) return true;
    await sync.deleteContext(user.uuid);
    return false;
  };
}

/** What {@linkcode registerInOneTransaction} needs of the PostgreSQL stores: their statements on a given client. */
export interface TransactionalStores {
  readonly auth: { createUserIn(db: SqlClient, user: UserRecord): Promise<boolean> };
  readonly sync: { createContextIn(db: SqlClient, user: SyncUser): Promise<boolean> };
}

/**
 * Writes a new account in PostgreSQL in one transaction: the user and its
 * sync context are both there, or neither.
 * @param pool the database both stores use
 * @param stores the stores
 * @returns the token service's `register`
 */
export function registerInOneTransaction(
  pool: SqlPool,
  stores: TransactionalStores,
): (user: UserRecord) => Promise<boolean> {
  return (user) =>
    pool.transaction(async (db) => {
      if (!(await stores.auth.createUserIn(db, user))) return false;
      await stores.sync.createContextIn(db, syncUserOf(user));
      return true;
    });
}

/**
 * Makes the sync context of a user who has none (an account an earlier
 * version left half-made): the sync service's `completeContext`.
 * @param auth the users
 * @param sync the contexts
 * @returns whether a context was made (false: no such user)
 */
export function completeContextFrom(
  auth: AuthStore,
  sync: SyncStore,
): (owner: string) => Promise<boolean> {
  return async (owner) => {
    const user = await auth.userById(owner);
    if (user === undefined) return false;
    await sync.createContext(syncUserOf(user));
    return true;
  };
}
