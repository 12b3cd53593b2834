import { DATABASE_SCHEMAS } from "../accounts/mod.ts";
import { redactUrl } from "../config/mod.ts";
import { count } from "../log/mod.ts";
import { migrate, type SqlPool, STORAGE_SETTINGS } from "../storage/mod.ts";
import { optionFlag, settingValue, usage } from "./_input.ts";
import type { CliIo, CommandInput, CommandResult, CommandSpec } from "./types.ts";

/**
 * `migrate`: brings the PostgreSQL schema of `DATABASE_URL` up to date with
 * the migrations the server applies at start (lib/storage's `migrate`, under
 * its advisory lock, so it is safe beside starting servers), or with
 * `--check` only says what is pending.
 */
export const MIGRATE: CommandSpec = {
  path: ["migrate"],
  summary:
    "Apply the PostgreSQL schema migrations to DATABASE_URL (the server also applies them at start)",
  details: [
    "Each domain's pending steps run in one transaction under an advisory lock, so running it beside starting servers is safe.",
    "With --check nothing is changed: it lists the pending steps and exits 1 when there are any.",
  ],
  positionals: [],
  options: {
    check: { type: "boolean", doc: "only report pending migrations; exit 1 when some are" },
  },
  settings: [STORAGE_SETTINGS.databaseUrl, STORAGE_SETTINGS.databaseStatementTimeoutMs],
  examples: [
    "migrate",
    "DATABASE_URL=postgres://tributary@127.0.0.1:5432/tributary migrate --check",
  ],
  run: migrateDatabase,
};

interface SchemaState {
  readonly domain: string;
  /** Steps this run applied. */
  readonly applied: number;
  /** Steps not applied yet (with --check). */
  readonly pending: number;
  /** The version the schema is at after the run. */
  readonly version: number;
}

async function migrateDatabase(input: CommandInput, io: CliIo): Promise<CommandResult> {
  const url = settingValue(STORAGE_SETTINGS.databaseUrl, io.env);
  if (url === "") {
    throw usage(
      MIGRATE,
      "set DATABASE_URL to the database, e.g. postgres://tributary@127.0.0.1:5432/tributary",
    );
  }
  const check = optionFlag(input, "check");
  const pool = await io.connectPostgres(url, {
    poolSize: 1,
    statementTimeoutMs: settingValue(STORAGE_SETTINGS.databaseStatementTimeoutMs, io.env),
  });
  const schemas: SchemaState[] = [];
  try {
    const applied = new Map<string, number>();
    if (!check) {
      for (const { domain, steps } of DATABASE_SCHEMAS) {
        applied.set(domain, await migrate(pool, domain, steps));
      }
    }
    const recorded = await versions(pool);
    for (const { domain, steps } of DATABASE_SCHEMAS) {
      const done = recorded.get(domain) ?? new Set<number>();
      schemas.push({
        domain,
        applied: applied.get(domain) ?? 0,
        pending: steps.filter((_, i) => !done.has(i + 1)).length,
        version: Math.max(0, ...done),
      });
    }
  } finally {
    await pool.close();
  }
  const where = redactUrl(url);
  const lines = schemas.map((schema) =>
    schema.pending > 0
      ? `${schema.domain}: ${
        count(schema.pending, "migration")
      } pending (at version ${schema.version})`
      : schema.applied > 0
      ? `${schema.domain}: applied ${
        count(schema.applied, "migration")
      } (now at version ${schema.version})`
      : `${schema.domain}: up to date (version ${schema.version})`
  );
  const pending = schemas.some((schema) => schema.pending > 0);
  return {
    exitCode: pending ? 1 : 0,
    json: { database: where, schemas },
    lines: [`Database ${where}:`, ...lines],
  };
}

/** The versions recorded per domain; none before the first migration. */
async function versions(pool: SqlPool): Promise<Map<string, Set<number>>> {
  const found = new Map<string, Set<number>>();
  const { rows: [table] } = await pool.query<{ present: boolean }>(
    "SELECT to_regclass('tributary_migrations') IS NOT NULL AS present",
  );
  if (table?.present !== true) return found;
  const { rows } = await pool.query<{ domain: string; version: number }>(
    "SELECT domain, version FROM tributary_migrations",
  );
  for (const row of rows) {
    let set = found.get(row.domain);
    if (set === undefined) found.set(row.domain, set = new Set());
    set.add(row.version);
  }
  return found;
}
