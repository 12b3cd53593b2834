import {
  createRouter,
  errorResponse,
  errorStatuses,
  type HttpRequest,
  type HttpResponse,
  keepRoutes,
  readJson,
  type RouteHandler,
  type RouteParams,
  type Router,
  withErrorStatuses,
} from "../http/mod.ts";
import { mergeHeaders, statusOf } from "../http/_internal.ts";
import { GRANT_TYPES, SCOPES } from "./clients.ts";
import { AUTH_DOCS } from "./api_docs.ts";
import {
  checkUsername,
  MAX_PASSWORD_LENGTH,
  MAX_USERNAME_LENGTH,
  MIN_PASSWORD_LENGTH,
  MIN_USERNAME_LENGTH,
  NOTIFY_LANGUAGES,
  preparePassword,
} from "./names.ts";
import { AUTH_ERROR_STATUS } from "./error_status.ts";
import { AuthError, type SignUpFieldError } from "./errors.ts";
import { readTokenRequest } from "./read_token_request.ts";
import { requireBearer } from "./require_bearer.ts";
import type { TokenResponse, TokenService } from "./token_service.ts";
import type { UserRecord } from "./types.ts";

/** Options of {@linkcode createAuthService}. */
export interface AuthServiceOptions {
  /** Called when a user signs up, e.g. to create the user's sync context. */
  onUserCreated?: (user: UserRecord) => void | Promise<void>;
}

/** Headers of every token, revocation and introspection response (RFC 6749 §5.1). */
export const NO_STORE = { "cache-control": "no-store", pragma: "no-cache" } as const;

const JSON_TYPE = "application/json; charset=utf-8";

/**
 * Creates the OAuth 2.0 endpoints and sign-up: `POST /oauth2/token`,
 * `POST /oauth2/revoke` (RFC 7009), `POST /oauth2/introspect` (RFC 7662),
 * `GET /.well-known/oauth-authorization-server` (RFC 8414) and
 * `POST /api/v2/sign-up` (scope `SignUp`). Errors of the OAuth endpoints are
 * RFC 6749 §5.2 JSON, and every response of theirs carries
 * `Cache-Control: no-store` and `Pragma: no-cache`.
 * @param tokens the token service
 * @param options the sign-up hook
 * @returns the handler, with its routes
 * @example
 * ```ts
 * const handler = createAuthService(tokens, { onUserCreated: (user) => console.log(`new user ${user.username}`) });
 * createServer(createNodeListener(handler)).listen(8000);
 * ```
 */
export function createAuthService(tokens: TokenService, options: AuthServiceOptions = {}): Router {
  const routes = createRouter([
    {
      method: "POST",
      path: "/oauth2/token",
      handler: async (request) => {
        const answer = await tokens.token(await readTokenRequest(request));
        return { status: 200, headers: OAUTH_HEADERS, body: renderToken(answer) };
      },
      doc: AUTH_DOCS.token,
    },
    {
      method: "POST",
      path: "/oauth2/revoke",
      handler: async (request) => {
        await tokens.revoke(await readTokenRequest(request));
        // RFC 7009 §2.2 leaves the body to the server: an empty JSON object, typed, which strict clients parse.
        return oauthJson(200, {});
      },
      doc: AUTH_DOCS.revoke,
    },
    {
      method: "POST",
      path: "/oauth2/introspect",
      handler: async (request) =>
        oauthJson(200, await tokens.introspect(await readTokenRequest(request))),
      doc: AUTH_DOCS.introspect,
    },
    {
      method: "GET",
      path: "/.well-known/oauth-authorization-server",
      // The issuer follows the request's origin unless PUBLIC_URL fixes it: never cached.
      handler: (request) => ({
        ...jsonBody(200, metadata(request.origin)),
        headers: OAUTH_HEADERS,
      }),
      doc: AUTH_DOCS.metadata,
    },
    {
      method: "POST",
      path: "/api/v2/sign-up",
      handler: validationArray(async (request) => {
        await requireBearer(request, tokens, { scope: "SignUp" });
        const { username, password, language } = readSignUp(
          await readJson(request, { maxBytes: 16_384, maxDepth: 4 }),
        );
        const user = await tokens.createUser({ username, password, notifyLanguage: language });
        if (user === undefined) {
          throw new AuthError(
            "ERR_AUTH_USERNAME_TAKEN",
            `The user name ${JSON.stringify(username)} is taken`,
          );
        }
        await options.onUserCreated?.(user);
        return jsonBody(201, { uuid: user.uuid, username: user.username });
      }),
      doc: AUTH_DOCS.signUp,
    },
  ]);
  // Everything under /oauth2, unknown paths and methods included, answers OAuth errors with no-store;
  // the rest (sign-up, metadata) the JSON error body every service writes.
  const oauthRoutes = oauth(async (request) => routes(request));
  const others = withErrorStatuses(routes, STATUSES);
  return keepRoutes(
    function authService(request: HttpRequest): HttpResponse | Promise<HttpResponse> {
      return request.path.startsWith("/oauth2/") || request.path === "/oauth2"
        ? oauthRoutes(request, NO_PARAMS)
        : others(request);
    },
    routes,
  );
}

const NO_PARAMS: RouteParams = Object.freeze({});

/** The statuses of the codes the service answers with: its own, and lib/http's. */
const STATUSES = errorStatuses(AUTH_ERROR_STATUS);

