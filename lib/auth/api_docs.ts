import {
  type BodyDoc,
  type ErrorCode,
  errorStatuses,
  type JsonSchema,
  type ResponseDoc,
  type RouteDoc,
} from "../http/mod.ts";
import {
  codesByStatus,
  errorHeaders,
  errorReason,
  errorResponses,
  FIELD_ERRORS_SCHEMA,
  type SecuritySchemeDoc,
} from "../http/_internal.ts";
import { GRANT_TYPES, SCOPES } from "./clients.ts";
import { AUTH_ERROR_STATUS } from "./error_status.ts";
import { type AuthErrorCode, OAUTH_ERRORS } from "./errors.ts";
import {
  MAX_PASSWORD_LENGTH,
  MAX_USERNAME_LENGTH,
  MIN_PASSWORD_LENGTH,
  MIN_USERNAME_LENGTH,
  NOTIFY_LANGUAGES,
} from "./names.ts";

// The token service's routes as the OpenAPI document describes them: grant
// types, scopes, name and password limits and OAuth error strings come from
// the tables the service checks requests with. The routes
// (create_auth_service.ts) carry these docs.

/** A code a token service's answer may carry: its own, or one of lib/http and below. */
type DocumentedCode = AuthErrorCode | ErrorCode;

/** The statuses of the codes the service documents. */
const STATUSES = errorStatuses(AUTH_ERROR_STATUS);

/** What each scope lets a token do: one entry per scope the service knows. */
const SCOPE_DESCRIPTIONS: Readonly<Record<(typeof SCOPES)[number], string>> = {
  SignUp: "Register users (`POST /api/v2/sign-up`); for a backend, by the client credentials grant",
  UserActivity: "Act for a user: the sync API; for an app, by the password grant",
};

const TOKEN_URL = "/oauth2/token";

/**
 * The security schemes of the token service: `oauth2`, the tokens it issues
 * (client credentials and password flows, refreshed at the token endpoint),
 * and `clientBasic`, a client's id and secret as HTTP Basic at that endpoint.
 */
export const AUTH_SECURITY_SCHEMES: Readonly<Record<string, SecuritySchemeDoc>> = {
  oauth2: {
    type: "oauth2",
    description: "An access token of `POST /oauth2/token`, as `Authorization: Bearer <token>`. " +
      "Missing 401, invalid, expired or revoked 401, without the scope 403 (RFC 6750 §3, with `WWW-Authenticate`).",
    flows: {
      clientCredentials: { tokenUrl: TOKEN_URL, scopes: SCOPE_DESCRIPTIONS },
      password: { tokenUrl: TOKEN_URL, refreshUrl: TOKEN_URL, scopes: SCOPE_DESCRIPTIONS },
    },
  },
  clientBasic: {
    type: "http",
    scheme: "basic",
    description: "A client's id and secret (form-url-encoded, RFC 6749 Appendix B); " +
      "or `client_id` and `client_secret` in the body instead, never both; a public client sends only `client_id`",
  },
};

const OAUTH_STRINGS: ReadonlyMap<string, string> = new Map(Object.entries(OAUTH_ERRORS));

const NO_STORE_HEADERS = {
  "Cache-Control": {
    description: "`no-store`",
    schema: { type: "string", const: "no-store" },
    required: true,
  },
  Pragma: {
    description: "`no-cache`",
    schema: { type: "string", const: "no-cache" },
    required: true,
  },
} as const;

/**
 * The error answers of an OAuth endpoint: RFC 6749 §5.2 JSON
 * (`{"error", "error_description"}`), one per status the error table gives
 * the codes, `error` one of their OAuth strings (any other code is
 * `invalid_request`, an unreachable store `temporarily_unavailable`).
 */
function oauthErrorResponses(codes: readonly DocumentedCode[]): Record<string, ResponseDoc> {
  const responses: Record<string, ResponseDoc> = {};
  for (const [status, group] of codesByStatus(codes, STATUSES)) {
    const strings = new Set(
      group.map((code) =>
        OAUTH_STRINGS.get(code) ?? (status === 503 ? "temporarily_unavailable" : "invalid_request")
      ),
    );
    responses[String(status)] = {
      description: `${errorReason(status)}: ${group.join(", ")}`,
      headers: { ...errorHeaders(status), ...NO_STORE_HEADERS },
      content: {
        "application/json": {
          schema: {
            type: "object",
            required: ["error", "error_description"],
            additionalProperties: false,
            properties: {
              error: { type: "string", enum: [...strings] },
              error_description: { type: "string" },
            },
          },
        },
      },
    };
  }
  return responses;
}

