/**
 * The server's configuration: environment variables to a typed record, with
 * errors that name the variable.
 * @module
 */
export { ConfigError } from "./errors.ts";
export { AVAILABLE_SERVICES, STORAGE_TYPES, readApiKeysFile, readClientsFile, readConfig, redactUrl } from "./read_config.ts";
export type { Config, Environment, ServiceName } from "./read_config.ts";
