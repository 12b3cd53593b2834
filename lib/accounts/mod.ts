/**
 * Accounts: the token service and the sync API as one module of an app,
 * on stores a user and its sync context share (a sign-up writes both: one
 * transaction on PostgreSQL, the context first on the journals).
 * @module
 */
export { ACCOUNTS_MODULE } from "./accounts_module.ts";
export { DATABASE_SCHEMAS } from "./open_account_stores.ts";
