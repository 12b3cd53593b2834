/** Codes of {@linkcode CliError}. */
export type CliErrorCode =
  /** The command line is wrong: an unknown command or option, a missing or malformed argument (exit 2). */
  | "ERR_CLI_USAGE"
  /** What the command would add exists already (a tenant or client of that id). */
  | "ERR_CLI_EXISTS"
  /** The server could not be reached. */
  | "ERR_CLI_UNREACHABLE"
  /** The server answered with an error. */
  | "ERR_CLI_SERVER";

/** Options of {@linkcode CliError}. */
export interface CliErrorOptions extends ErrorOptions {
  /** The command the error is about, e.g. `["endpoint", "add"]`, so that its usage can be pointed to. */
  readonly command?: readonly string[];
}

/** An error of the admin command line: its usage, or a command that could not be done. */
export class CliError extends Error {
  readonly code: CliErrorCode;
  readonly command: readonly string[];

  /**
   * Creates a command-line error.
   * @param code stable error code
   * @param message what is wrong
   * @param options the command, and the cause
   */
  constructor(code: CliErrorCode, message: string, options: CliErrorOptions = {}) {
    super(message, options.cause === undefined ? {} : { cause: options.cause });
    this.name = "CliError";
    this.code = code;
    this.command = options.command ?? [];
  }
}
