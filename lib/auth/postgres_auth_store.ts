import { Batcher } from "../storage/_internal.ts";
import { type SqlClient, type SqlPool, StorageError } from "../storage/mod.ts";
import { KNOWN_ADDRESS_MS } from "./login_throttle.ts";
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
  // 3: where each user name and client last succeeded from each address (the login throttle's known addresses).
  `CREATE TABLE auth_known_addresses (key text PRIMARY KEY, at bigint NOT NULL);
   CREATE INDEX auth_known_addresses_at ON auth_known_addresses (at);`,
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

/** Tokens written, or looked up, by one statement at most. */
const TOKEN_BATCH = 64;
/** Tokens waiting to be written, or looked up, at most (each for a statement's deadline at most). */
const TOKENS_WAITING = 10_000;

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
  /** Tokens being stored: the tokens issued while a write runs are written together by the next statement, one commit. */
  readonly #writes: Batcher<{ token: TokenRecord; done: (error?: unknown) => void }>;
  /** Live tokens being looked up: the requests waiting share one statement. */
  readonly #lookups: Batcher<
    { hash: string; now: number; done: (error: unknown, token?: TokenRecord) => void }
  >;

  /**
   * Uses a pool whose database has the auth tables (see {@linkcode AUTH_MIGRATIONS}).
   * @param db the pool
   * @param options when the tokens and look-ups of a turn are sent
   */
  constructor(db: SqlPool, options: { defer?: (run: () => void) => void } = {}) {
    this.#db = db;
    const defer = options.defer ?? ((run) => setImmediate(run));
    // A token waits for its write or look-up as long as one statement may take, at most, however long the batches ahead hang.
    const bounds = (what: string) => ({
      timeoutMs: db.deadlineMs,
      maxWaiting: TOKENS_WAITING,
      expire: (item: { done: (error: unknown) => void }, why: "timeout" | "full") =>
        item.done(
          new StorageError(
            "ERR_STORAGE_UNAVAILABLE",
            why === "timeout"
              ? `Cannot ${what} now: the database did not answer within ${db.deadlineMs} ms`
              : `Cannot ${what} now: ${TOKENS_WAITING} tokens wait for the database`,
          ),
        ),
    });
    this.#writes = new Batcher<{ token: TokenRecord; done: (error?: unknown) => void }>({
      run: (batch) => this.#writeTokens(batch),
      keyOf: ({ token }) => token.hash,
      maxBatch: TOKEN_BATCH,
      maxRunning: 4,
      defer,
      ...bounds("store the token"),
    });
    this.#lookups = new Batcher<
      { hash: string; now: number; done: (error: unknown, token?: TokenRecord) => void }
    >({
      run: (batch) => this.#lookUp(batch),
      keyOf: ({ hash }) => hash,
      maxBatch: TOKEN_BATCH,
      maxRunning: 2,
      defer,
      ...bounds("check the token"),
    });
  }

  createUser(user: UserRecord): Promise<boolean> {
    return this.createUserIn(this.#db, user);
  }

  /**
   * Adds a user, as {@linkcode createUser} does, through another connection
   * or transaction: a sign-up writes the user and its sync context in one.
   * @param db where to run the statement (a transaction's client)
   * @param user the user
   * @returns whether it was added (false: the name is taken)
   */
  async createUserIn(db: SqlClient, user: UserRecord): Promise<boolean> {
    const { rowCount } = await db.query(
      `INSERT INTO auth_users (uuid, username, username_key, password_hash, notify_language, created_at)
       VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`,
      [
        user.uuid,
        user.username,
        usernameKey(user.username),
        user.passwordHash,
        user.notifyLanguage,
        user.createdAt,
      ],
    );
    return rowCount === 1;
  }

  async userByName(username: string): Promise<UserRecord | undefined> {
    const { rows } = await this.#db.query<UserRow>(
      "SELECT * FROM auth_users WHERE username_key = $1",
      [usernameKey(username)],
    );
    return rows[0] === undefined ? undefined : userOf(rows[0]);
  }

  async userById(uuid: string): Promise<UserRecord | undefined> {
    const { rows } = await this.#db.query<UserRow>("SELECT * FROM auth_users WHERE uuid = $1", [
      uuid,
    ]);
    return rows[0] === undefined ? undefined : userOf(rows[0]);
  }

  deleteUser(uuid: string): Promise<void> {
    return this.#db.transaction(async (db) => {
      await db.query("DELETE FROM auth_tokens WHERE user_id = $1", [uuid]);
      await db.query("DELETE FROM auth_users WHERE uuid = $1", [uuid]);
    });
  }

  /**
   * Stores a token. The tokens issued while earlier ones are being written are
   * written by one statement, one commit (a group commit): each call resolves
   * once its token is committed.
   */
  putToken(token: TokenRecord): Promise<void> {
    return new Promise((resolve, reject) =>
      this.#writes.add({
        token,
        done: (error) => (error === undefined ? resolve() : reject(error)),
      })
    );
  }

  async #writeTokens(
    batch: readonly { token: TokenRecord; done: (error?: unknown) => void }[],
  ): Promise<void> {
    // One of a hash a batch (the batcher's key).
    const tokens = batch.map(({ token }) => token);
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
    const { rows } = await this.#db.query<TokenRow>("SELECT * FROM auth_tokens WHERE hash = $1", [
      hash,
    ]);
    return rows[0] === undefined ? undefined : tokenOf(rows[0]);
  }

  liveToken(hash: string, now: number): Promise<TokenRecord | undefined> {
    return new Promise((resolve, reject) =>
      this.#lookups.add({
        hash,
        now,
        done: (error, token) => (error === undefined ? resolve(token) : reject(error)),
      })
    );
  }

  async #lookUp(
    batch: readonly {
      hash: string;
      now: number;
      done: (error: unknown, token?: TokenRecord) => void;
    }[],
  ): Promise<void> {
    let rows: TokenRow[];
    try {
      // Through the primary key whatever the table's size (= ANY is an index condition); each request's expiry is checked below.
      ({ rows } = await this.#db.query<TokenRow>(
        `SELECT t.* FROM auth_tokens t WHERE t.hash = ANY($1::text[]) AND t.rotated_at IS NULL
           AND NOT EXISTS (SELECT 1 FROM auth_revoked_families f WHERE f.family_id = t.family_id)`,
        [batch.map((item) => item.hash)],
      ));
    } catch (error) {
      for (const { done } of batch) done(error);
      return;
    }
    const found = new Map(rows.map((row) => [row.hash, row]));
    for (const { hash, now, done } of batch) {
      const row = found.get(hash);
      done(
        undefined,
        row === undefined || Number(row.expires_at) <= now ? undefined : tokenOf(row),
      );
    }
  }

  async rotate(hash: string, at: number): Promise<boolean> {
    // One statement decides: of two refreshes racing on any processes, one rotates and the other is a reuse.
    const { rowCount } = await this.#db.query(
      "UPDATE auth_tokens SET rotated_at = $2 WHERE hash = $1 AND rotated_at IS NULL",
      [hash, at],
    );
    return rowCount === 1;
  }

  async deleteToken(hash: string): Promise<void> {
    await this.#db.query("DELETE FROM auth_tokens WHERE hash = $1", [hash]);
  }

  async revokeFamily(familyId: string): Promise<void> {
    await this.#db.query(
      "INSERT INTO auth_revoked_families (family_id) VALUES ($1) ON CONFLICT DO NOTHING",
      [familyId],
    );
  }

  async isFamilyRevoked(familyId: string): Promise<boolean> {
    const { rows } = await this.#db.query(
      "SELECT 1 FROM auth_revoked_families WHERE family_id = $1",
      [familyId],
    );
    return rows.length > 0;
  }

  async sweep(now: number): Promise<void> {
    while (
      (await this.#db.query(
        "DELETE FROM auth_tokens WHERE hash IN (SELECT hash FROM auth_tokens WHERE expires_at <= $1 LIMIT $2)",
        [now, SWEEP_BATCH],
      )).rowCount === SWEEP_BATCH
    );
    // A revoked family is remembered while any of its tokens could still be presented.
    while (
      (await this.#db.query(
        `DELETE FROM auth_revoked_families WHERE family_id IN (
         SELECT f.family_id FROM auth_revoked_families f
         WHERE NOT EXISTS (SELECT 1 FROM auth_tokens t WHERE t.family_id = f.family_id) LIMIT $1)`,
        [SWEEP_BATCH],
      )).rowCount === SWEEP_BATCH
    );
    await this.#db.query(
      "DELETE FROM auth_login_attempts WHERE ctid IN (SELECT ctid FROM auth_login_attempts WHERE at < $1 LIMIT $2)",
      [now - 24 * 3600 * 1000, SWEEP_BATCH],
    );
    await this.#db.query(
      "DELETE FROM auth_known_addresses WHERE key IN (SELECT key FROM auth_known_addresses WHERE at < $1 LIMIT $2)",
      [now - KNOWN_ADDRESS_MS, SWEEP_BATCH],
    );
  }
}

function userOf(row: UserRow): UserRecord {
  return {
    uuid: row.uuid,
    username: row.username,
    passwordHash: row.password_hash,
    notifyLanguage: row.notify_language,
    createdAt: Number(row.created_at),
  };
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
