/**
 * The admin command line, `npx tributary <command>`: hashing API keys,
 * adding OAuth clients and relay tenants to their files, managing relay
 * endpoints through the running server, checking datasets and migrating
 * the PostgreSQL schema. Commands are data (their help is derived from them)
 * and take their I/O passed in; `main` binds them to the process.
 * @module
 */
export { main } from "./node_io.ts";
