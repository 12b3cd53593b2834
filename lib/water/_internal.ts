/**
 * What the package's other domains use of water and its users need not:
 * reached only from inside the package (package.json exports no `_`
 * module), so it can change without a change to the public surface.
 * @module
 */
export { WATER_SECURITY_SCHEMES } from "./http/api_docs.ts";
