/**
 * OAuth 2.0 authorization: registered clients, users with scrypt-hashed
 * passwords, the `client_credentials`, `password` and `refresh_token`
 * grants, opaque tokens stored as SHA-256 with rotation and reuse detection,
 * revocation, introspection, server metadata, a bearer guard and sign-up.
 * @module
 */
export { AuthError } from "./errors.ts";
export type { AuthErrorCode, AuthErrorOptions, SignUpFieldError } from "./errors.ts";
export { AUTH_ERROR_STATUS } from "./error_status.ts";
export { GRANT_TYPES, parseClients } from "./clients.ts";
export type { Client, GrantType } from "./clients.ts";
export { readClientsFile } from "./read_clients_file.ts";
export { AUTH_SETTINGS } from "./settings.ts";
export type { AuthConfig } from "./settings.ts";
export { hashPassword, verifyPassword } from "./password_hash.ts";
export {
  checkUsername,
  enforceUsernameCaseMapped,
  enforceUsernameCasePreserved,
  identifierProperty,
} from "./names.ts";
export type { PrecisProperty, UsernameCheck, UsernameRule } from "./names.ts";
export type { HashPasswordOptions } from "./password_hash.ts";
export type { AuthStore, LoginLimiter, LoginSubject, TokenRecord, UserRecord } from "./types.ts";
export { MemoryAuthStore } from "./memory_auth_store.ts";
export type { AuthChange, AuthSnapshot, MemoryAuthStoreOptions } from "./memory_auth_store.ts";
export { LoginThrottle } from "./login_throttle.ts";
export { PostgresAuthStore } from "./postgres_auth_store.ts";
export { PostgresLoginThrottle } from "./postgres_login_throttle.ts";
export type { LoginThrottleOptions } from "./login_throttle.ts";
export { TokenService } from "./token_service.ts";
export type {
  AccessGrant,
  BasicCredentials,
  IntrospectionResponse,
  TokenRequest,
  TokenResponse,
  TokenServiceOptions,
} from "./token_service.ts";
export { readTokenRequest } from "./read_token_request.ts";
export type { ReadTokenRequestOptions } from "./read_token_request.ts";
export { requireBearer, requireUser } from "./require_bearer.ts";
export type { RequireBearerOptions } from "./require_bearer.ts";
export { createAuthService } from "./create_auth_service.ts";
export type { AuthServiceOptions } from "./create_auth_service.ts";
export { startAuthService } from "./start_auth_service.ts";
export type { StartAuthServiceOptions, StartedAuthService } from "./start_auth_service.ts";