/** Answers a sign-up validation error as the API documents it: 422 with `[{message, field}]`. */
function validationArray(handler: (request: HttpRequest) => Promise<HttpResponse>): RouteHandler {
  return async (request) => {
    try {
      return await handler(request);
    } catch (error) {
      if (error instanceof AuthError && error.code === "ERR_AUTH_INVALID_SIGN_UP") {
        return jsonBody(422, error.errors);
      }
      throw error;
    }
  };
}

/** The RFC 8414 metadata of the server at `issuer`. */
function metadata(issuer: string): Record<string, unknown> {
  const methods = ["client_secret_basic", "client_secret_post", "none"];
  return {
    issuer,
    token_endpoint: `${issuer}/oauth2/token`,
    revocation_endpoint: `${issuer}/oauth2/revoke`,
    introspection_endpoint: `${issuer}/oauth2/introspect`,
    grant_types_supported: [...GRANT_TYPES],
    response_types_supported: [],
    token_endpoint_auth_methods_supported: methods,
    revocation_endpoint_auth_methods_supported: methods,
    introspection_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post"],
    scopes_supported: [...SCOPES],
  };
}

/** Renders errors of an OAuth endpoint as RFC 6749 §5.2 JSON with no-store headers. */
function oauth(handler: (request: HttpRequest) => Promise<HttpResponse>): RouteHandler {
  return async (request) => {
    try {
      return await handler(request);
    } catch (error) {
      const status = statusOf(error, STATUSES);
      if (status === 500) return oauthJson(500, { error: "server_error" });
      // A store that cannot be reached (503, with Retry-After): the client should simply try again.
      const code = error instanceof AuthError
        ? error.oauthError
        : status === 503
        ? "temporarily_unavailable"
        : "invalid_request";
      const description = error instanceof Error
        ? error.message.replace(/[^\x20-\x21\x23-\x5b\x5d-\x7e]/g, "?")
        : "";
      return oauthJson(status, { error: code, error_description: description }, headersOf(error));
    }
  };
}

/** The headers lib/http gives the error's answer (`WWW-Authenticate`, `Retry-After`), its content type aside. */
function headersOf(error: unknown): Readonly<Record<string, string>> {
  const headers = errorResponse(error, STATUSES).headers ?? {};
  const { "content-type": _type, ...rest } = headers;
  return rest;
}

const OAUTH_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  ...NO_STORE,
  "content-type": JSON_TYPE,
});

function oauthJson(
  status: number,
  body: unknown,
  headers?: Readonly<Record<string, string>>,
): HttpResponse {
  const all = headers === undefined ? OAUTH_HEADERS : mergeHeaders(headers, OAUTH_HEADERS);
  return { status, headers: all, body: JSON.stringify(body) };
}

/** A token response as JSON; tokens are base64url, so only the scope needs escaping. */
function renderToken(answer: TokenResponse): string {
  const refresh = answer.refresh_token === undefined
    ? ""
    : `,"refresh_token":"${answer.refresh_token}"`;
  return `{"access_token":"${answer.access_token}","token_type":"Bearer","expires_in":${answer.expires_in},"scope":${
    JSON.stringify(answer.scope)
  }${refresh}}`;
}

function jsonBody(status: number, body: unknown): HttpResponse {
  return { status, headers: { "content-type": JSON_TYPE }, body: JSON.stringify(body) };
}

/** Checks a sign-up body: `{username, password, notify_language?}`. */
function readSignUp(
  body: unknown,
): { username: string; password: string; language: string | null } {
  const errors: SignUpFieldError[] = [];
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw signUpError([{ message: "The body must be a JSON object" }]);
  }
  const record = body as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    if (!["username", "password", "notify_language"].includes(key)) {
      errors.push({ message: `Unknown field ${JSON.stringify(key)}`, field: key });
    }
  }
  // New names only: those accepted before these rules keep logging in (prepareUsername).
  const checked = typeof record["username"] === "string"
    ? checkUsername(record["username"])
    : undefined;
  const username = checked?.kind === "valid" ? checked.username : undefined;
  if (username === undefined) {
    errors.push({
      message: checked?.kind === "invalid"
        ? checked.message
        : `User name must be a string of ${MIN_USERNAME_LENGTH} to ${MAX_USERNAME_LENGTH} letters (with their accents), digits, '.', '_', '-', '@' or '+'`,
      field: "username",
    });
  }
  const password = typeof record["password"] === "string"
    ? preparePassword(record["password"])
    : undefined;
  if (password === undefined) {
    errors.push({
      message: `Password must be ${MIN_PASSWORD_LENGTH} to ${MAX_PASSWORD_LENGTH} characters`,
      field: "password",
    });
  }
  const language = record["notify_language"] ?? null;
  if (language !== null && (typeof language !== "string" || !NOTIFY_LANGUAGES.includes(language))) {
    errors.push({
      message: `notify_language must be one of ${NOTIFY_LANGUAGES.join(", ")} or null`,
      field: "notify_language",
    });
  }
  if (errors.length > 0) throw signUpError(errors);
  return { username: username!, password: password!, language: language as string | null };
}

function signUpError(errors: readonly SignUpFieldError[]): AuthError {
  return new AuthError(
    "ERR_AUTH_INVALID_SIGN_UP",
    "Cannot sign up: the request has invalid fields",
    { errors },
  );
}
