import type { SqlPool } from "../storage/mod.ts";
import { usernameKey } from "./names.ts";
import type { AuthStore, TokenRecord, UserRecord } from "./types.ts";

/**
 * The auth domain's tables, one migration a version: released steps are
 * never edited, a change is a new step.
 */
export const AUTH_MIGRATIONS: readonly string[] = [
  `CREATE TABLE auth_users (
     uuid uuid PRIMARY KEY,
     username text NOT NULL,
     username_key text NOT NULL UNIQUE,
     password_hash text NOT NULL,
     notify_language text,
     created_at bigint NOT NULL);
   CREATE TABLE auth_tokens (
     hash text PRIMARY KEY,
     kind text NOT NULL,
     client_id text NOT NULL,
     user_id uuid,
     scope text[] NOT NULL,
     issued_at bigint NOT NULL,
     expires_at bigint NOT NULL,
     family_id text,
     rotated_at bigint);
   CREATE INDEX auth_tokens_expires_at ON auth_tokens (expires_at);
   CREATE INDEX auth_tokens_family_id ON auth_tokens (family_id);
   CREATE TABLE auth_revoked_families (family_id text PRIMARY KEY);
   CREATE TABLE auth_login_attempts (key text NOT NULL, at bigint NOT NULL);
   CREATE INDEX auth_login_attempts_key_at ON auth_login_attempts (key, at);`,
  // 2: deleting an account deletes its tokens through this index, not a scan.
  `CREATE INDEX auth_tokens_user_id ON auth_tokens (user_id);`,
];

/** Rows removed at most by one statement of a sweep, so that a sweep never holds locks for long. */
const SWEEP_BATCH = 5000;

interface UserRow {
  uuid: string;
  username: string;
  password_hash: string;
  notify_language: string | null;
  created_at: string;
}

interface TokenRow {
  hash: string;
  kind: "access" | "refresh";
  client_id: string;
  user_id: string | null;
  scope: string[];
  issued_at: string;
  expires_at: string;
  family_id: string | null;
  rotated_at: string | null;
}

/**
 * The {@linkcode AuthStore} on PostgreSQL (`DATABASE_URL`): users, token
 * hashes and revoked refresh-token families in tables every process shares,
 * so that a token issued by one is accepted by another and a name taken on
 * one is taken on all. Names are unique without regard to case. Sweeps delete
 * in bounded batches.
 * @example
 * ```ts
 * const pool = await connectPostgres(process.env.DATABASE_URL);
 * await migrate(pool, "auth", AUTH_MIGRATIONS);
 * const store = new PostgresAuthStore(pool);
 * ```
 */
export class PostgresAuthStore implements AuthStore {
  readonly #db: SqlPool;
  readonly #defer: (run: () => void) => void;
  /** Tokens issued in this turn of the event loop, written together by one statement. */
  #pending: { token: TokenRecord; done: (error?: unknown) => void }[] = [];

  /**
   * Uses a pool whose database has the auth tables (see {@linkcode AUTH_MIGRATIONS}).
   * @param db the pool
   * @param options when the tokens of a turn are written
   */
  constructor(db: SqlPool, options: { defer?: (run: () => void) => void } = {}) {
    this.#db = db;
    this.#defer = options.defer ?? ((run) => setImmediate(run));
  }

