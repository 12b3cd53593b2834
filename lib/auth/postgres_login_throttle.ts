import type { SqlClient, SqlPool } from "../storage/mod.ts";
import {
  countedKeys,
  KNOWN_ADDRESS_MS,
  type LoginThrottleOptions,
  type ThrottleKey,
  throttleKeys,
  type ThrottleLimits,
  throttleLimits,
  throttleWait,
} from "./login_throttle.ts";
import type { LoginLimiter, LoginSubject } from "./types.ts";

/**
 * The login throttle's counts on PostgreSQL, shared by every process, with
 * the rules of `LoginThrottle`: failures per name from one address, per name
 * from the addresses it is not known at, and per address, growing waits past
 * the limits and no lockout; each attempt counts as a failure from its start
 * (so parallel guesses cannot pass a limit), a success forgets the pair's
 * failures and its own count against the others, and makes the address
 * known for the name (`auth_known_addresses`). Attempts on one key take
 * turns under a transaction-level advisory lock.
 * @example
 * ```ts
 * const throttle = new PostgresLoginThrottle(pool, { now: Date.now, maxPerUser: 5, maxPerName: 10, maxPerAddress: 20 });
 * ```
 */
export class PostgresLoginThrottle implements LoginLimiter {
  readonly #db: SqlPool;
  readonly #now: () => number;
  readonly #limits: ThrottleLimits;

  /**
   * Uses a pool whose database has the auth tables.
   * @param db the pool
   * @param options the clock, the limits and the window, as `LoginThrottle` takes them
   * @throws {RangeError} for a limit that is not a non-negative integer
   */
  constructor(db: SqlPool, options: LoginThrottleOptions) {
    this.#db = db;
    this.#now = options.now;
    this.#limits = throttleLimits(options);
  }

  async start(subject: LoginSubject, address: string): Promise<number> {
    const now = this.#now();
    const keys = throttleKeys(subject, address, this.#limits);
    const counted = countedKeys(
      keys,
      keys.name !== undefined && await this.#isKnown(keys.known, now),
    );
    return this.#db.transaction(async (db) => {
      // In one order, so that two attempts never wait for each other's locks.
      for (const { key } of [...counted].sort((a, b) => (a.key < b.key ? -1 : 1))) {
        await db.query("SELECT pg_advisory_xact_lock(hashtext($1))", [key]);
      }
      const wait = await this.#wait(db, counted, now);
      if (wait > 0) return wait;
      await db.query(
        "INSERT INTO auth_login_attempts (key, at) SELECT key, $2 FROM unnest($1::text[]) AS key",
        [counted.map((counter) => counter.key), now],
      );
      return 0;
    });
  }

  async check(subject: LoginSubject, address: string): Promise<number> {
    const now = this.#now();
    const keys = throttleKeys(subject, address, this.#limits);
    const counted = countedKeys(
      keys,
      keys.name !== undefined && await this.#isKnown(keys.known, now),
    );
    return this.#wait(this.#db, counted, now);
  }

  async succeed(
    subject: LoginSubject,
    address: string,
    options: { readonly counted?: boolean } = {},
  ): Promise<void> {
    const now = this.#now();
    const keys = throttleKeys(subject, address, this.#limits);
    // Known before this success: then the attempt was not counted against the name.
    const known = keys.name !== undefined && await this.#isKnown(keys.known, now);
    await this.#db.query("DELETE FROM auth_login_attempts WHERE key = $1", [keys.pair.key]);
    for (const { key } of options.counted === false ? [] : countedKeys(keys, known).slice(1)) {
      await this.#db.query(
        "DELETE FROM auth_login_attempts WHERE ctid IN (SELECT ctid FROM auth_login_attempts WHERE key = $1 ORDER BY at DESC LIMIT 1)",
        [key],
      );
    }
    await this.#db.query(
      "INSERT INTO auth_known_addresses (key, at) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET at = GREATEST(auth_known_addresses.at, EXCLUDED.at)",
      [keys.known, now],
    );
  }

  /** How long the counters' failures in the window make an attempt wait. */
  async #wait(db: SqlClient, counted: readonly ThrottleKey[], now: number): Promise<number> {
    const { rows } = await db.query<{ key: string; failures: string; last: string }>(
      "SELECT key, count(*) AS failures, max(at) AS last FROM auth_login_attempts WHERE key = ANY($1) AND at > $2 GROUP BY key",
      [counted.map((counter) => counter.key), now - this.#limits.windowMs],
    );
    let wait = 0;
    for (const row of rows) {
      const limit = counted.find((counter) => counter.key === row.key)!.limit;
      wait = Math.max(
        wait,
        throttleWait(Number(row.failures), Number(row.last), limit, this.#limits.windowMs, now),
      );
    }
    return wait;
  }

  async #isKnown(key: string, now: number): Promise<boolean> {
    const { rows } = await this.#db.query(
      "SELECT 1 FROM auth_known_addresses WHERE key = $1 AND at > $2",
      [key, now - KNOWN_ADDRESS_MS],
    );
    return rows.length > 0;
  }
}
