import type { SqlPool } from "./postgres.ts";

/** One advisory lock for every process migrating any schema of the package. */
const LOCK_KEY = 8_736_461_201;

/**
 * Brings a domain's tables up to date: applies, in order, each step not yet
 * recorded in `tributary_migrations`, with its record, in one transaction
 * (all of them or none). Processes starting at once take turns under an
 * advisory lock, so a step runs once.
 * @param pool the database
 * @param domain whose schema, e.g. `auth`
 * @param steps SQL of each version, oldest first; never edited once released
 * @returns how many steps it applied
 * @example
 * ```ts
 * await migrate(pool, "auth", ["CREATE TABLE auth_users (uuid uuid PRIMARY KEY, name text NOT NULL)"]);
 * ```
 */
export async function migrate(
  pool: SqlPool,
  domain: string,
  steps: readonly string[],
): Promise<number> {
  return pool.transaction(async (client) => {
    // Held until this transaction ends: a second process waits here, then finds the steps applied.
    await client.query("SELECT pg_advisory_xact_lock($1)", [LOCK_KEY]);
    await client.query(`CREATE TABLE IF NOT EXISTS tributary_migrations (
      domain text NOT NULL, version integer NOT NULL, applied_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (domain, version))`);
    const { rows } = await client.query<{ version: number }>(
      "SELECT version FROM tributary_migrations WHERE domain = $1",
      [domain],
    );
    const applied = new Set(rows.map((row) => row.version));
    let count = 0;
    for (const [i, step] of steps.entries()) {
      const version = i + 1;
      if (applied.has(version)) continue;
      await client.query(step);
      await client.query("INSERT INTO tributary_migrations (domain, version) VALUES ($1, $2)", [
        domain,
        version,
      ]);
      count++;
    }
    return count;
  });
}
