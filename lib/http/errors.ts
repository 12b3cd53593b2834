/** Codes of {@linkcode HttpError}. */
export type HttpErrorCode =
  | "ERR_HTTP_BAD_REQUEST"
  | "ERR_HTTP_MALFORMED_URL"
  | "ERR_HTTP_INVALID_JSON"
  | "ERR_HTTP_JSON_TOO_DEEP"
  | "ERR_HTTP_UNAUTHORIZED"
  | "ERR_HTTP_FORBIDDEN"
  | "ERR_HTTP_ORIGIN_NOT_ALLOWED"
  | "ERR_HTTP_NOT_FOUND"
  | "ERR_HTTP_METHOD_NOT_ALLOWED"
  | "ERR_HTTP_TIMEOUT"
  | "ERR_HTTP_REQUEST_TIMEOUT"
  | "ERR_HTTP_HEADERS_TOO_LARGE"
  | "ERR_HTTP_BODY_TOO_LARGE"
  | "ERR_HTTP_ABORTED"
  | "ERR_HTTP_UNSUPPORTED_MEDIA_TYPE"
  | "ERR_HTTP_RATE_LIMITED"
  | "ERR_HTTP_UNAVAILABLE";

/** Options of {@linkcode HttpError}. */
export interface HttpErrorOptions extends ErrorOptions {
  /** Extra response headers, e.g. `Retry-After` or `Allow`. */
  headers?: Readonly<Record<string, string>>;
  /** The part of the request at fault, e.g. a parameter name. */
  target?: string;
}

/** An error of the HTTP layer itself; its `code` decides the status. */
export class HttpError extends Error {
  readonly code: HttpErrorCode;
  readonly headers: Readonly<Record<string, string>>;
  readonly target: string | undefined;

  /**
   * Creates an HTTP error.
   * @param code stable code, mapped to a status by {@linkcode statusOf}
   * @param message human-readable message
   * @param options headers, target and cause
   */
  constructor(code: HttpErrorCode, message: string, options: HttpErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "HttpError";
    this.code = code;
    this.headers = options.headers ?? {};
    this.target = options.target;
  }
}
