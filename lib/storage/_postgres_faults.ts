// How the PostgreSQL adapter tells an outage from a refusal, and the
// deadlines every statement and connection wait is held to.
import { StorageError } from "./errors.ts";

export interface PgError {
  readonly code?: string;
  readonly message?: string;
}

// Connection exceptions (08), the server shutting down or starting (57P01-57P03), a cancelled
// statement (57014, statement_timeout), too many connections (53300).
export const UNAVAILABLE_SQLSTATE = /^(08...|57P0[1-3]|57014|53300)$/;
export const UNAVAILABLE_SYSTEM = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "EHOSTUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
]);

/** Refusals of who connects: no such role or no user name (28000), a wrong password (28P01). */
export const AUTHENTICATION_CODES = new Set(["28000", "28P01"]);

/**
 * For a URL without a user name that PostgreSQL refused as to who connects:
 * it then gets PGUSER or the process's login name (USER), or none at all,
 * so say to name one.
 */
export function userHint(url: string, error: unknown): string {
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
  if (
    typeof code === "string" && (UNAVAILABLE_SQLSTATE.test(code) || UNAVAILABLE_SYSTEM.has(code))
  ) return true;
  return typeof message === "string" &&
    /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/i
      .test(message);
}

export function unavailable(error: unknown): StorageError {
  const why = error instanceof Error ? error.message : String(error);
  return new StorageError("ERR_STORAGE_UNAVAILABLE", `Cannot reach the database now: ${why}`, {
    cause: error,
  });
}

/** What a pool tells of its database's reachability. */
export interface Reachability {
  /** The database did not answer. */
  failed(error: unknown): void;
  /** A call succeeded. */
  answered(): void;
}

/** Runs a database call, turning a lost connection into `ERR_STORAGE_UNAVAILABLE`. */
export async function guarded<T>(call: () => Promise<T>, reach: Reachability): Promise<T> {
  let result: T;
  try {
    result = await call();
  } catch (error) {
    if (error instanceof StorageError) {
      reach.failed(error);
      throw error;
    }
    if (!isUnavailable(error)) throw error;
    reach.failed(error);
    throw unavailable(error);
  }
  reach.answered();
  return result;
}

/** The error of a statement given up at its deadline. */
export function late(deadlineMs: number, waiting: "connection" | "answer"): StorageError {
  const what = waiting === "connection"
    ? "no connection to the database was free or could be made"
    : "the database did not answer";
  return new StorageError(
    "ERR_STORAGE_UNAVAILABLE",
    `Cannot reach the database now: ${what} within ${deadlineMs} ms`,
  );
}

/**
 * Settles with `work`, or rejects with `error()` once `ms` have passed
 * (`onLate` runs first): `work` goes on, and what it gives later is dropped.
 */
export function within<T>(
  work: Promise<T>,
  ms: number,
  error: () => Error,
  onLate: () => void,
): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      onLate();
      reject(error());
    }, Math.max(0, ms));
    timer.unref();
    work.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (failure: unknown) => {
        clearTimeout(timer);
        reject(failure);
      },
    );
  });
}
