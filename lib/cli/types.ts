import type { Environment, Setting } from "../config/mod.ts";
import type { ConnectPostgresOptions, JournalReport, SqlPool } from "../storage/mod.ts";
import type { LoadDatasetsOptions, LoadReport } from "../water/mod.ts";

/**
 * What the commands touch of the world, passed in: the environment, the
 * terminal, files, the network, the database, the clock and randomness.
 * `nodeCliIo()` gives the real ones; tests give their own.
 */
export interface CliIo {
  /** The environment the settings are read from, e.g. `process.env`. */
  readonly env: Environment;
  /** Writes text to standard output. */
  out(text: string): void;
  /** Writes text to standard error. */
  err(text: string): void;
  /** All of standard input as text; undefined when it is a terminal (nothing was piped in). */
  stdin(): Promise<string | undefined>;
  /** A file's text; undefined when there is no such file. */
  readText(path: string): Promise<string | undefined>;
  /** Replaces a file's text at once (readers see the old text or the new, never a part), keeping its permissions. */
  writeText(path: string, text: string): Promise<void>;
  /** Whether a file (not a folder) is at `path`. */
  isFile(path: string): Promise<boolean>;
  /** Whether a folder is at `path`. */
  isFolder(path: string): Promise<boolean>;
  /** Checks the journals of a state folder, changing nothing (lib/storage's `checkStateDir`). */
  checkState(dir: string): Promise<JournalReport[]>;
  /** Repairs the damaged journals of a state folder, holding its lock (lib/storage's `repairStateDir`). */
  repairState(dir: string): Promise<JournalReport[]>;
  /** A file's bytes, in chunks. */
  readChunks(path: string): AsyncIterable<Uint8Array>;
  /** Loads a datasets folder as the water service does (lib/water's `loadDatasets`), for its report. */
  loadDatasets(dir: string, options: LoadDatasetsOptions): Promise<{ report: LoadReport }>;
  /** Sends an HTTP request, as `fetch` does. */
  fetch(url: string, init: RequestInit): Promise<Response>;
  /** Connects to PostgreSQL, as `connectPostgres` of lib/storage does. */
  connectPostgres(url: string, options: ConnectPostgresOptions): Promise<SqlPool>;
  /** Random bytes, for keys and secrets. */
  random(size: number): Uint8Array;
  /** Wall clock, milliseconds since the epoch. */
  now(): number;
}

/** An option of a command, as `node:util`'s `parseArgs` reads it, with its help. */
export interface OptionSpec {
  readonly type: "string" | "boolean";
  /** Whether it may be given several times (each value is kept). */
  readonly multiple?: boolean;
  /** A one-letter alias. */
  readonly short?: string;
  /** Whether the command cannot run without it. */
  readonly required?: boolean;
  /** The value's placeholder in the help, e.g. `URL`. */
  readonly value?: string;
  /** One line saying what it does. */
  readonly doc: string;
}

/** A positional argument of a command. */
export interface PositionalSpec {
  readonly name: string;
  readonly optional?: boolean;
  readonly doc: string;
}

/** A command's arguments, read and checked against its spec. */
export interface CommandInput {
  /** Option values by name: a string, a list of strings (multiple) or true (boolean); absent when not given. */
  readonly values: Readonly<
    Record<string, string | boolean | readonly (string | boolean)[] | undefined>
  >;
  readonly positionals: readonly string[];
  /** Whether `--json` was given. */
  readonly json: boolean;
}

/** What a command did: its exit code, and what it prints as text or as JSON. */
export interface CommandResult {
  /** 0 done, 1 done but with a failure to report (e.g. a dataset with bad rows). */
  readonly exitCode: 0 | 1;
  /** Printed with `--json`, as one JSON document. */
  readonly json: unknown;
  /** Printed otherwise, one line each. */
  readonly lines: readonly string[];
}

/** A command of the CLI: its words, help and run function. Routes are data: the help is derived from these. */
export interface CommandSpec {
  /** The words that name it, e.g. `["endpoint", "add"]`. */
  readonly path: readonly string[];
  /** One line for the command list. */
  readonly summary: string;
  /** More lines for its own help. */
  readonly details?: readonly string[];
  readonly positionals: readonly PositionalSpec[];
  readonly options: Readonly<Record<string, OptionSpec>>;
  /** The server's settings it reads (listed in its help by variable). */
  readonly settings: readonly Setting<unknown>[];
  /**
   * Command lines a user can paste, without the leading `npx tributary`; leading
   * `NAME=value` settings are shown before it (`DATABASE_URL=… migrate` is
   * shown as `DATABASE_URL=… npx tributary migrate`).
   */
  readonly examples: readonly string[];
  /**
   * Does the command.
   * @throws {CliError} `ERR_CLI_USAGE` for arguments it cannot use, others when it fails
   */
  run(input: CommandInput, io: CliIo): Promise<CommandResult>;
}
