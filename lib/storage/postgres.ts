import { createHash } from "node:crypto";
import { ConfigError, redactUrl } from "../config/mod.ts";
import {
  guarded,
  late,
  type PgError,
  type Reachability,
  userHint,
  within,
} from "./_postgres_faults.ts";
import { Listener, type SqlNotificationHandlers } from "./_postgres_listener.ts";

export { isUnavailable } from "./_postgres_faults.ts";
export type { SqlNotificationHandlers } from "./_postgres_listener.ts";

/** A connection of the pool as the calls use it. */
type PooledClient = import("pg").PoolClient;

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
  query<R = Record<string, unknown>>(
    text: string,
    params?: readonly unknown[],
  ): Promise<SqlResult<R>>;
}

/** A pool of connections: statements, transactions, and a close. */
export interface SqlPool extends SqlClient {
  /**
   * How long a statement may take at most, milliseconds, the wait for a
   * connection included: the statement timeout plus a margin. A statement
   * not answered by then fails with `ERR_STORAGE_UNAVAILABLE` and its
   * connection is closed. Work that waits for statements (a batch of
   * writes) is bounded by it too.
   */
  readonly deadlineMs: number;
  /**
   * Runs `work` in one transaction on one connection: committed when it
   * resolves, rolled back when it throws.
   * @param work the statements
   * @returns what `work` gives
   */
  transaction<T>(work: (client: SqlClient) => Promise<T>): Promise<T>;
  /**
   * Listens on a channel (`LISTEN`) over the pool's one listening
   * connection, made at the first call and kept apart from the pool's: a
   * connection lost is made again by itself (its outage reported as the
   * pool's), its channels listened to again, and then each one's
   * `onRelisten` called, since what was notified meanwhile was not heard.
   * @param channel the channel: lower-case letters, digits and `_`
   * @param handlers what hears its notifications
   * @returns once listening, a function that stops it
   * @throws {StorageError} `ERR_STORAGE_UNAVAILABLE` when the database cannot be reached now
   * @throws {RangeError} for a channel name that is not one
   */
  listen(channel: string, handlers: SqlNotificationHandlers): Promise<() => void>;
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
  /**
   * How much longer than `statementTimeoutMs` the client waits for an
   * answer (the wait for a connection included) before it gives the
   * statement up: a connection that hangs (packets held, not refused) never
   * brings the database's cancellation, so the client closes it instead.
   * @default {1000}
   */
  readonly answerMarginMs?: number;
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

/**
 * Connects to PostgreSQL with the optional peer dependency `pg`, imported
 * only here: a pool whose errors of reachability become
 * `ERR_STORAGE_UNAVAILABLE` (answered 503 with `Retry-After`), and which
 * recovers by itself when the database comes back. Every statement has a
 * deadline on the client (`statementTimeoutMs` plus `answerMarginMs`, the
 * wait for a connection included): the database's own `statement_timeout`
 * cannot fire for a statement it never received, so a statement still
 * unanswered then fails, and its connection, which may hang, is closed and
 * never reused (in a transaction, without waiting for a `ROLLBACK` on it:
 * the database rolls back a transaction whose connection is gone).
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
export async function connectPostgres(
  url: string,
  options: ConnectPostgresOptions = {},
): Promise<SqlPool> {
  const where = redactUrl(url);
  let Pool: typeof import("pg").Pool;
  let Client: typeof import("pg").Client;
  try {
    ({ Pool, Client } = (await import("pg")).default);
  } catch {
    throw new ConfigError(
      "DATABASE_URL",
      "Cannot start: DATABASE_URL needs the PostgreSQL client; install it with npm install pg",
    );
  }
  const statementTimeoutMs = options.statementTimeoutMs ?? 10_000;
  const deadlineMs = statementTimeoutMs + (options.answerMarginMs ?? 1000);
  const pool = new Pool({
    connectionString: url,
    max: options.poolSize ?? 10,
    statement_timeout: statementTimeoutMs,
    // A connection that cannot be made, or a wait for a free one, ends with the statement's deadline at the latest.
    connectionTimeoutMillis: Math.min(5000, deadlineMs),
    idleTimeoutMillis: 30_000,
    // An idle connection whose peer vanished is found by the system, not only by the next statement.
    keepAlive: true,
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
    const why = error instanceof AggregateError
      ? error.errors.map(String).join("; ")
      : error instanceof Error
      ? error.message || (error as PgError).code
      : String(error);
    throw new ConfigError(
      "DATABASE_URL",
      `Cannot start: cannot reach PostgreSQL at ${where} (DATABASE_URL): ${why}${
        userHint(url, error)
      }`,
    );
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

  /** A connection of the pool, waited for until `deadline` (monotonic milliseconds) at most. */
  function checkout(deadline: number): Promise<PooledClient> {
    const asked = pool.connect();
    return within(asked, deadline - performance.now(), () => late(deadlineMs, "connection"), () => {
      // Given up: the connection, when it comes, goes back to the pool unused.
      asked.then((client) => client.release(), () => {});
    });
  }

