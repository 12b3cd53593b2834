/** Codes of {@linkcode StorageError}. */
export type StorageErrorCode =
  /** The store cannot take writes now (a failed disk write, an unreachable database): answered 503. */
  | "ERR_STORAGE_UNAVAILABLE"
  /** Stored data cannot be read back as written (a damaged file other than a torn tail). */
  | "ERR_STORAGE_CORRUPT";

/** Options of {@linkcode StorageError}. */
export interface StorageErrorOptions extends ErrorOptions {
  /**
   * When to try again, milliseconds (lib/http answers it as `Retry-After`).
   * @default 1000 for `ERR_STORAGE_UNAVAILABLE`, none for the others
   */
  retryAfterMs?: number;
}

/** A failure of a store's engine rather than of the request. */
export class StorageError extends Error {
  readonly code: StorageErrorCode;
  /** When to try again, milliseconds: set for a store that is away for now. */
  readonly retryAfterMs: number | undefined;

  /**
   * Creates a storage error.
   * @param code stable error code
   * @param message what failed and why
   * @param options the cause, and when to try again
   */
  constructor(code: StorageErrorCode, message: string, options: StorageErrorOptions = {}) {
    super(message, options.cause === undefined ? {} : { cause: options.cause });
    this.name = "StorageError";
    this.code = code;
    this.retryAfterMs = options.retryAfterMs ??
      (code === "ERR_STORAGE_UNAVAILABLE" ? 1000 : undefined);
  }
}
