/**
 * What the package's other domains use of relay and its users need not:
 * reached only from inside the package (package.json exports no `_`
 * module), so it can change without a change to the public surface.
 * @module
 */
export { RELAY_ID } from "./tenants.ts";
export { RELAY_SECURITY_SCHEMES } from "./api_docs.ts";
