/** Codes of {@linkcode ODataError}. */
export type ODataErrorCode =
  | "ERR_ODATA_UNKNOWN_FIELD"
  | "ERR_ODATA_TYPE"
  | "ERR_ODATA_QUERY_OPTION"
  | "ERR_ODATA_UNSUPPORTED";

/** Options of {@linkcode ODataError}. */
export interface ODataErrorOptions extends ErrorOptions {
  /** The field or query option at fault. */
  target?: string;
  /** Character position in the filter text, when the error has one. */
  position?: number;
}

/** An OData query that parses but cannot be answered: unknown names, wrong types, bad options. */
export class ODataError extends Error {
  readonly code: ODataErrorCode;
  readonly target: string | undefined;
  readonly position: number | undefined;

  /**
   * Creates an OData error.
   * @param code stable error code
   * @param message human-readable message
   * @param options target, position and cause
   */
  constructor(code: ODataErrorCode, message: string, options: ODataErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "ODataError";
    this.code = code;
    this.target = options.target;
    this.position = options.position;
  }
}

/** A filter that does not follow the grammar; `position` is the 0-based character index. */
export class FilterSyntaxError extends SyntaxError {
  readonly code = "ERR_ODATA_SYNTAX" as const;
  readonly position: number;
  readonly target = "$filter";
  /** What was expected and found, without the position. */
  readonly detail: string;

  /**
   * Creates a syntax error.
   * @param position 0-based character index of the fault
   * @param detail what was expected and found
   */
  constructor(position: number, detail: string) {
    super(`Cannot parse filter at position ${position}: ${detail}`);
    this.name = "FilterSyntaxError";
    this.position = position;
    this.detail = detail;
  }
}

/** An `$apply` that does not follow the grammar; `position` is the 0-based character index. */
export class ApplySyntaxError extends SyntaxError {
  readonly code = "ERR_ODATA_SYNTAX" as const;
  readonly position: number;
  readonly target = "$apply";
  /** What was expected and found, without the position. */
  readonly detail: string;

  /**
   * Creates a syntax error.
   * @param position 0-based character index of the fault
   * @param detail what was expected and found
   */
  constructor(position: number, detail: string) {
    super(`Cannot parse $apply at position ${position}: ${detail}`);
    this.name = "ApplySyntaxError";
    this.position = position;
    this.detail = detail;
  }
}
