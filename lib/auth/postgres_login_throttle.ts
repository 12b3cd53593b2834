import type { SqlPool } from "../storage/mod.ts";
import { type LoginThrottleOptions, throttleKeys, throttleWait } from "./login_throttle.ts";
import type { LoginLimiter } from "./types.ts";

/**
 * The login throttle's counts on PostgreSQL, shared by every process, with
 * the rules of `LoginThrottle`: failures per user name from one address and
 * per address, growing waits past the limits and no lockout; each attempt
 * counts as a failure from its start (so parallel guesses cannot pass a
 * limit), a success forgets the pair's failures and its own count against
 * the address. Attempts on one key take turns under a transaction-level
 * advisory lock.
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
    const keys = throttleKeys(username, address, this.#maxPerUser, this.#maxPerAddress);
    return this.#db.transaction(async (db) => {
      // In one order, so that two attempts never wait for each other's locks.
      for (const { key } of [...keys].sort((a, b) => (a.key < b.key ? -1 : 1))) await db.query("SELECT pg_advisory_xact_lock(hashtext($1))", [key]);
      let wait = 0;
      for (const { key, limit } of keys) {
        const { rows } = await db.query<{ failures: string; last: string | null }>(
          "SELECT count(*) AS failures, max(at) AS last FROM auth_login_attempts WHERE key = $1 AND at > $2",
          [key, now - this.#window],
        );
        const row = rows[0]!;
        wait = Math.max(wait, throttleWait(Number(row.failures), Number(row.last ?? 0), limit, this.#window, now));
      }
      if (wait > 0) return wait;
      for (const { key } of keys) await db.query("INSERT INTO auth_login_attempts (key, at) VALUES ($1, $2)", [key, now]);
      return 0;
    });
  }

  async succeed(username: string, address: string): Promise<void> {
    const [pair, byAddress] = throttleKeys(username, address, this.#maxPerUser, this.#maxPerAddress);
    await this.#db.query("DELETE FROM auth_login_attempts WHERE key = $1", [pair!.key]);
    if (byAddress === undefined) return;
    await this.#db.query(
      "DELETE FROM auth_login_attempts WHERE ctid IN (SELECT ctid FROM auth_login_attempts WHERE key = $1 ORDER BY at DESC LIMIT 1)",
      [byAddress.key],
    );
  }
}
