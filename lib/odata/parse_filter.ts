import type { CompareOp, FilterNode, LiteralNode, Span } from "./ast.ts";
import { FilterSyntaxError } from "./errors.ts";
import { FILTER_FUNCTIONS } from "./functions.ts";
import { type Token, tokenize } from "./_lexer.ts";

/** Options of {@linkcode parseFilter}. */
export interface ParseFilterOptions {
  /**
   * Deepest nesting of parentheses, `not` and function calls.
   * @default {64}
   */
  maxDepth?: number;
  /**
   * Longest accepted filter, in characters.
   * @default {16384}
   */
  maxLength?: number;
}

const COMPARE_OPS: Readonly<Record<string, CompareOp>> = {
  eq: "eq",
  ne: "ne",
  lt: "lt",
  le: "le",
  gt: "gt",
  ge: "ge",
  lte: "le",
  gte: "ge",
};

const UNSUPPORTED_OPS = new Set(["has", "add", "sub", "mul", "div", "divby", "mod"]);
const KEYWORDS = new Set([
  "and",
  "or",
  "not",
  "in",
  ...Object.keys(COMPARE_OPS),
  ...UNSUPPORTED_OPS,
]);

/**
 * Parses an OData `$filter` expression into an AST with source positions. No
 * schema is needed: names are checked later, by binding. Supports `eq ne lt le
 * gt ge` (and DataStream's `lte gte`), `in (...)`, `and or not`, parentheses
 * with OData precedence, string, number, date, date-time, GUID, boolean and
 * null literals, and the functions of {@linkcode FILTER_FUNCTIONS}.
 * @param text the filter, already URL-decoded
 * @param options nesting and length limits
 * @returns the root node
 * @throws {FilterSyntaxError} with the 0-based `position` of the fault
 * @example
 * ```ts
 * const ast = parseFilter("CharacteristicName eq 'pH' and ResultValue gt 7");
 * ast.kind; // "and"
 * ```
 */
export function parseFilter(text: string, options: ParseFilterOptions = {}): FilterNode {
  const maxLength = options.maxLength ?? 16_384;
  if (text.length > maxLength) {
    throw new FilterSyntaxError(maxLength, `found a filter longer than ${maxLength} characters`);
  }
  const parser = new FilterParser(tokenize(text), options.maxDepth ?? 64);
  const root = parser.parseOr();
  const rest = parser.peek();
  if (rest.kind !== "end") {
    throw new FilterSyntaxError(
      rest.start,
      `expected "and", "or" or the end of the filter but found ${describe(rest)}`,
    );
  }
  return root;
}

/**
 * The recursive-descent parser of filter expressions over a token list, from
 * a token on: `$apply`'s parser hands it the conditions of `filter(...)`, so
 * that their positions are those of the whole text.
 */
export class FilterParser {
  readonly #tokens: readonly Token[];
  readonly #maxDepth: number;
  #index: number;
  #depth = 0;

  /**
   * Starts a parser.
   * @param tokens the tokens, ending with an `end` token
   * @param maxDepth deepest nesting accepted
   * @param index the first token to read
   */
  constructor(tokens: readonly Token[], maxDepth: number, index = 0) {
    this.#tokens = tokens;
    this.#maxDepth = maxDepth;
    this.#index = index;
  }

  /** The next token to read. */
  get index(): number {
    return this.#index;
  }

  peek(): Token {
    return this.#tokens[this.#index]!;
  }

