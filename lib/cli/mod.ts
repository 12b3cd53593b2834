/**
 * The admin command line, `npx tributary <command>`: hashing API keys,
 * adding OAuth clients and relay tenants to their files, managing relay
 * endpoints through the running server, checking datasets and migrating
 * the PostgreSQL schema. Commands are data (their help is derived from them)
 * and take their I/O passed in; `main` binds them to the process.
 * @module
 */
export { CliError } from "./errors.ts";
export type { CliErrorCode, CliErrorOptions } from "./errors.ts";
export type { CliIo, CommandInput, CommandResult, CommandSpec, OptionSpec, PositionalSpec } from "./types.ts";
export { COMMON_OPTIONS, EXIT_CODES, parseCommandLine, PROGRAM, renderHelp } from "./command_line.ts";
export type { CommandLine } from "./command_line.ts";
export { COMMANDS } from "./commands.ts";
export { CLI_SETTINGS } from "./settings.ts";
export type { CliConfig } from "./settings.ts";
export { runCli } from "./run_cli.ts";
export { main, nodeCliIo } from "./node_io.ts";
