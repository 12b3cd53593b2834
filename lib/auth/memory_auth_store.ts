import type { AuthStore, TokenRecord, UserRecord } from "./types.ts";

/** The in-memory {@linkcode AuthStore}: the embedded default. */
export class MemoryAuthStore implements AuthStore {
  readonly #users = new Map<string, UserRecord>();
  readonly #byName = new Map<string, string>();
  readonly #tokens = new Map<string, TokenRecord>();
  readonly #revokedFamilies = new Set<string>();

  createUser(user: UserRecord): Promise<boolean> {
    const name = user.username.toLowerCase();
    if (this.#byName.has(name) || this.#users.has(user.uuid)) return Promise.resolve(false);
    this.#users.set(user.uuid, user);
    this.#byName.set(name, user.uuid);
    return Promise.resolve(true);
  }

  userByName(username: string): Promise<UserRecord | undefined> {
    const uuid = this.#byName.get(username.toLowerCase());
    return Promise.resolve(uuid === undefined ? undefined : this.#users.get(uuid));
  }

  userById(uuid: string): Promise<UserRecord | undefined> {
    return Promise.resolve(this.#users.get(uuid));
  }

  putToken(token: TokenRecord): Promise<void> {
    this.#tokens.set(token.hash, token);
    return Promise.resolve();
  }

  token(hash: string): Promise<TokenRecord | undefined> {
    return Promise.resolve(this.#tokens.get(hash));
  }

  rotate(hash: string, at: number): Promise<boolean> {
    const token = this.#tokens.get(hash);
    if (token === undefined || token.rotatedAt !== null) return Promise.resolve(false);
    this.#tokens.set(hash, { ...token, rotatedAt: at });
    return Promise.resolve(true);
  }

  deleteToken(hash: string): Promise<void> {
    this.#tokens.delete(hash);
    return Promise.resolve();
  }

  revokeFamily(familyId: string): Promise<void> {
    this.#revokedFamilies.add(familyId);
    return Promise.resolve();
  }

  isFamilyRevoked(familyId: string): Promise<boolean> {
    return Promise.resolve(this.#revokedFamilies.has(familyId));
  }

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
}