  #next(): Token {
    const token = this.#tokens[this.#index]!;
    if (token.kind !== "end") this.#index++;
    return token;
  }

  #isWord(token: Token, word: string): boolean {
    return token.kind === "word" && token.text === word;
  }

  #enter(at: Token): void {
    if (++this.#depth > this.#maxDepth) {
      throw new FilterSyntaxError(at.start, `found nesting deeper than ${this.#maxDepth} levels`);
    }
  }

  #leave(): void {
    this.#depth--;
  }

  parseOr(): FilterNode {
    return this.#parseLogical("or", () => this.#parseAnd());
  }

  #parseAnd(): FilterNode {
    return this.#parseLogical("and", () => this.#parseComparison());
  }

  #parseLogical(op: "and" | "or", operand: () => FilterNode): FilterNode {
    const first = operand();
    if (!this.#isWord(this.peek(), op)) return first;
    const operands = [first];
    while (this.#isWord(this.peek(), op)) {
      this.#next();
      operands.push(operand());
    }
    return { kind: op, operands, span: join(first.span, operands.at(-1)!.span) };
  }

  #parseComparison(): FilterNode {
    let left = this.#parseUnary();
    for (;;) {
      const token = this.peek();
      if (token.kind !== "word") return left;
      const op = COMPARE_OPS[token.text];
      if (op !== undefined && Object.hasOwn(COMPARE_OPS, token.text)) {
        this.#next();
        const right = this.#parseUnary();
        left = { kind: "compare", op, left, right, span: join(left.span, right.span) };
      } else if (token.text === "in") {
        this.#next();
        const { values, end } = this.#parseList();
        left = { kind: "in", operand: left, values, span: { start: left.span.start, end } };
      } else if (UNSUPPORTED_OPS.has(token.text)) {
        throw new FilterSyntaxError(
          token.start,
          `found operator "${token.text}", which is not supported`,
        );
      } else if (KEYWORDS.has(token.text.toLowerCase()) && !KEYWORDS.has(token.text)) {
        throw new FilterSyntaxError(
          token.start,
          `found "${token.text}" but operators are lower-case: write "${token.text.toLowerCase()}"`,
        );
      } else {
        return left;
      }
    }
  }

  #parseUnary(): FilterNode {
    const token = this.peek();
    if (!this.#isWord(token, "not")) return this.#parsePrimary();
    this.#next();
    this.#enter(token);
    const operand = this.#parseUnary();
    this.#leave();
    return { kind: "not", operand, span: { start: token.start, end: operand.span.end } };
  }

  #parsePrimary(): FilterNode {
    const token = this.#next();
    switch (token.kind) {
      case "(": {
        this.#enter(token);
        const inner = this.parseOr();
        const close = this.#expect(")", '")"');
        this.#leave();
        // The parentheses belong to the node, so that the spans of `not (...)`
        // and `(...) and ...` cover their whole text.
        return { ...inner, span: { start: token.start, end: close.end } };
      }
      case "string":
        return { kind: "literal", type: "string", value: token.text, span: spanOf(token) };
      case "number":
        return numberLiteral(token);
      case "date":
        return { kind: "literal", type: "date", value: checkDate(token), span: spanOf(token) };
      case "datetime":
        return {
          kind: "literal",
          type: "datetime",
          value: checkDateTime(token),
          span: spanOf(token),
        };
      case "guid":
        return {
          kind: "literal",
          type: "guid",
          value: token.text.toLowerCase(),
          span: spanOf(token),
        };
      case "word":
        return this.#parseWord(token);
      case ")":
      case ",":
      case "/":
      case "end":
        throw new FilterSyntaxError(token.start, `expected a value but found ${describe(token)}`);
      default: {
        const unreachable: never = token.kind;
        throw new FilterSyntaxError(token.start, `found unexpected token ${String(unreachable)}`);
      }
    }
  }

  #parseWord(token: Token): FilterNode {
    const span = spanOf(token);
    switch (token.text) {
      case "true":
        return { kind: "literal", type: "boolean", value: true, span };
      case "false":
        return { kind: "literal", type: "boolean", value: false, span };
      case "null":
        return { kind: "literal", type: "null", value: null, span };
    }
    if (KEYWORDS.has(token.text)) {
      throw new FilterSyntaxError(token.start, `expected a value but found ${describe(token)}`);
    }
    if (this.peek().kind === "(") return this.#parseCall(token);
    return { kind: "member", name: token.text, span };
  }

  #parseCall(name: Token): FilterNode {
    const signature = FILTER_FUNCTIONS.get(name.text);
    if (signature === undefined) {
      const lower = FILTER_FUNCTIONS.has(name.text.toLowerCase())
        ? `; function names are lower-case: write "${name.text.toLowerCase()}"`
        : "";
      throw new FilterSyntaxError(name.start, `found unknown function "${name.text}"${lower}`);
    }
    this.#enter(name);
    this.#next();
    const args: FilterNode[] = [];
    if (this.peek().kind !== ")") {
      args.push(this.parseOr());
      while (this.peek().kind === ",") {
        this.#next();
        args.push(this.parseOr());
      }
    }
    const close = this.#expect(")", '"," or ")"');
    this.#leave();
    const most = signature.args.length;
    const least = most - signature.optional;
    if (args.length < least || args.length > most) {
      const wanted = least === most ? `${most}` : `${least} or ${most}`;
      throw new FilterSyntaxError(
        name.start,
        `found ${name.text}() with ${args.length} argument(s) but it takes ${wanted}`,
      );
    }
    return { kind: "call", name: name.text, args, span: { start: name.start, end: close.end } };
  }

  #parseList(): { values: FilterNode[]; end: number } {
    const open = this.#expect("(", '"(" after "in"');
    this.#enter(open);
    const values: FilterNode[] = [this.#parsePrimary()];
    while (this.peek().kind === ",") {
      this.#next();
      values.push(this.#parsePrimary());
    }
    const close = this.#expect(")", '"," or ")"');
    this.#leave();
    return { values, end: close.end };
  }

  #expect(kind: "(" | ")", wanted: string): Token {
    const token = this.#next();
    if (token.kind !== kind) {
      throw new FilterSyntaxError(token.start, `expected ${wanted} but found ${describe(token)}`);
    }
    return token;
  }
}

