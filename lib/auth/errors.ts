/** Codes of {@linkcode AuthError}. */
export type AuthErrorCode =
  | "ERR_AUTH_INVALID_REQUEST"
  | "ERR_AUTH_INVALID_CLIENT"
  | "ERR_AUTH_INVALID_CLIENT_CREDENTIALS"
  | "ERR_AUTH_INVALID_GRANT"
  | "ERR_AUTH_UNAUTHORIZED_CLIENT"
  | "ERR_AUTH_UNSUPPORTED_GRANT_TYPE"
  | "ERR_AUTH_INVALID_SCOPE"
  | "ERR_AUTH_UNSUPPORTED_TOKEN_TYPE"
  | "ERR_AUTH_THROTTLED"
  | "ERR_AUTH_MISSING_TOKEN"
  | "ERR_AUTH_INVALID_TOKEN"
  | "ERR_AUTH_INSUFFICIENT_SCOPE"
  | "ERR_AUTH_USERNAME_TAKEN"
  | "ERR_AUTH_INVALID_SIGN_UP";

/** The RFC 6749 §5.2 / RFC 6750 §3.1 error string of each code. */
export const OAUTH_ERRORS: Readonly<Record<AuthErrorCode, string>> = {
  ERR_AUTH_INVALID_REQUEST: "invalid_request",
  ERR_AUTH_INVALID_CLIENT: "invalid_client",
  ERR_AUTH_INVALID_CLIENT_CREDENTIALS: "invalid_client",
  ERR_AUTH_INVALID_GRANT: "invalid_grant",
  ERR_AUTH_UNAUTHORIZED_CLIENT: "unauthorized_client",
  ERR_AUTH_UNSUPPORTED_GRANT_TYPE: "unsupported_grant_type",
  ERR_AUTH_INVALID_SCOPE: "invalid_scope",
  ERR_AUTH_UNSUPPORTED_TOKEN_TYPE: "unsupported_token_type",
  ERR_AUTH_THROTTLED: "invalid_request",
  ERR_AUTH_MISSING_TOKEN: "invalid_request",
  ERR_AUTH_INVALID_TOKEN: "invalid_token",
  ERR_AUTH_INSUFFICIENT_SCOPE: "insufficient_scope",
  ERR_AUTH_USERNAME_TAKEN: "invalid_request",
  ERR_AUTH_INVALID_SIGN_UP: "invalid_request",
};

/** A field-level problem of a request body, as the 422 answers list them. */
export interface SignUpFieldError {
  readonly message: string;
  readonly field?: string;
}

/** Options of {@linkcode AuthError}. */
export interface AuthErrorOptions extends ErrorOptions {
  /** The challenge of a refused credential (RFC 6750 §3, RFC 7617): its scheme and parameters, e.g. `Bearer realm="tributary"`. */
  challenge?: string;
  /** How long to wait before trying again, for a throttled attempt. */
  retryAfterMs?: number;
  /** Field-level problems (for `ERR_AUTH_INVALID_SIGN_UP`). */
  errors?: readonly SignUpFieldError[];
}

/** An error of the token endpoint, the bearer guard or sign-up. */
export class AuthError extends Error {
  readonly code: AuthErrorCode;
  /** The challenge to answer a refused credential with (lib/http sends it as `WWW-Authenticate`). */
  readonly challenge: string | undefined;
  /** How long to wait before trying again (lib/http sends it as `Retry-After`). */
  readonly retryAfterMs: number | undefined;
  readonly errors: readonly SignUpFieldError[];

  /**
   * Creates an authentication error.
   * @param code stable code; its OAuth error string is {@linkcode OAUTH_ERRORS}
   * @param message the `error_description`: printable ASCII without `"` or `\`
   * @param options the challenge, the wait, field errors and cause
   */
  constructor(code: AuthErrorCode, message: string, options: AuthErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "AuthError";
    this.code = code;
    this.challenge = options.challenge;
    this.retryAfterMs = options.retryAfterMs;
    this.errors = options.errors ?? [];
  }

  /** The RFC 6749 / RFC 6750 error string, e.g. `invalid_grant`. */
  get oauthError(): string {
    return OAUTH_ERRORS[this.code];
  }
}
