/** Codes of {@linkcode SyncClientError}. */
export type SyncClientErrorCode =
  /** The server refused the user name and password (or the client). */
  | "ERR_SYNC_CLIENT_LOGIN_FAILED"
  /** There is no login, or it was revoked: `login` again. */
  | "ERR_SYNC_CLIENT_LOGIN_REQUIRED"
  /** The client was closed. */
  | "ERR_SYNC_CLIENT_CLOSED"
  /** The caller's signal aborted the operation. */
  | "ERR_SYNC_CLIENT_ABORTED"
  /** The server answered what the API does not (a status or a body); `status` says which status. */
  | "ERR_SYNC_CLIENT_RESPONSE"
  /** The storage failed to read or write. */
  | "ERR_SYNC_CLIENT_STORAGE"
  /** `login` as another user while the outbox still holds the first user's writes. */
  | "ERR_SYNC_CLIENT_OTHER_USER";

/** Options of {@linkcode SyncClientError}. */
export interface SyncClientErrorOptions extends ErrorOptions {
  /** The HTTP status of the answer, when there was one. */
  status?: number;
}

/**
 * An error of the sync client, with a stable `code`.
 * @example
 * ```ts
 * try {
 *   await client.login("ada", "wrong password");
 * } catch (error) {
 *   if (error instanceof SyncClientError && error.code === "ERR_SYNC_CLIENT_LOGIN_FAILED") askAgain();
 * }
 * ```
 */
export class SyncClientError extends Error {
  readonly code: SyncClientErrorCode;
  /** The HTTP status of the answer, when there was one. */
  readonly status: number | undefined;

  /**
   * Creates a sync client error.
   * @param code stable error code
   * @param message human-readable message
   * @param options the status and the cause
   */
  constructor(code: SyncClientErrorCode, message: string, options: SyncClientErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "SyncClientError";
    this.code = code;
    this.status = options.status;
  }
}