function numberLiteral(token: Token): LiteralNode {
  const value = Number(token.text);
  if (!Number.isFinite(value)) {
    throw new FilterSyntaxError(token.start, `found number ${token.text}, which is out of range`);
  }
  return { kind: "literal", type: "number", value, text: token.text, span: spanOf(token) };
}

const DAYS_IN_MONTH = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function checkDate(token: Token): string {
  const text = token.text.slice(0, 10);
  if (!isCalendarDate(text)) {
    throw new FilterSyntaxError(token.start, `found ${text}, which is not a calendar date`);
  }
  return text;
}

function checkDateTime(token: Token): string {
  checkDate(token);
  if (Number.isNaN(Date.parse(token.text))) {
    throw new FilterSyntaxError(token.start, `found ${token.text}, which is not a valid date-time`);
  }
  return token.text;
}

/**
 * Tells whether `YYYY-MM-DD` text names a real calendar day.
 * @param text candidate date
 * @returns whether it is a valid date
 */
export function isCalendarDate(text: string): boolean {
  if (!/^[0-9]{4}-[0-9]{2}-[0-9]{2}$/.test(text)) return false;
  const year = Number(text.slice(0, 4));
  const month = Number(text.slice(5, 7));
  const day = Number(text.slice(8, 10));
  if (month < 1 || month > 12 || day < 1) return false;
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  const limit = month === 2 && !leap ? 28 : DAYS_IN_MONTH[month - 1]!;
  return day <= limit;
}

function spanOf(token: Token): Span {
  return { start: token.start, end: token.end };
}

function join(first: Span, last: Span): Span {
  return { start: first.start, end: last.end };
}

function describe(token: Token): string {
  switch (token.kind) {
    case "end":
      return "the end of the filter";
    case "string":
      return `'${token.text.replaceAll("'", "''")}'`;
    default:
      return `"${token.text}"`;
  }
}