const TOKEN_ERRORS: readonly DocumentedCode[] = [
  "ERR_AUTH_INVALID_REQUEST",
  "ERR_AUTH_INVALID_CLIENT",
  "ERR_AUTH_INVALID_CLIENT_CREDENTIALS",
  "ERR_AUTH_INVALID_GRANT",
  "ERR_AUTH_UNAUTHORIZED_CLIENT",
  "ERR_AUTH_UNSUPPORTED_GRANT_TYPE",
  "ERR_AUTH_INVALID_SCOPE",
  "ERR_AUTH_THROTTLED",
  "ERR_HTTP_BODY_TOO_LARGE",
  "ERR_STORAGE_UNAVAILABLE",
];

const TOKEN_PARAMETERS: Readonly<Record<string, JsonSchema>> = {
  client_id: {
    type: "string",
    description: "With `client_secret`, instead of HTTP Basic; alone for a public client",
  },
  client_secret: { type: "string" },
};

/** A token request's body in both forms the endpoint reads: a form, or a flat JSON object of strings. */
function formOrJson(schema: JsonSchema, example: Readonly<Record<string, string>>): BodyDoc {
  return {
    required: true,
    content: {
      "application/x-www-form-urlencoded": { schema, example },
      "application/json": { schema, example },
    },
  };
}

const TOKEN_REQUEST: JsonSchema = {
  type: "object",
  required: ["grant_type"],
  description: "Unknown parameters are ignored, repeated ones refused, empty ones read as absent",
  properties: {
    grant_type: { type: "string", enum: [...GRANT_TYPES] },
    scope: {
      type: "string",
      description: `Space-separated scopes (${
        SCOPES.join(", ")
      }); by default all the client may have`,
    },
    username: { type: "string", description: "The password grant's user" },
    password: { type: "string", description: "The password grant's password" },
    refresh_token: {
      type: "string",
      description: "The refresh token grant's token: each serves once",
    },
    ...TOKEN_PARAMETERS,
  },
};

const TOKEN_RESPONSE: JsonSchema = {
  type: "object",
  required: ["access_token", "token_type", "expires_in", "scope"],
  additionalProperties: false,
  properties: {
    access_token: { type: "string", pattern: "^[A-Za-z0-9_-]{43}$" },
    token_type: { const: "Bearer" },
    expires_in: { type: "integer", minimum: 0, description: "Seconds" },
    scope: { type: "string" },
    refresh_token: {
      type: "string",
      pattern: "^[A-Za-z0-9_-]{43}$",
      description: "With the password and refresh token grants",
    },
  },
};

const TOKEN_HINT_REQUEST: JsonSchema = {
  type: "object",
  required: ["token"],
  properties: {
    token: { type: "string" },
    token_type_hint: { type: "string", enum: ["access_token", "refresh_token"] },
    ...TOKEN_PARAMETERS,
  },
};

const CLIENT_SECURITY = [{ clientBasic: [] }, {}] as const;

function json(description: string, schema: JsonSchema): ResponseDoc {
  return { description, headers: NO_STORE_HEADERS, content: { "application/json": { schema } } };
}

/** The token service's routes' docs. */
export const AUTH_DOCS: Readonly<
  Record<"token" | "revoke" | "introspect" | "metadata" | "signUp", RouteDoc>
