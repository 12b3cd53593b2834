/** Codes of {@linkcode SyncError}. */
export type SyncErrorCode =
  | "ERR_SYNC_INVALID_PATCH"
  | "ERR_SYNC_INVALID_ID"
  | "ERR_SYNC_NO_CONTEXT"
  | "ERR_SYNC_BUSY"
  | "ERR_SYNC_UNKNOWN_REVISION"
  | "ERR_SYNC_REVISION_EXPIRED"
  | "ERR_SYNC_UNKNOWN_TICKET"
  | "ERR_SYNC_TICKET_EXPIRED"
  | "ERR_SYNC_INVALID_IDEMPOTENCY_KEY"
  | "ERR_SYNC_IDEMPOTENCY_MISMATCH"
  | "ERR_SYNC_INVALID_WAIT"
  | "ERR_SYNC_TOO_MANY_STREAMS"
  | "ERR_SYNC_STREAMS_UNAVAILABLE";

/** One problem of a patch body (the API's `ValidationError`, a 422 body holds a list of them). */
export interface PatchFieldError {
  readonly message: string;
  /** Where the problem is, e.g. `objects.messages[2].subject`; absent for the body as a whole. */
  readonly field?: string;
}

/** Options of {@linkcode SyncError}. */
export interface SyncErrorOptions extends ErrorOptions {
  /** The problems of an invalid patch. */
  errors?: readonly PatchFieldError[];
  /** How long to wait before trying again (a user with too much queued). */
  retryAfterMs?: number;
}

/**
 * An error of the sync domain: an invalid patch (`errors` lists every
 * problem), a malformed revision or ticket id, a user without a sync
 * context, a user with too much work queued or too many change streams
 * open, a process at its most streams (or draining), a long-poll's wait out
 * of range, or a revision or ticket that is unknown or past its retention.
 */
export class SyncError extends Error {
  readonly code: SyncErrorCode;
  /** The problems of an invalid patch; empty for the other codes. */
  readonly errors: readonly PatchFieldError[];
  /** How long to wait before trying again, when busy (lib/http sends it as `Retry-After`). */
  readonly retryAfterMs: number | undefined;

  /**
   * Creates a sync error.
   * @param code stable error code
   * @param message human-readable message
   * @param options the patch problems, the wait and the cause
   */
  constructor(code: SyncErrorCode, message: string, options: SyncErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "SyncError";
    this.code = code;
    this.errors = Object.freeze([...(options.errors ?? [])]);
    this.retryAfterMs = options.retryAfterMs;
  }
}

/** A key sent again with another body: 422, as the IETF draft on Idempotency-Key says. */
export function idempotencyMismatch(key: string): SyncError {
  return new SyncError(
    "ERR_SYNC_IDEMPOTENCY_MISMATCH",
    `Idempotency-Key ${
      JSON.stringify(key)
    } was used with another body: a retry sends the same patch; use a new key for a new patch`,
  );
}
