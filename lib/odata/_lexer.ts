import { FilterSyntaxError } from "./errors.ts";

/** Kinds of filter tokens. */
export type TokenKind =
  | "word"
  | "string"
  | "number"
  | "date"
  | "datetime"
  | "guid"
  | "("
  | ")"
  | ","
  | "/"
  | "end";

/** One token with its place in the text. */
export interface Token {
  readonly kind: TokenKind;
  /** The token's text as written; for strings, the decoded content. */
  readonly text: string;
  readonly start: number;
  readonly end: number;
}

const GUID =
  /[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}(?![0-9A-Za-z_-])/y;
const DATETIME =
  /[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]{1,12})?)?(?:Z|[+-][0-9]{2}:[0-9]{2})/y;
const DATE = /[0-9]{4}-[0-9]{2}-[0-9]{2}/y;
const NUMBER = /-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
const WORD = /[A-Za-z_][A-Za-z0-9_]*/y;
const TRAILING = /[A-Za-z0-9_.]/;

/** Options of {@linkcode tokenize}. */
export interface TokenizeOptions {
  /**
   * Reads `$apply` text: `/` (between transformations) is a token, and a word
   * may start with `$` (`$count`).
   * @default {false}
   */
  apply?: boolean;
}

/**
 * Splits filter text into tokens.
 * @param text the filter
 * @param options whether the text is `$apply`
 * @returns the tokens, ending with an `end` token
 * @throws {FilterSyntaxError} on a character or literal that no token can start with
 */
export function tokenize(text: string, options: TokenizeOptions = {}): Token[] {
  const apply = options.apply === true;
  const tokens: Token[] = [];
  let i = 0;
  const length = text.length;
  while (i < length) {
    const c = text.charCodeAt(i);
    if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) {
      i++;
      continue;
    }
    if (c === 0x28 || c === 0x29 || c === 0x2c) {
      const kind = c === 0x28 ? "(" : c === 0x29 ? ")" : ",";
      tokens.push({ kind, text: text[i]!, start: i, end: i + 1 });
      i++;
      continue;
    }
    if (apply && c === 0x2f) {
      tokens.push({ kind: "/", text: "/", start: i, end: i + 1 });
      i++;
      continue;
    }
    if (apply && c === 0x24) {
      const word = readWord(text, i + 1);
      if (word !== undefined) {
        tokens.push({ kind: "word", text: `$${word.text}`, start: i, end: word.end });
        i = word.end;
        continue;
      }
    }
    if (c === 0x27) {
      const token = readString(text, i);
      tokens.push(token);
      i = token.end;
      continue;
    }
    if (c === 0x22) {
      throw new FilterSyntaxError(
        i,
        "found \" but strings are written in single quotes, e.g. 'pH'",
      );
    }
    const token = readGuid(text, i) ?? readDigits(text, i) ?? readWord(text, i);
    if (token === undefined) {
      throw new FilterSyntaxError(i, `found unexpected character ${JSON.stringify(text[i])}`);
    }
    tokens.push(token);
    i = token.end;
  }
  tokens.push({ kind: "end", text: "", start: length, end: length });
  return tokens;
}

function readString(text: string, start: number): Token {
  let value = "";
  let from = start + 1;
  for (;;) {
    const quote = text.indexOf("'", from);
    if (quote === -1) {
      throw new FilterSyntaxError(start, "found a string that is never closed: add the closing '");
    }
    value += text.slice(from, quote);
    if (text.charCodeAt(quote + 1) === 0x27) {
      value += "'";
      from = quote + 2;
      continue;
    }
    return { kind: "string", text: value, start, end: quote + 1 };
  }
}

function readGuid(text: string, start: number): Token | undefined {
  GUID.lastIndex = start;
  if (!GUID.test(text)) return undefined;
  return { kind: "guid", text: text.slice(start, GUID.lastIndex), start, end: GUID.lastIndex };
}

function readDigits(text: string, start: number): Token | undefined {
  const c = text.charCodeAt(start);
  const digit = c >= 0x30 && c <= 0x39;
  const negative = c === 0x2d && isDigit(text.charCodeAt(start + 1));
  if (!digit && !negative) {
    if (c === 0x2d) throw new FilterSyntaxError(start, 'found "-" but arithmetic is not supported');
    return undefined;
  }
  if (digit) {
    DATETIME.lastIndex = start;
    if (DATETIME.test(text)) return finish(text, "datetime", start, DATETIME.lastIndex);
    DATE.lastIndex = start;
    if (DATE.test(text)) return finish(text, "date", start, DATE.lastIndex);
  }
  NUMBER.lastIndex = start;
  NUMBER.test(text);
  return finish(text, "number", start, NUMBER.lastIndex);
}

function finish(text: string, kind: TokenKind, start: number, end: number): Token {
  if (end < text.length && TRAILING.test(text[end]!)) {
    throw new FilterSyntaxError(
      start,
      `found ${JSON.stringify(text.slice(start, end + 1))}, which is not a valid ${kind}`,
    );
  }
  return { kind, text: text.slice(start, end), start, end };
}

function readWord(text: string, start: number): Token | undefined {
  WORD.lastIndex = start;
  if (!WORD.test(text)) return undefined;
  return { kind: "word", text: text.slice(start, WORD.lastIndex), start, end: WORD.lastIndex };
}

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}
