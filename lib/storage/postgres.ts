import { createHash } from "node:crypto";
import { ConfigError, redactUrl } from "../config/mod.ts";
import { StorageError } from "./errors.ts";

/** Rows a statement gave. */
export interface SqlResult<R> {
  readonly rows: R[];
  readonly rowCount: number;
}

/** What a store needs of a database connection: statements with parameters. */
export interface SqlClient {
  /**
   * Runs a statement.
   * @param text SQL with `$1`, `$2`… placeholders
   * @param params their values
   * @throws {StorageError} `ERR_STORAGE_UNAVAILABLE` when the database cannot be reached or is shutting down
   */
  query<R = Record<string, unknown>>(text: string, params?: readonly unknown[]): Promise<SqlResult<R>>;
}

/** A pool of connections: statements, transactions, and a close. */
export interface SqlPool extends SqlClient {
  /**
   * Runs `work` in one transaction on one connection: committed when it
   * resolves, rolled back when it throws.
   * @param work the statements
   * @returns what `work` gives
   */
  transaction<T>(work: (client: SqlClient) => Promise<T>): Promise<T>;
  /** Closes every connection. */
  close(): Promise<void>;
}

/** Options of {@linkcode connectPostgres}. */
export interface ConnectPostgresOptions {
  /**
   * Connections at most.
   * @default {10}
   */
  readonly poolSize?: number;
  /**
   * The longest a statement may run before the database cancels it (and the request gets 503).
   * @default {10000}
   */
  readonly statementTimeoutMs?: number;
  /** Where a connection lost while idle is reported (the pool replaces it by itself). */
  readonly onError?: (error: unknown) => void;
  /**
   * Told of each statement (or connection for a transaction) that fails
   * because the database cannot be reached: the error it fails with is
   * `ERR_STORAGE_UNAVAILABLE`.
   */
  readonly onUnavailable?: (error: unknown) => void;
  /**
   * Told when a statement succeeds again after the database was reported
   * away (through `onError` or `onUnavailable`): it answers again.
   */
  readonly onAvailable?: () => void;
}

interface PgError {
  readonly code?: string;
  readonly message?: string;
}

// Connection exceptions (08), the server shutting down or starting (57P01-57P03), a cancelled
// statement (57014, statement_timeout), too many connections (53300).
const UNAVAILABLE_SQLSTATE = /^(08...|57P0[1-3]|57014|53300)$/;
const UNAVAILABLE_SYSTEM = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "EHOSTUNREACH", "ENOTFOUND", "EAI_AGAIN"]);

/** Refusals of who connects: no such role or no user name (28000), a wrong password (28P01). */
const AUTHENTICATION_CODES = new Set(["28000", "28P01"]);

/**
 * For a URL without a user name that PostgreSQL refused as to who connects:
 * it then gets PGUSER or the process's login name (USER), or none at all,
 * so say to name one.
 */
function userHint(url: string, error: unknown): string {
  const parsed = URL.parse(url);
  if (parsed === null || parsed.username !== "") return "";
  const code = typeof error === "object" && error !== null ? (error as PgError).code : undefined;
  if (code === undefined || !AUTHENTICATION_CODES.has(code)) return "";
  return `; the URL names no user (PostgreSQL was then sent PGUSER or the login name, or none): name one, as in ${parsed.protocol}//user@${parsed.host}${parsed.pathname}`;
}

/**
 * Whether an error of the database client means the database cannot be
 * reached now (so a request should get 503 and be sent again later), rather
 * than that a statement was wrong.
 * @param error what the client threw
 * @returns whether the database is unavailable
 */
export function isUnavailable(error: unknown): boolean {
  if (typeof error !== "object" || error === null) return false;
  const { code, message } = error as PgError;
  if (typeof code === "string" && (UNAVAILABLE_SQLSTATE.test(code) || UNAVAILABLE_SYSTEM.has(code))) return true;
  return typeof message === "string" && /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/i.test(message);
}

function unavailable(error: unknown): StorageError {
  const why = error instanceof Error ? error.message : String(error);
  return new StorageError("ERR_STORAGE_UNAVAILABLE", `Cannot reach the database now: ${why}`, { cause: error });
}

/** What a pool tells of its database's reachability. */
interface Reachability {
  /** The database did not answer. */
  failed(error: unknown): void;
  /** A call succeeded. */
  answered(): void;
}