  async createUser(user: UserRecord): Promise<boolean> {
    const { rowCount } = await this.#db.query(
      `INSERT INTO auth_users (uuid, username, username_key, password_hash, notify_language, created_at)
       VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`,
      [user.uuid, user.username, usernameKey(user.username), user.passwordHash, user.notifyLanguage, user.createdAt],
    );
    return rowCount === 1;
  }

  async userByName(username: string): Promise<UserRecord | undefined> {
    const { rows } = await this.#db.query<UserRow>("SELECT * FROM auth_users WHERE username_key = $1", [usernameKey(username)]);
    return rows[0] === undefined ? undefined : userOf(rows[0]);
  }

  async userById(uuid: string): Promise<UserRecord | undefined> {
    const { rows } = await this.#db.query<UserRow>("SELECT * FROM auth_users WHERE uuid = $1", [uuid]);
    return rows[0] === undefined ? undefined : userOf(rows[0]);
  }

  deleteUser(uuid: string): Promise<void> {
    return this.#db.transaction(async (db) => {
      await db.query("DELETE FROM auth_tokens WHERE user_id = $1", [uuid]);
      await db.query("DELETE FROM auth_users WHERE uuid = $1", [uuid]);
    });
  }

  /**
   * Stores a token. The tokens issued in one turn of the event loop are
   * written by one statement, one commit (a group commit): each call resolves
   * once its token is committed.
   */
  putToken(token: TokenRecord): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.#pending.length === 0) this.#defer(() => void this.#writeTokens());
      this.#pending.push({ token, done: (error) => (error === undefined ? resolve() : reject(error)) });
    });
  }

  async #writeTokens(): Promise<void> {
    const batch = this.#pending;
    this.#pending = [];
    // The last of a hash wins, as it would written one by one.
    const tokens = [...new Map(batch.map(({ token }) => [token.hash, token])).values()];
    try {
      await this.#db.query(
        `INSERT INTO auth_tokens (hash, kind, client_id, user_id, scope, issued_at, expires_at, family_id, rotated_at)
         SELECT h, k, c, u, string_to_array(s, ' '), i, e, f, r
         FROM unnest($1::text[], $2::text[], $3::text[], $4::uuid[], $5::text[], $6::bigint[], $7::bigint[], $8::text[], $9::bigint[])
           AS t(h, k, c, u, s, i, e, f, r)
         ON CONFLICT (hash) DO UPDATE SET kind = EXCLUDED.kind, client_id = EXCLUDED.client_id, user_id = EXCLUDED.user_id,
           scope = EXCLUDED.scope, issued_at = EXCLUDED.issued_at, expires_at = EXCLUDED.expires_at,
           family_id = EXCLUDED.family_id, rotated_at = EXCLUDED.rotated_at`,
        [
          tokens.map((t) => t.hash),
          tokens.map((t) => t.kind),
          tokens.map((t) => t.clientId),
          tokens.map((t) => t.userId),
          tokens.map((t) => t.scope.join(" ")),
          tokens.map((t) => t.issuedAt),
          tokens.map((t) => t.expiresAt),
          tokens.map((t) => t.familyId),
          tokens.map((t) => t.rotatedAt),
        ],
      );
    } catch (error) {
      for (const { done } of batch) done(error);
      return;
    }
    for (const { done } of batch) done();
  }

  async token(hash: string): Promise<TokenRecord | undefined> {
    const { rows } = await this.#db.query<TokenRow>("SELECT * FROM auth_tokens WHERE hash = $1", [hash]);
    return rows[0] === undefined ? undefined : tokenOf(rows[0]);
  }

  async liveToken(hash: string, now: number): Promise<TokenRecord | undefined> {
    const { rows } = await this.#db.query<TokenRow>(
      `SELECT t.* FROM auth_tokens t WHERE t.hash = $1 AND t.expires_at > $2 AND t.rotated_at IS NULL
         AND NOT EXISTS (SELECT 1 FROM auth_revoked_families f WHERE f.family_id = t.family_id)`,
      [hash, now],
    );
    return rows[0] === undefined ? undefined : tokenOf(rows[0]);
  }

  async rotate(hash: string, at: number): Promise<boolean> {
    // One statement decides: of two refreshes racing on any processes, one rotates and the other is a reuse.
    const { rowCount } = await this.#db.query("UPDATE auth_tokens SET rotated_at = $2 WHERE hash = $1 AND rotated_at IS NULL", [hash, at]);
    return rowCount === 1;
  }

  async deleteToken(hash: string): Promise<void> {
    await this.#db.query("DELETE FROM auth_tokens WHERE hash = $1", [hash]);
  }

  async revokeFamily(familyId: string): Promise<void> {
    await this.#db.query("INSERT INTO auth_revoked_families (family_id) VALUES ($1) ON CONFLICT DO NOTHING", [familyId]);
  }

  async isFamilyRevoked(familyId: string): Promise<boolean> {
    const { rows } = await this.#db.query("SELECT 1 FROM auth_revoked_families WHERE family_id = $1", [familyId]);
    return rows.length > 0;
  }

  async sweep(now: number): Promise<void> {
    while ((await this.#db.query(
      "DELETE FROM auth_tokens WHERE hash IN (SELECT hash FROM auth_tokens WHERE expires_at <= $1 LIMIT $2)",
      [now, SWEEP_BATCH],
    )).rowCount === SWEEP_BATCH);
    // A revoked family is remembered while any of its tokens could still be presented.
    while ((await this.#db.query(
      `DELETE FROM auth_revoked_families WHERE family_id IN (
         SELECT f.family_id FROM auth_revoked_families f
         WHERE NOT EXISTS (SELECT 1 FROM auth_tokens t WHERE t.family_id = f.family_id) LIMIT $1)`,
      [SWEEP_BATCH],
    )).rowCount === SWEEP_BATCH);
    await this.#db.query(
      "DELETE FROM auth_login_attempts WHERE ctid IN (SELECT ctid FROM auth_login_attempts WHERE at < $1 LIMIT $2)",
      [now - 24 * 3600 * 1000, SWEEP_BATCH],
    );
  }
}

function userOf(row: UserRow): UserRecord {
  return { uuid: row.uuid, username: row.username, passwordHash: row.password_hash, notifyLanguage: row.notify_language, createdAt: Number(row.created_at) };
}

function tokenOf(row: TokenRow): TokenRecord {
  return {
    hash: row.hash,
    kind: row.kind,
    clientId: row.client_id,
    userId: row.user_id,
    scope: row.scope,
    issuedAt: Number(row.issued_at),
    expiresAt: Number(row.expires_at),
    familyId: row.family_id,
    rotatedAt: row.rotated_at === null ? null : Number(row.rotated_at),
  };
}
