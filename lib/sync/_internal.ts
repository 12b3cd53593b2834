/**
 * What the package's other domains use of sync and its users need not:
 * reached only from inside the package (package.json exports no `_`
 * module), so it can change without a change to the public surface.
 * @module
 */
export { SYNC_MIGRATIONS } from "./_postgres_sync_sql.ts";