/** Runs a database call, turning a lost connection into `ERR_STORAGE_UNAVAILABLE`. */
async function guarded<T>(call: () => Promise<T>, reach: Reachability): Promise<T> {
  let result: T;
  try {
    result = await call();
  } catch (error) {
    if (!isUnavailable(error)) throw error;
    reach.failed(error);
    throw unavailable(error);
  }
  reach.answered();
  return result;
}

/**
 * Connects to PostgreSQL with the optional peer dependency `pg`, imported
 * only here: a pool whose errors of reachability become
 * `ERR_STORAGE_UNAVAILABLE` (answered 503 with `Retry-After`), and which
 * recovers by itself when the database comes back.
 * @param url `postgres://user:password@host:port/database`
 * @param options pool size, statement timeout and where idle errors go
 * @returns the pool, checked with one statement
 * @throws {ConfigError} naming DATABASE_URL (its password hidden) when `pg` is missing or the database cannot be reached
 * @example
 * ```ts
 * const pool = await connectPostgres("postgres://app@127.0.0.1:5432/tributary", { poolSize: 20 });
 * const { rows } = await pool.query<{ now: Date }>("SELECT now()");
 * ```
 */
export async function connectPostgres(url: string, options: ConnectPostgresOptions = {}): Promise<SqlPool> {
  const where = redactUrl(url);
  let Pool: typeof import("pg").Pool;
  try {
    Pool = (await import("pg")).default.Pool;
  } catch {
    throw new ConfigError("DATABASE_URL", "Cannot start: DATABASE_URL needs the PostgreSQL client; install it with npm install pg");
  }
  const pool = new Pool({
    connectionString: url,
    max: options.poolSize ?? 10,
    statement_timeout: options.statementTimeoutMs ?? 10_000,
    connectionTimeoutMillis: 5000,
    idleTimeoutMillis: 30_000,
  });
  // Away since an idle connection was lost or a call failed to reach it, until a call succeeds.
  let away = false;
  const reach: Reachability = {
    failed(error) {
      away = true;
      options.onUnavailable?.(error);
    },
    answered() {
      if (!away) return;
      away = false;
      options.onAvailable?.();
    },
  };
  pool.on("error", (error) => {
    away = true;
    options.onError?.(error);
  });
  try {
    await pool.query("SELECT 1");
  } catch (error) {
    await pool.end().catch(() => {});
    const why = error instanceof AggregateError ? error.errors.map(String).join("; ") : error instanceof Error ? error.message || (error as PgError).code : String(error);
    throw new ConfigError("DATABASE_URL", `Cannot start: cannot reach PostgreSQL at ${where} (DATABASE_URL): ${why}${userHint(url, error)}`);
  }
  // A statement with parameters is prepared once per connection, under a name made from its text,
  // so that the database parses and plans it once.
  const names = new Map<string, string>();
  const nameOf = (text: string): string => {
    let name = names.get(text);
    if (name === undefined) {
      name = `t${createHash("sha1").update(text).digest("base64url").slice(0, 20)}`;
      names.set(text, name);
    }
    return name;
  };
  const query = <R>(client: { query: typeof pool.query }, text: string, params: readonly unknown[] = []): Promise<SqlResult<R>> =>
    guarded(async () => {
      const result = params.length === 0 ? await client.query(text) : await client.query({ name: nameOf(text), text, values: [...params] });
      return { rows: result.rows as R[], rowCount: result.rowCount ?? 0 };
    }, reach);
  return {
    query: (text, params) => query(pool, text, params),
    async transaction(work) {
      const client = await guarded(() => pool.connect(), reach);
      let broken = false;
      // A connection lost between the statements of a transaction is an 'error' event on the
      // client, which would end the process unheard; the next statement fails with it instead.
      const lost = (): void => {
        broken = true;
      };
      client.on("error", lost);
      try {
        await query(client, "BEGIN");
        const result = await work({ query: (text, params) => query(client, text, params) });
        await query(client, "COMMIT");
        return result;
      } catch (error) {
        try {
          await client.query("ROLLBACK");
        } catch {
          broken = true;
        }
        throw error;
      } finally {
        client.off("error", lost);
        // A connection that failed mid-transaction is not given back for reuse.
        client.release(broken);
      }
    },
    close: () => pool.end(),
  };
}
