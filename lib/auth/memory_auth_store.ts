import type { ChangeSink } from "../storage/mod.ts";
import { usernameKey } from "./names.ts";
import type { AuthStore, TokenRecord, UserRecord } from "./types.ts";

/** A change to the auth state, as the journal records it. */
export type AuthChange =
  | { readonly op: "user"; readonly user: UserRecord }
  | { readonly op: "forget"; readonly uuid: string }
  | { readonly op: "token"; readonly token: TokenRecord }
  | { readonly op: "rotate"; readonly hash: string; readonly at: number }
  | { readonly op: "delete"; readonly hash: string }
  | { readonly op: "revoke"; readonly family: string };

/** The whole auth state, as a journal snapshot holds it. */
export interface AuthSnapshot {
  readonly users: readonly UserRecord[];
  readonly tokens: readonly TokenRecord[];
  readonly revokedFamilies: readonly string[];
}

/** Options of {@linkcode MemoryAuthStore}. */
export interface MemoryAuthStoreOptions {
  /**
   * Where each change goes before its call resolves (a journal makes the store durable).
   * @default nowhere: the state lives and dies with the process
   */
  readonly sink?: ChangeSink<AuthChange>;
}

/**
 * The in-memory {@linkcode AuthStore}: the embedded default. Given a sink (a
 * journal), every change is applied in memory at once, so that calls in the
 * same turn see it, and the call resolves once the sink has made it durable;
 * {@linkcode MemoryAuthStore.restore} rebuilds the store from a snapshot and
 * the changes after it.
 * @example
 * ```ts
 * const { journal, replay } = await Journal.open({ dir: "var", name: "auth" });
 * let store: MemoryAuthStore;
 * store = MemoryAuthStore.restore(replay.snapshot, replay.records, { sink: journalSink(journal, () => store.exportState()) });
 * ```
 */
export class MemoryAuthStore implements AuthStore {
  readonly #users = new Map<string, UserRecord>();
  readonly #byName = new Map<string, string>();
  readonly #tokens = new Map<string, TokenRecord>();
  readonly #revokedFamilies = new Set<string>();
  readonly #sink: ChangeSink<AuthChange> | undefined;

  /**
   * Creates an empty store.
   * @param options where changes go to be durable
   */
  constructor(options: MemoryAuthStoreOptions = {}) {
    this.#sink = options.sink;
  }

  /**
   * Rebuilds a store from a snapshot and the changes recorded after it.
   * @param snapshot an {@linkcode AuthSnapshot}, or undefined for none
   * @param changes the {@linkcode AuthChange}s after it, oldest first
   * @param options where new changes go
   * @returns the store
   * @throws {TypeError} when the snapshot or a change is not one this store wrote
   */
  static restore(
    snapshot: unknown,
    changes: readonly unknown[],
    options: MemoryAuthStoreOptions = {},
  ): MemoryAuthStore {
    const store = new MemoryAuthStore(options);
    if (snapshot !== undefined) {
      const state = snapshot as Partial<AuthSnapshot>;
      if (
        !Array.isArray(state.users) || !Array.isArray(state.tokens) ||
        !Array.isArray(state.revokedFamilies)
      ) {
        throw new TypeError("Cannot restore the auth store: the snapshot is not one it wrote");
      }
      for (const user of state.users) store.#apply({ op: "user", user });
      for (const token of state.tokens) store.#apply({ op: "token", token });
      for (const family of state.revokedFamilies) store.#apply({ op: "revoke", family });
    }
    for (const change of changes) store.#apply(checkChange(change));
    return store;
  }

