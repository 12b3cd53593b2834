/**
 * What the package's other domains use of auth and its users need not:
 * reached only from inside the package (package.json exports no `_`
 * module), so it can change without a change to the public surface.
 * @module
 */
export { SCOPES } from "./clients.ts";
export { AUTH_SECURITY_SCHEMES } from "./api_docs.ts";
export { AUTH_MIGRATIONS } from "./postgres_auth_store.ts";
