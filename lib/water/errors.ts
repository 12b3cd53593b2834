/** Codes of {@linkcode WaterError}. */
export type WaterErrorCode =
  | "ERR_WATER_NOT_FOUND"
  | "ERR_WATER_INVALID_ORDER"
  | "ERR_WATER_RESPONSE_TOO_LARGE"
  /** A `$skiptoken` names a row of a dataset replaced or removed since the link was made. */
  | "ERR_WATER_TOKEN_GONE"
  /** An `$apply` that makes more groups than the service answers (`MAX_GROUPS`). */
  | "ERR_WATER_TOO_MANY_GROUPS"
  | "ERR_WATER_DATASET"
  /** A dataset snapshot that cannot be used: damaged, cut short, of another format, or of another version of its data file. */
  | "ERR_WATER_SNAPSHOT";

/** Options of {@linkcode WaterError}. */
export interface WaterErrorOptions extends ErrorOptions {
  /** The query option or field at fault. */
  target?: string;
}

/** An error of the water-data domain. */
export class WaterError extends Error {
  readonly code: WaterErrorCode;
  readonly target: string | undefined;

  /**
   * Creates a water-data error.
   * @param code stable error code
   * @param message human-readable message
   * @param options target and cause
   */
  constructor(code: WaterErrorCode, message: string, options: WaterErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "WaterError";
    this.code = code;
    this.target = options.target;
  }
}

/** A CSV text that breaks RFC 4180; `line` and `column` are 1-based. */
export class CsvSyntaxError extends SyntaxError {
  readonly code = "ERR_WATER_CSV_SYNTAX" as const;
  readonly line: number;
  readonly column: number;
  readonly offset: number;

  /**
   * Creates a CSV syntax error.
   * @param detail what is wrong
   * @param line 1-based line of the fault
   * @param column 1-based field number of the fault
   * @param offset byte offset of the fault
   */
  constructor(detail: string, line: number, column: number, offset: number) {
    super(`Cannot parse CSV at line ${line}, column ${column}: ${detail}`);
    this.name = "CsvSyntaxError";
    this.line = line;
    this.column = column;
    this.offset = offset;
  }
}
