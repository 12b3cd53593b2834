/** A registered user. */
export interface UserRecord {
  readonly uuid: string;
  readonly username: string;
  /** From `hashPassword`. */
  readonly passwordHash: string;
  readonly notifyLanguage: string | null;
  /** Epoch milliseconds. */
  readonly createdAt: number;
}

/** An issued token, stored under its hash. */
export interface TokenRecord {
  /** SHA-256 (hex) of the token. */
  readonly hash: string;
  readonly kind: "access" | "refresh";
  readonly clientId: string;
  /** The user the token acts for; null for a client's own token. */
  readonly userId: string | null;
  readonly scope: readonly string[];
  /** Epoch milliseconds. */
  readonly issuedAt: number;
  /** Epoch milliseconds. */
  readonly expiresAt: number;
  /** The refresh-token family (one login); null for client tokens. */
  readonly familyId: string | null;
  /** For a refresh token: when it was exchanged for a new one; presenting it again is reuse. */
  readonly rotatedAt: number | null;
}

/**
 * Where users and tokens live. In memory by default; a shared database can
 * implement the same interface.
 */
export interface AuthStore {
  /** Adds a user unless the name is taken (names are one user when their `usernameKey`s are equal); returns whether it was added. */
  createUser(user: UserRecord): Promise<boolean>;
  /** The user whose name has the `usernameKey` of `username`. */
  userByName(username: string): Promise<UserRecord | undefined>;
  userById(uuid: string): Promise<UserRecord | undefined>;
  /** Deletes a user and every token issued for the user (the account is deleted); the name is free again. */
  deleteUser(uuid: string): Promise<void>;
  putToken(token: TokenRecord): Promise<void>;
  token(hash: string): Promise<TokenRecord | undefined>;
  /**
   * A token that may be used now: known, not expired at `now`, not rotated,
   * its family not revoked (one look-up, as every authenticated request makes it).
   */
  liveToken(hash: string, now: number): Promise<TokenRecord | undefined>;
  /**
   * Marks a refresh token rotated, only if it was not yet: returns false when it already was
   * (two refreshes racing; the loser is a reuse).
   */
  rotate(hash: string, at: number): Promise<boolean>;
  deleteToken(hash: string): Promise<void>;
  revokeFamily(familyId: string): Promise<void>;
  isFamilyRevoked(familyId: string): Promise<boolean>;
  /** Drops tokens expired before `now`. */
  sweep(now: number): Promise<void>;
}

/**
 * Whose credentials an attempt presents: a user's password (`name` is the
 * user name's `usernameKey`) or a client's secret (`name` is the client id).
 */
export interface LoginSubject {
  readonly kind: "user" | "client";
  readonly name: string;
}

/**
 * Counts failed password logins and client authentications against the
 * name, the client address and the pair, and says how long to wait past the
 * limits: in memory (`LoginThrottle`) or shared by processes
 * (`PostgresLoginThrottle`). An address where the name succeeded lately is
 * known: guesses from elsewhere never slow it.
 */
export interface LoginLimiter {
  /**
   * Counts an attempt (as failed, until it succeeds).
   * @returns the seconds to wait instead, when a limit is reached; 0 when the attempt is counted
   */
  start(subject: LoginSubject, address: string): number | Promise<number>;
  /**
   * How long an attempt would wait now, counting nothing: for a check that
   * is over at once (a client secret's hash compared), which counts only a
   * failure, with `start` once the secret proved wrong.
   * @returns the seconds to wait; 0 when an attempt may go on
   */
  check(subject: LoginSubject, address: string): number | Promise<number>;
  /**
   * Forgets the pair's failures, takes this attempt back from the other
   * counts (unless it was not counted: `counted: false`, after `check`), and
   * remembers the address as known for the name: the attempt succeeded.
   */
  succeed(
    subject: LoginSubject,
    address: string,
    options?: { readonly counted?: boolean },
  ): void | Promise<void>;
}