  /**
   * The whole state, for a journal's snapshot.
   * @returns the users, tokens and revoked families
   */
  exportState(): AuthSnapshot {
    return {
      users: [...this.#users.values()],
      tokens: [...this.#tokens.values()],
      revokedFamilies: [...this.#revokedFamilies],
    };
  }

  createUser(user: UserRecord): Promise<boolean> {
    if (this.#byName.has(usernameKey(user.username)) || this.#users.has(user.uuid)) {
      return Promise.resolve(false);
    }
    return this.#change({ op: "user", user }).then(() => true);
  }

  userByName(username: string): Promise<UserRecord | undefined> {
    const uuid = this.#byName.get(usernameKey(username));
    return Promise.resolve(uuid === undefined ? undefined : this.#users.get(uuid));
  }

  userById(uuid: string): Promise<UserRecord | undefined> {
    return Promise.resolve(this.#users.get(uuid));
  }

  deleteUser(uuid: string): Promise<void> {
    if (!this.#users.has(uuid)) return Promise.resolve();
    return this.#change({ op: "forget", uuid });
  }

  putToken(token: TokenRecord): Promise<void> {
    return this.#change({ op: "token", token });
  }

  token(hash: string): Promise<TokenRecord | undefined> {
    return Promise.resolve(this.#tokens.get(hash));
  }

  liveToken(hash: string, now: number): Promise<TokenRecord | undefined> {
    const token = this.#tokens.get(hash);
    const live = token !== undefined && token.expiresAt > now && token.rotatedAt === null &&
      (token.familyId === null || !this.#revokedFamilies.has(token.familyId));
    return Promise.resolve(live ? token : undefined);
  }

  rotate(hash: string, at: number): Promise<boolean> {
    const token = this.#tokens.get(hash);
    if (token === undefined || token.rotatedAt !== null) return Promise.resolve(false);
    return this.#change({ op: "rotate", hash, at }).then(() => true);
  }

  deleteToken(hash: string): Promise<void> {
    if (!this.#tokens.has(hash)) return Promise.resolve();
    return this.#change({ op: "delete", hash });
  }

  revokeFamily(familyId: string): Promise<void> {
    if (this.#revokedFamilies.has(familyId)) return Promise.resolve();
    return this.#change({ op: "revoke", family: familyId });
  }

  isFamilyRevoked(familyId: string): Promise<boolean> {
    return Promise.resolve(this.#revokedFamilies.has(familyId));
  }

  /** Drops expired tokens (not journaled: a replay followed by the next sweep comes to the same state). */
  sweep(now: number): Promise<void> {
    const live = new Set<string>();
    for (const [hash, token] of this.#tokens) {
      if (token.expiresAt <= now) this.#tokens.delete(hash);
      else if (token.familyId !== null) live.add(token.familyId);
    }
    // A revoked family is remembered while any of its tokens could still be presented.
    for (const family of this.#revokedFamilies) {
      if (!live.has(family)) this.#revokedFamilies.delete(family);
    }
    return Promise.resolve();
  }

  /** Applies a change at once (later calls see it) and resolves once the sink has it. */
  #change(change: AuthChange): Promise<void> {
    this.#apply(change);
    return this.#sink === undefined ? Promise.resolve() : this.#sink.record(change);
  }

  #apply(change: AuthChange): void {
    switch (change.op) {
      case "user":
        this.#users.set(change.user.uuid, change.user);
        this.#byName.set(usernameKey(change.user.username), change.user.uuid);
        return;
      case "forget": {
        const user = this.#users.get(change.uuid);
        if (user === undefined) return;
        this.#users.delete(change.uuid);
        this.#byName.delete(usernameKey(user.username));
        for (const [hash, token] of this.#tokens) {
          if (token.userId === change.uuid) this.#tokens.delete(hash);
        }
        return;
      }
      case "token":
        this.#tokens.set(change.token.hash, change.token);
        return;
      case "rotate": {
        const token = this.#tokens.get(change.hash);
        if (token !== undefined) this.#tokens.set(change.hash, { ...token, rotatedAt: change.at });
        return;
      }
      case "delete":
        this.#tokens.delete(change.hash);
        return;
      case "revoke":
        this.#revokedFamilies.add(change.family);
        return;
    }
  }
}

const OPS = new Set(["user", "forget", "token", "rotate", "delete", "revoke"]);

function checkChange(value: unknown): AuthChange {
  if (
    typeof value !== "object" || value === null || !OPS.has(String((value as { op?: unknown }).op))
  ) {
    throw new TypeError("Cannot restore the auth store: a change is not one it wrote");
  }
  return value as AuthChange;
}
