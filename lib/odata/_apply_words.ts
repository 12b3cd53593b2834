import type { LiteralNode, Span } from "./ast.ts";
import { ApplySyntaxError, ODataError } from "./errors.ts";
import type { Token } from "./_lexer.ts";
import { isCalendarDate } from "./parse_filter.ts";

// The words and small pieces of `$apply`'s parser: its keywords, the
// transformations it knows but refuses, literals, and how tokens are named.

/** The standard aggregation methods. */
export const METHODS: ReadonlySet<string> = new Set([
  "sum",
  "min",
  "max",
  "average",
  "countdistinct",
]);
/** The arithmetic operators. */
export const ARITHMETIC: ReadonlySet<string> = new Set([
  "add",
  "sub",
  "mul",
  "div",
  "divby",
  "mod",
]);
/** The arithmetic operators that bind tighter than `add` and `sub`. */
export const MULTIPLICATIVE: ReadonlySet<string> = new Set(["mul", "div", "divby", "mod"]);

/** The functions a value expression may call: the date parts and rounding. */
export const VALUE_FUNCTIONS: ReadonlySet<string> = new Set([
  "year",
  "month",
  "day",
  "round",
  "floor",
  "ceiling",
]);

/** Transformations of the Data Aggregation Extension this parser knows but the service does not answer. */
export const OUT_OF_SCOPE: ReadonlySet<string> = new Set([
  "concat",
  "expand",
  "search",
  "from",
  "topsum",
  "bottomsum",
  "toppercent",
  "bottompercent",
  "ancestors",
  "descendants",
  "traverse",
  "nest",
  "join",
  "outerjoin",
  "rollup",
]);

/** Words that cannot name a property or an alias. */
export const WORDS: ReadonlySet<string> = new Set([
  "as",
  "with",
  "asc",
  "desc",
  "and",
  "or",
  "not",
  "eq",
  "ne",
  "lt",
  "le",
  "gt",
  "ge",
  "in",
  "has",
  "true",
  "false",
  "null",
  ...ARITHMETIC,
]);

/**
 * A literal token as a node.
 * @param token a string, number, date, date-time or GUID token
 * @returns the node
 * @throws {ApplySyntaxError} for a number out of range or an impossible date
 */
export function literal(token: Token): LiteralNode {
  const span = spanOf(token);
  switch (token.kind) {
    case "string":
      return { kind: "literal", type: "string", value: token.text, span };
    case "number": {
      const value = Number(token.text);
      if (!Number.isFinite(value)) {
        throw new ApplySyntaxError(
          token.start,
          `found number ${token.text}, which is out of range`,
        );
      }
      return { kind: "literal", type: "number", value, text: token.text, span };
    }
    case "date":
      if (!isCalendarDate(token.text)) {
        throw new ApplySyntaxError(
          token.start,
          `found ${token.text}, which is not a calendar date`,
        );
      }
      return { kind: "literal", type: "date", value: token.text, span };
    case "datetime":
      if (!isCalendarDate(token.text.slice(0, 10)) || Number.isNaN(Date.parse(token.text))) {
        throw new ApplySyntaxError(
          token.start,
          `found ${token.text}, which is not a valid date-time`,
        );
      }
      return { kind: "literal", type: "datetime", value: token.text, span };
    default:
      return { kind: "literal", type: "guid", value: token.text.toLowerCase(), span };
  }
}

/**
 * The error for a construct of the extension the service does not answer.
 * @param position where it starts
 * @param message what to do instead
 * @returns the error
 */
export function unsupported(position: number, message: string): ODataError {
  return new ODataError("ERR_ODATA_UNSUPPORTED", message, { target: "$apply", position });
}

/**
 * Where a token stands.
 * @param token the token
 * @returns its span
 */
export function spanOf(token: Token): Span {
  return { start: token.start, end: token.end };
}

/**
 * A token as a message names it.
 * @param token the token
 * @returns its text, quoted
 */
export function describe(token: Token): string {
  switch (token.kind) {
    case "end":
      return "the end of $apply";
    case "string":
      return `'${token.text.replaceAll("'", "''")}'`;
    default:
      return `"${token.text}"`;
  }
}
