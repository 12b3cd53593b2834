import type { HttpRequest } from "../http/mod.ts";
import { AuthError } from "./errors.ts";
import type { AccessGrant, TokenService } from "./token_service.ts";

const BEARER = /^Bearer[ ]+([A-Za-z0-9\-._~+/]+=*)\s*$/i;

/**
 * Guards a resource with a bearer token (RFC 6750): the request must carry
 * `Authorization: Bearer <token>` for a live access token with `scope`.
 * Failures carry the RFC 6750 §3 challenge: a bare `Bearer realm` without
 * credentials, `invalid_request` for a malformed header, `invalid_token`,
 * and `insufficient_scope` with the scope needed.
 * @param request the request
 * @param service checks tokens
 * @param scope the scope the resource needs
 * @param realm the protection realm
 * @returns what the token grants
 * @throws {AuthError} `ERR_AUTH_MISSING_TOKEN` (401), `ERR_AUTH_INVALID_REQUEST` (400),
 * `ERR_AUTH_INVALID_TOKEN` (401), `ERR_AUTH_INSUFFICIENT_SCOPE` (403)
 */
export async function requireBearer(
  request: HttpRequest,
  service: TokenService,
  scope: string,
  realm = "tributary",
): Promise<AccessGrant> {
  const header = request.headers["authorization"];
  if (header === undefined || header.trim() === "") {
    throw new AuthError("ERR_AUTH_MISSING_TOKEN", "Send an access token: Authorization: Bearer <token>", {
      headers: { "www-authenticate": `Bearer realm="${realm}"` },
    });
  }
  const match = BEARER.exec(header);
  if (match === null) {
    throw new AuthError("ERR_AUTH_INVALID_REQUEST", "The Authorization header must be: Bearer <token>", {
      headers: { "www-authenticate": `Bearer realm="${realm}", error="invalid_request"` },
    });
  }
  const grant = await service.verifyAccess(match[1]!);
  if (grant === undefined) {
    throw new AuthError("ERR_AUTH_INVALID_TOKEN", "The access token is invalid, expired or revoked", {
      headers: {
        "www-authenticate": `Bearer realm="${realm}", error="invalid_token", ` +
          `error_description="The access token is invalid, expired or revoked"`,
      },
    });
  }
  if (!grant.scope.includes(scope)) {
    throw new AuthError("ERR_AUTH_INSUFFICIENT_SCOPE", `The access token lacks the ${scope} scope`, {
      headers: { "www-authenticate": `Bearer realm="${realm}", error="insufficient_scope", scope="${scope}"` },
    });
  }
  return grant;
}

/**
 * Guards a user's resource: like {@linkcode requireBearer}, and the token
 * must act for a user (a password-grant token), not for a client alone.
 * @param request the request
 * @param service checks tokens
 * @param scope the scope the resource needs
 * @param realm the protection realm
 * @returns the uuid of the user the token acts for
 * @throws {AuthError} as {@linkcode requireBearer}, and `ERR_AUTH_INVALID_TOKEN` (401) for a
 * client's own token
 */
export async function requireUser(
  request: HttpRequest,
  service: TokenService,
  scope: string,
  realm = "tributary",
): Promise<string> {
  const grant = await requireBearer(request, service, scope, realm);
  if (grant.userId === null) {
    const description = "The access token acts for no user; log in with the password grant";
    throw new AuthError("ERR_AUTH_INVALID_TOKEN", description, {
      headers: { "www-authenticate": `Bearer realm="${realm}", error="invalid_token", error_description="${description}"` },
    });
  }
  return grant.userId;
}