> = {
  token: {
    operationId: "requestToken",
    summary: "A token (RFC 6749): grants client_credentials, password and refresh_token",
    requestBody: formOrJson(TOKEN_REQUEST, { grant_type: "client_credentials", scope: "SignUp" }),
    responses: { "200": json("The token", TOKEN_RESPONSE), ...oauthErrorResponses(TOKEN_ERRORS) },
    security: CLIENT_SECURITY,
  },
  revoke: {
    operationId: "revokeToken",
    summary:
      "Revokes a token (RFC 7009); a refresh token takes its whole login with it; unknown tokens are ignored",
    requestBody: formOrJson(TOKEN_HINT_REQUEST, {
      token: "6Qf2m8u1h0bJfRr3gk3GJ1R4m5fFzWq9m0Hq1Zr2s3E",
    }),
    responses: {
      "200": json("Revoked, or unknown", { type: "object", maxProperties: 0 }),
      ...oauthErrorResponses([
        "ERR_AUTH_INVALID_REQUEST",
        "ERR_AUTH_INVALID_CLIENT",
        "ERR_AUTH_INVALID_CLIENT_CREDENTIALS",
        "ERR_AUTH_UNAUTHORIZED_CLIENT",
        "ERR_AUTH_UNSUPPORTED_TOKEN_TYPE",
        "ERR_AUTH_THROTTLED",
        "ERR_HTTP_BODY_TOO_LARGE",
        "ERR_STORAGE_UNAVAILABLE",
      ]),
    },
    security: CLIENT_SECURITY,
  },
  introspect: {
    operationId: "introspectToken",
    summary:
      "What a token is (RFC 7662), for a confidential client about its own tokens (or any, with the introspect permission)",
    requestBody: formOrJson(TOKEN_HINT_REQUEST, {
      token: "6Qf2m8u1h0bJfRr3gk3GJ1R4m5fFzWq9m0Hq1Zr2s3E",
    }),
    responses: {
      "200": json("Whether the token is active, and if so its scope, client, times and user", {
        type: "object",
        required: ["active"],
        additionalProperties: false,
        properties: {
          active: { type: "boolean" },
          scope: { type: "string" },
          client_id: { type: "string" },
          token_type: { const: "Bearer" },
          exp: { type: "integer", description: "Seconds since the epoch" },
          iat: { type: "integer", description: "Seconds since the epoch" },
          sub: { type: "string", format: "uuid", description: "The user's id, for a user's token" },
          username: { type: "string" },
        },
      }),
      ...oauthErrorResponses([
        "ERR_AUTH_INVALID_REQUEST",
        "ERR_AUTH_INVALID_CLIENT",
        "ERR_AUTH_INVALID_CLIENT_CREDENTIALS",
        "ERR_AUTH_THROTTLED",
        "ERR_HTTP_BODY_TOO_LARGE",
        "ERR_STORAGE_UNAVAILABLE",
      ]),
    },
    security: [{ clientBasic: [] }],
  },
  metadata: {
    operationId: "getAuthorizationServerMetadata",
    summary: "The authorization server's metadata (RFC 8414)",
    responses: {
      "200": json("The metadata; the issuer is the request's origin, or PUBLIC_URL", {
        type: "object",
        required: ["issuer", "token_endpoint", "grant_types_supported", "scopes_supported"],
        properties: {
          issuer: { type: "string", format: "uri" },
          token_endpoint: { type: "string", format: "uri" },
          revocation_endpoint: { type: "string", format: "uri" },
          introspection_endpoint: { type: "string", format: "uri" },
          grant_types_supported: { type: "array", items: { enum: [...GRANT_TYPES] } },
          response_types_supported: { type: "array", items: { type: "string" } },
          token_endpoint_auth_methods_supported: { type: "array", items: { type: "string" } },
          revocation_endpoint_auth_methods_supported: { type: "array", items: { type: "string" } },
          introspection_endpoint_auth_methods_supported: {
            type: "array",
            items: { type: "string" },
          },
          scopes_supported: { type: "array", items: { enum: [...SCOPES] } },
        },
      }),
    },
    security: [],
  },
  signUp: {
    operationId: "signUp",
    summary: "Creates a user, for the password grant",
    requestBody: {
      required: true,
      content: {
        "application/json": {
          schema: {
            type: "object",
            required: ["username", "password"],
            additionalProperties: false,
            properties: {
              username: {
                type: "string",
                minLength: MIN_USERNAME_LENGTH,
                maxLength: MAX_USERNAME_LENGTH,
                description:
                  "Letters (with their marks), digits, `.`, `_`, `-`, `@` and `+` of the PRECIS IdentifierClass " +
                  "(RFC 8265 UsernameCaseMapped), letters of one script (UTS #39, highly restrictive); " +
                  "names that differ only by case or Unicode form are one",
              },
              password: {
                type: "string",
                minLength: MIN_PASSWORD_LENGTH,
                maxLength: MAX_PASSWORD_LENGTH,
                description: "Any Unicode, counted in code points",
              },
              notify_language: { type: ["string", "null"], enum: [...NOTIFY_LANGUAGES, null] },
            },
          },
          example: { username: "ada", password: "correct horse battery", notify_language: "en" },
        },
      },
    },
    responses: {
      "201": {
        description: "The user",
        content: {
          "application/json": {
            schema: {
              type: "object",
              required: ["uuid", "username"],
              additionalProperties: false,
              properties: {
                uuid: { type: "string", format: "uuid" },
                username: { type: "string" },
              },
            },
          },
        },
      },
      "422": {
        description: "Fields that are not valid, each with its problem",
        content: { "application/json": { schema: FIELD_ERRORS_SCHEMA } },
      },
      ...errorResponses(
        [
          "ERR_AUTH_MISSING_TOKEN",
          "ERR_AUTH_INVALID_REQUEST",
          "ERR_AUTH_INVALID_TOKEN",
          "ERR_AUTH_INSUFFICIENT_SCOPE",
          "ERR_AUTH_USERNAME_TAKEN",
          "ERR_HTTP_INVALID_JSON",
          "ERR_HTTP_JSON_TOO_DEEP",
          "ERR_HTTP_BODY_TOO_LARGE",
          "ERR_HTTP_UNSUPPORTED_MEDIA_TYPE",
          "ERR_STORAGE_UNAVAILABLE",
        ] satisfies DocumentedCode[],
        STATUSES,
      ),
    },
    security: [{ oauth2: ["SignUp"] }],
  },
};