  /**
   * A checked-out connection: its statements each answered by their
   * deadline or given up, and then the connection broken (closed at its
   * release, never reused). An error event while it is out (the connection
   * lost between statements) breaks it too, rather than ending the process unheard.
   */
  function use(client: PooledClient) {
    let broken = false;
    const lost = (): void => {
      broken = true;
    };
    client.on("error", lost);
    const statement = async <R>(
      text: string,
      params: readonly unknown[],
      deadline: number,
    ): Promise<SqlResult<R>> => {
      if (broken) throw late(deadlineMs, "answer");
      const sent = params.length === 0
        ? client.query(text)
        : client.query({ name: nameOf(text), text, values: [...params] });
      const result = await within(
        sent,
        deadline - performance.now(),
        () => late(deadlineMs, "answer"),
        () => {
          broken = true;
          // The statement's answer, if it ever comes, is for no one.
          sent.catch(() => {});
          // Closed now (at release it would be too): the statement waiting on it ends with it.
          (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection
            ?.stream?.destroy();
        },
      );
      return { rows: result.rows as R[], rowCount: result.rowCount ?? 0 };
    };
    return {
      statement,
      get broken() {
        return broken;
      },
      /** Marks it broken (a ROLLBACK that failed leaves it in a state no one knows). */
      fail(): void {
        broken = true;
      },
      release(): void {
        client.off("error", lost);
        // A connection that failed or hung is closed, not given back for reuse.
        client.release(broken ? new Error("the connection failed or hung") : undefined);
      },
    };
  }

  async function query<R>(text: string, params: readonly unknown[] = []): Promise<SqlResult<R>> {
    const deadline = performance.now() + deadlineMs;
    return guarded(async () => {
      const connection = use(await checkout(deadline));
      try {
        return await connection.statement<R>(text, params, deadline);
      } finally {
        connection.release();
      }
    }, reach);
  }

  const listener = new Listener(
    () =>
      new Client({
        connectionString: url,
        keepAlive: true,
        connectionTimeoutMillis: Math.min(5000, deadlineMs),
        // What an operator sees in pg_stat_activity: the connection that idles on purpose.
        application_name: "tributary-listen",
      }),
    deadlineMs,
    reach,
  );

  return {
    deadlineMs,
    query,
    listen: (channel, handlers) => listener.listen(channel, handlers),
    async transaction(work) {
      const start = performance.now() + deadlineMs;
      const connection = use(await guarded(() => checkout(start), reach));
      const run = <R>(
        text: string,
        params: readonly unknown[] = [],
        deadline = performance.now() + deadlineMs,
      ) => guarded(() => connection.statement<R>(text, params, deadline), reach);
      try {
        await run("BEGIN", [], start);
        const result = await work({ query: (text, params) => run(text, params) });
        await run("COMMIT");
        return result;
      } catch (error) {
        // A connection that hung or failed is not asked for a ROLLBACK: it would hang again, and
        // closing it rolls the transaction back.
        if (!connection.broken) await run("ROLLBACK").catch(() => connection.fail());
        throw error;
      } finally {
        connection.release();
      }
    },
    close: async () => {
      await listener.close();
      await pool.end();
    },
  };
}
