/**
 * tributary: a water-data OData API, an OAuth token and sync service, and a
 * multi-tenant webhook relay, as one zero-dependency library. Each domain is
 * exported as a namespace.
 * @module
 */
export * as auth from "./auth/mod.ts";
export * as config from "./config/mod.ts";
export * as crypto from "./crypto/mod.ts";
export * as http from "./http/mod.ts";
export * as metrics from "./metrics/mod.ts";
export * as odata from "./odata/mod.ts";
export * as relay from "./relay/mod.ts";
export * as sync from "./sync/mod.ts";
export * as water from "./water/mod.ts";
