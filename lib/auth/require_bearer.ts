import type { HttpRequest } from "../http/mod.ts";
import { AuthError } from "./errors.ts";
import type { AccessGrant, TokenService } from "./token_service.ts";

const BEARER = /^Bearer[ ]+([A-Za-z0-9\-._~+/]+=*)\s*$/i;
const BEARER_SCHEME = /^Bearer(?:[ ]|$)/i;

/** Options of {@linkcode requireBearer} and {@linkcode requireUser}. */
export interface RequireBearerOptions {
  /** The scope the resource needs. */
  readonly scope: string;
  /**
   * The protection realm named in challenges.
   * @default {"tributary"}
   */
  readonly realm?: string;
}

/**
 * Guards a resource with a bearer token (RFC 6750): the request must carry
 * `Authorization: Bearer <token>` for a live access token with `scope`.
 * Failures carry the RFC 6750 §3 challenge: a bare `Bearer realm` without
 * bearer credentials (none, or another scheme), `invalid_request` for a
 * malformed bearer header, `invalid_token`, and `insufficient_scope` with the
 * scope needed.
 * @param request the request
 * @param service checks tokens
 * @param options the scope needed and the realm
 * @returns what the token grants
 * @throws {AuthError} `ERR_AUTH_MISSING_TOKEN` (401), `ERR_AUTH_INVALID_REQUEST` (400),
 * `ERR_AUTH_INVALID_TOKEN` (401), `ERR_AUTH_INSUFFICIENT_SCOPE` (403)
 */
export async function requireBearer(
  request: HttpRequest,
  service: TokenService,
  options: RequireBearerOptions,
): Promise<AccessGrant> {
  const { scope, realm = "tributary" } = options;
  const header = request.headers["authorization"];
  // Another scheme (Basic, …) is no bearer credentials at all (RFC 6750 §3.1).
  if (header === undefined || !BEARER_SCHEME.test(header.trim())) {
    throw new AuthError(
      "ERR_AUTH_MISSING_TOKEN",
      "Send an access token: Authorization: Bearer <token>",
      {
        challenge: `Bearer realm="${realm}"`,
      },
    );
  }
  const match = BEARER.exec(header);
  if (match === null) {
    throw new AuthError(
      "ERR_AUTH_INVALID_REQUEST",
      "The Authorization header must be: Bearer <token>",
      {
        challenge: `Bearer realm="${realm}", error="invalid_request"`,
      },
    );
  }
  const grant = await service.verifyAccess(match[1]!);
  if (grant === undefined) {
    throw new AuthError(
      "ERR_AUTH_INVALID_TOKEN",
      "The access token is invalid, expired or revoked",
      {
        challenge: `Bearer realm="${realm}", error="invalid_token", ` +
          `error_description="The access token is invalid, expired or revoked"`,
      },
    );
  }
  if (!grant.scope.includes(scope)) {
    throw new AuthError(
      "ERR_AUTH_INSUFFICIENT_SCOPE",
      `The access token lacks the ${scope} scope`,
      {
        challenge: `Bearer realm="${realm}", error="insufficient_scope", scope="${scope}"`,
      },
    );
  }
  return grant;
}

/**
 * Guards a user's resource: like {@linkcode requireBearer}, and the token
 * must act for a user (a password-grant token), not for a client alone.
 * @param request the request
 * @param service checks tokens
 * @param options the scope needed and the realm
 * @returns the uuid of the user the token acts for
 * @throws {AuthError} as {@linkcode requireBearer}, and `ERR_AUTH_INVALID_TOKEN` (401) for a
 * client's own token
 * @example
 * ```ts
 * const userId = await requireUser(request, tokens, { scope: "UserActivity" });
 * ```
 */
export async function requireUser(
  request: HttpRequest,
  service: TokenService,
  options: RequireBearerOptions,
): Promise<string> {
  const realm = options.realm ?? "tributary";
  const grant = await requireBearer(request, service, options);
  if (grant.userId === null) {
    const description = "The access token acts for no user; log in with the password grant";
    throw new AuthError("ERR_AUTH_INVALID_TOKEN", description, {
      challenge:
        `Bearer realm="${realm}", error="invalid_token", error_description="${description}"`,
    });
  }
  return grant.userId;
}
