import type { SqlPool } from "../storage/mod.ts";
import type { LoginThrottleOptions } from "./login_throttle.ts";
import type { LoginLimiter } from "./types.ts";

/**
 * The login throttle's counts on PostgreSQL, shared by every process, with
 * the rules of `LoginThrottle`: each attempt counts as a failure from its
 * start (so parallel guesses cannot pass the limit), a success forgets the
 * user name's failures and its own count against the address. Attempts on
 * one key take turns under a transaction-level advisory lock.
 * @example
 * ```ts
 * const throttle = new PostgresLoginThrottle(pool, { now: Date.now, maxPerUser: 5, maxPerAddress: 20 });
 * ```
 */
export class PostgresLoginThrottle implements LoginLimiter {
  readonly #db: SqlPool;
  readonly #now: () => number;
  readonly #maxPerUser: number;
  readonly #maxPerAddress: number;
  readonly #window: number;

  /**
   * Uses a pool whose database has the auth tables.
   * @param db the pool
   * @param options the clock, the limits and the window, as `LoginThrottle` takes them
   */
  constructor(db: SqlPool, options: LoginThrottleOptions) {
    this.#db = db;
    this.#now = options.now;
    this.#maxPerUser = options.maxPerUser ?? 5;
    this.#maxPerAddress = options.maxPerAddress ?? 20;
    this.#window = options.windowMs ?? 15 * 60_000;
  }

  start(username: string, address: string): Promise<number> {
    const now = this.#now();
    const keys = [{ key: `u:${username.toLowerCase()}`, limit: this.#maxPerUser }];
    if (this.#maxPerAddress > 0) keys.push({ key: `a:${address}`, limit: this.#maxPerAddress });
    return this.#db.transaction(async (db) => {
      // In one order, so that two attempts never wait for each other's locks.
      for (const { key } of [...keys].sort((a, b) => (a.key < b.key ? -1 : 1))) await db.query("SELECT pg_advisory_xact_lock(hashtext($1))", [key]);
      let wait = 0;
      for (const { key, limit } of keys) {
        const { rows } = await db.query<{ at: string }>(
          "SELECT at FROM auth_login_attempts WHERE key = $1 AND at > $2 ORDER BY at DESC LIMIT $3",
          [key, now - this.#window, limit],
        );
        const oldest = rows[limit - 1];
        if (oldest !== undefined) wait = Math.max(wait, Math.max(1, Math.ceil((Number(oldest.at) + this.#window - now) / 1000)));
      }
      if (wait > 0) return wait;
      for (const { key } of keys) await db.query("INSERT INTO auth_login_attempts (key, at) VALUES ($1, $2)", [key, now]);
      return 0;
    });
  }

  async succeed(username: string, address: string): Promise<void> {
    await this.#db.query("DELETE FROM auth_login_attempts WHERE key = $1", [`u:${username.toLowerCase()}`]);
    await this.#db.query(
      "DELETE FROM auth_login_attempts WHERE ctid IN (SELECT ctid FROM auth_login_attempts WHERE key = $1 ORDER BY at DESC LIMIT 1)",
      [`a:${address}`],
    );
  }
}
