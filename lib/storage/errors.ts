/** Codes of {@linkcode StorageError}. */
export type StorageErrorCode =
  /** The store cannot take writes now (a failed disk write, an unreachable database): answered 503. */
  | "ERR_STORAGE_UNAVAILABLE"
  /** Stored data cannot be read back as written (a damaged file other than a torn tail). */
  | "ERR_STORAGE_CORRUPT";

/** Options of {@linkcode StorageError}. */
export interface StorageErrorOptions extends ErrorOptions {
  /** Extra response headers, e.g. `Retry-After`. */
  headers?: Readonly<Record<string, string>>;
}

/** A failure of a store's engine rather than of the request. */
export class StorageError extends Error {
  readonly code: StorageErrorCode;
  readonly headers: Readonly<Record<string, string>>;

  /**
   * Creates a storage error.
   * @param code stable error code
   * @param message what failed and why
   * @param options the cause, and headers for the answer
   */
  constructor(code: StorageErrorCode, message: string, options: StorageErrorOptions = {}) {
    super(message, options.cause === undefined ? {} : { cause: options.cause });
    this.name = "StorageError";
    this.code = code;
    this.headers = options.headers ??
      (code === "ERR_STORAGE_UNAVAILABLE" ? { "retry-after": "1" } : {});
  }
}
