import type { MemberNode } from "./ast.ts";
import type {
  AggregateItem,
  AggregateMethod,
  ApplyNode,
  ApplyOrderKey,
  ApplyTransformation,
  ArithmeticOp,
  ComputeItem,
  ValueNode,
} from "./apply_ast.ts";
import { ApplySyntaxError, FilterSyntaxError } from "./errors.ts";
import { FILTER_FUNCTIONS } from "./functions.ts";
import { type Token, tokenize } from "./_lexer.ts";
import { FilterParser } from "./parse_filter.ts";
import {
  ARITHMETIC,
  describe,
  literal,
  METHODS,
  MULTIPLICATIVE,
  OUT_OF_SCOPE,
  spanOf,
  unsupported,
  VALUE_FUNCTIONS,
  WORDS,
} from "./_apply_words.ts";

/** Options of {@linkcode parseApply}. */
export interface ParseApplyOptions {
  /**
   * Deepest nesting of parentheses, `not` and function calls, and most
   * arithmetic operators in one expression.
   * @default {64}
   */
  maxDepth?: number;
  /**
   * Longest accepted `$apply`, in characters.
   * @default {16384}
   */
  maxLength?: number;
  /**
   * Most transformations in the sequence.
   * @default {32}
   */
  maxTransformations?: number;
}

/**
 * Parses an OData `$apply` (Data Aggregation Extension 4.0) into a list of
 * transformations with source positions. No schema is needed: names are
 * checked later, by binding. Reads `identity`, `filter(...)` (the `$filter`
 * grammar), `compute(expr as Alias, ...)`, `aggregate(X with method as
 * Alias, $count as Alias, ...)`, `groupby((P, ...))` and
 * `groupby((P, ...), aggregate(...))`, `orderby(P [asc|desc], ...)`,
 * `top(N)`, `skip(N)`, `topcount(N, X)` and `bottomcount(N, X)`, chained with
 * `/`. Value expressions are properties, literals, `year` `month` `day`
 * `round` `floor` `ceiling`, and `add sub mul div divby mod`.
 * @param text the `$apply`, already URL-decoded
 * @param options nesting, length and sequence limits
 * @returns the transformations, in order
 * @throws {ApplySyntaxError} with the 0-based `position` of the fault
 * @throws {ODataError} `ERR_ODATA_UNSUPPORTED` (target `$apply`, with the
 * position) for a transformation or construct of the extension that the
 * service does not answer: `concat`, `expand`, `rollup`, navigation paths,
 * custom aggregates, `from`, a chain inside `groupby`, and the like
 * @example
 * ```ts
 * const apply = parseApply(
 *   "filter(CharacteristicName eq 'pH')/groupby((LocationId), aggregate(ResultValue with average as Mean))",
 * );
 * apply[1]!.kind; // "groupby"
 * ```
 */
export function parseApply(text: string, options: ParseApplyOptions = {}): ApplyNode {
  const maxLength = options.maxLength ?? 16_384;
  if (text.length > maxLength) {
    throw new ApplySyntaxError(maxLength, `found an $apply longer than ${maxLength} characters`);
  }
  try {
    const parser = new ApplyParser(
      tokenize(text, { apply: true }),
      options.maxDepth ?? 64,
      options.maxTransformations ?? 32,
    );
    return parser.parse();
  } catch (error) {
    if (error instanceof FilterSyntaxError) {
      throw new ApplySyntaxError(error.position, error.detail);
    }
    throw error;
  }
}

class ApplyParser {
  readonly #tokens: readonly Token[];
  readonly #maxDepth: number;
  readonly #maxTransformations: number;
  #index = 0;
  #depth = 0;

  constructor(tokens: readonly Token[], maxDepth: number, maxTransformations: number) {
    this.#tokens = tokens;
    this.#maxDepth = maxDepth;
    this.#maxTransformations = maxTransformations;
  }

  parse(): ApplyNode {
    const sequence: ApplyTransformation[] = [];
    for (;;) {
      const first = this.#peek();
      if (sequence.length === this.#maxTransformations) {
        throw new ApplySyntaxError(
          first.start,
          `found more than ${this.#maxTransformations} transformations`,
        );
      }
      sequence.push(this.#transformation());
      const token = this.#next();
      if (token.kind === "end") return sequence;
      if (token.kind !== "/") {
        throw new ApplySyntaxError(
          token.start,
          `expected "/" or the end of $apply but found ${describe(token)}`,
        );
      }
    }
  }

  #peek(): Token {
    return this.#tokens[this.#index]!;
  }

  #next(): Token {
    const token = this.#tokens[this.#index]!;
    if (token.kind !== "end") this.#index++;
    return token;
  }

  #expect(kind: Token["kind"], wanted: string): Token {
    const token = this.#next();
    if (token.kind !== kind) {
      throw new ApplySyntaxError(token.start, `expected ${wanted} but found ${describe(token)}`);
    }
    return token;
  }

  #expectWord(word: string, wanted: string): Token {
    const token = this.#next();
    if (token.kind !== "word" || token.text !== word) {
      throw new ApplySyntaxError(token.start, `expected ${wanted} but found ${describe(token)}`);
    }
    return token;
  }

  #isWord(word: string): boolean {
    const token = this.#peek();
    return token.kind === "word" && token.text === word;
  }

  #enter(at: Token): void {
    if (++this.#depth > this.#maxDepth) {
      throw new ApplySyntaxError(at.start, `found nesting deeper than ${this.#maxDepth} levels`);
    }
  }

  #leave(): void {
    this.#depth--;
  }

  /** A list inside parentheses: `(item, item, ...)`, at least one item. */
  #list<T>(open: string, item: () => T): { items: T[]; end: number } {
    const paren = this.#expect("(", `"(" after "${open}"`);
    this.#enter(paren);
    const items = [item()];
    while (this.#peek().kind === ",") {
      this.#next();
      items.push(item());
    }
    const close = this.#expect(")", '"," or ")"');
    this.#leave();
    return { items, end: close.end };
  }

  #transformation(): ApplyTransformation {
    const name = this.#next();
    if (name.kind !== "word") {
      throw new ApplySyntaxError(
        name.start,
        `expected a transformation, e.g. groupby(...), but found ${describe(name)}`,
      );
    }
    const start = name.start;
    switch (name.text) {
      case "identity":
        return { kind: "identity", span: spanOf(name) };
      case "filter": {
        const open = this.#expect("(", '"(" after "filter"');
        this.#enter(open);
        const parser = new FilterParser(this.#tokens, this.#maxDepth - this.#depth, this.#index);
        const filter = parser.parseOr();
        this.#index = parser.index;
        const close = this.#expect(")", 'an operator or ")" closing filter(');
        this.#leave();
        return { kind: "filter", filter, span: { start, end: close.end } };
      }
      case "compute": {
        const { items, end } = this.#list("compute", () => this.#computeItem());
        return { kind: "compute", items, span: { start, end } };
      }
      case "aggregate": {
        const { items, end } = this.#list("aggregate", () => this.#aggregateItem());
        return { kind: "aggregate", items, span: { start, end } };
      }
      case "groupby":
        return this.#groupBy(name);
      case "orderby": {
        const { items, end } = this.#list("orderby", () => this.#orderKey());
        return { kind: "orderby", keys: items, span: { start, end } };
      }
      case "top":
      case "skip": {
        const { items, end } = this.#list(name.text, () => this.#count());
        if (items.length !== 1) {
          throw new ApplySyntaxError(start, `found ${name.text}() with ${items.length} arguments`);
        }
        return { kind: name.text, count: items[0]!, span: { start, end } };
      }
      case "topcount":
      case "bottomcount": {
        const open = this.#expect("(", `"(" after "${name.text}"`);
        this.#enter(open);
        const count = this.#count();
        this.#expect(",", `"," after the count of ${name.text}(`);
        const value = this.#value();
        const close = this.#expect(")", `")" closing ${name.text}(`);
        this.#leave();
        return { kind: name.text, count, value, span: { start, end: close.end } };
      }
    }
    if (OUT_OF_SCOPE.has(name.text)) {
      throw unsupported(
        start,
        `Cannot use the transformation ${name.text} at position ${start} of $apply: the service answers identity, filter, compute, groupby, aggregate, orderby, top, skip, topcount and bottomcount`,
      );
    }
    throw new ApplySyntaxError(
      start,
      `found unknown transformation "${name.text}"; use filter, compute, groupby, aggregate, orderby, top, skip, topcount or bottomcount`,
    );
  }

  #groupBy(name: Token): ApplyTransformation {
    const open = this.#expect("(", '"(" after "groupby"');
    this.#enter(open);
    if (this.#peek().kind !== "(") {
      throw new ApplySyntaxError(
        this.#peek().start,
        `expected "(" starting the list of grouping properties, e.g. groupby((LocationId)), but found ${
          describe(this.#peek())
        }`,
      );
    }
    const { items: properties } = this.#list("groupby(", () => this.#groupingProperty());
    let items: AggregateItem[] = [];
    if (this.#peek().kind === ",") {
      this.#next();
      const inner = this.#next();
      if (inner.kind !== "word" || inner.text !== "aggregate") {
        if (inner.kind === "word" && /^[a-z]+$/.test(inner.text)) {
          throw unsupported(
            inner.start,
            `Cannot use ${inner.text} at position ${inner.start} inside groupby: its second argument here is aggregate(...); chain other transformations after the groupby with "/"`,
          );
        }
        throw new ApplySyntaxError(
          inner.start,
          `expected aggregate(...) after the grouping properties but found ${describe(inner)}`,
        );
      }
      items = this.#list("aggregate", () => this.#aggregateItem()).items;
      if (this.#peek().kind === "/") {
        throw unsupported(
          this.#peek().start,
          `Cannot chain transformations inside groupby at position ${this.#peek().start}: chain them after the groupby`,
        );
      }
    }
    const close = this.#expect(")", '")" closing groupby(');
    this.#leave();
    return { kind: "groupby", properties, items, span: { start: name.start, end: close.end } };
  }

  #groupingProperty(): MemberNode {
    const token = this.#peek();
    if (token.kind === "word" && token.text === "rollup") {
      throw unsupported(
        token.start,
        `Cannot use rollup at position ${token.start} of $apply: group by the properties themselves`,
      );
    }
    return this.#member("a property to group by");
  }

  #member(wanted: string): MemberNode {
    const token = this.#next();
    if (token.kind !== "word" || WORDS.has(token.text) || token.text.startsWith("$")) {
      throw new ApplySyntaxError(token.start, `expected ${wanted} but found ${describe(token)}`);
    }
    this.#noPath();
    return { kind: "member", name: token.text, span: spanOf(token) };
  }

  /** Navigation paths (`Customer/Country`): the entities here are flat. */
  #noPath(): void {
    const slash = this.#peek();
    if (slash.kind === "/" && this.#tokens[this.#index + 1]?.kind === "word") {
      const after = this.#tokens[this.#index + 1]!;
      const transformation = this.#tokens[this.#index + 2]?.kind === "(";
      if (!transformation) {
        throw unsupported(
          slash.start,
          `Cannot follow a path at position ${slash.start} of $apply: the properties of these entities are flat, so name "${after.text}" directly`,
        );
      }
    }
  }

  #orderKey(): ApplyOrderKey {
    const name = this.#member("a property to order by");
    if (this.#isWord("desc") || this.#isWord("asc")) {
      return { name, descending: this.#next().text === "desc" };
    }
    return { name, descending: false };
  }

  #count(): number {
    const token = this.#next();
    if (token.kind !== "number" || !/^[0-9]+$/.test(token.text)) {
      throw new ApplySyntaxError(
        token.start,
        `expected a non-negative integer but found ${describe(token)}`,
      );
    }
    const value = Number(token.text);
    if (!Number.isSafeInteger(value)) {
      throw new ApplySyntaxError(token.start, `found ${token.text}, which is out of range`);
    }
    return value;
  }

  #alias(): { alias: string; end: number } {
    this.#expectWord("as", '"as" and an alias');
    const token = this.#next();
    if (
      token.kind !== "word" || WORDS.has(token.text) || token.text.startsWith("$") ||
      METHODS.has(token.text)
    ) {
      throw new ApplySyntaxError(
        token.start,
        `expected an alias (a name, e.g. Total) but found ${describe(token)}`,
      );
    }
    return { alias: token.text, end: token.end };
  }

  #computeItem(): ComputeItem {
    const value = this.#value();
    const { alias, end } = this.#alias();
    return { value, alias, span: { start: value.span.start, end } };
  }

  #aggregateItem(): AggregateItem {
    const first = this.#peek();
    if (first.kind === "word" && first.text === "$count") {
      this.#next();
      const { alias, end } = this.#alias();
      return { kind: "count", alias, span: { start: first.start, end } };
    }
    const value = this.#value();
    const next = this.#peek();
    if (!(next.kind === "word" && next.text === "with")) {
      if (next.kind === "(" || next.kind === "," || next.kind === ")" || next.kind === "word") {
        throw unsupported(
          next.start,
          `Cannot use a custom aggregate at position ${value.span.start} of $apply: name a method, e.g. ResultValue with average as Mean`,
        );
      }
      throw new ApplySyntaxError(next.start, `expected "with" but found ${describe(next)}`);
    }
    this.#next();
    const method = this.#next();
    if (method.kind !== "word" || !METHODS.has(method.text)) {
      if (method.kind === "word") {
        throw unsupported(
          method.start,
          `Cannot aggregate with "${method.text}" at position ${method.start} of $apply: use sum, min, max, average or countdistinct`,
        );
      }
      throw new ApplySyntaxError(
        method.start,
        `expected an aggregation method (sum, min, max, average, countdistinct) but found ${
          describe(method)
        }`,
      );
    }
    if (this.#isWord("from")) {
      throw unsupported(
        this.#peek().start,
        `Cannot use "from" at position ${this.#peek().start} of $apply: group with groupby and aggregate again after it`,
      );
    }
    const { alias, end } = this.#alias();
    return {
      kind: "with",
      value,
      method: method.text as AggregateMethod,
      alias,
      span: { start: value.span.start, end },
    };
  }

  /** A value expression: `add`/`sub` over `mul`/`div`/`divby`/`mod` over primaries. */
  #value(): ValueNode {
    let operators = 0;
    const chain = (operand: () => ValueNode, ops: (op: string) => boolean): ValueNode => {
      let left = operand();
      for (;;) {
        const token = this.#peek();
        if (token.kind !== "word" || !ARITHMETIC.has(token.text) || !ops(token.text)) return left;
        if (++operators > this.#maxDepth) {
          throw new ApplySyntaxError(
            token.start,
            `found an expression with more than ${this.#maxDepth} operators`,
          );
        }
        this.#next();
        const right = operand();
        left = {
          kind: "arithmetic",
          op: token.text as ArithmeticOp,
          left,
          right,
          span: { start: left.span.start, end: right.span.end },
        };
      }
    };
    return chain(
      () => chain(() => this.#primary(), (op) => MULTIPLICATIVE.has(op)),
      (op) => !MULTIPLICATIVE.has(op),
    );
  }

  #primary(): ValueNode {
    const token = this.#next();
    switch (token.kind) {
      case "(": {
        this.#enter(token);
        const inner = this.#value();
        const close = this.#expect(")", '")"');
        this.#leave();
        return { ...inner, span: { start: token.start, end: close.end } };
      }
      case "word":
        return this.#word(token);
      case "string":
      case "number":
      case "date":
      case "datetime":
      case "guid":
        return literal(token);
      default:
        throw new ApplySyntaxError(token.start, `expected a value but found ${describe(token)}`);
    }
  }

  #word(token: Token): ValueNode {
    const span = spanOf(token);
    if (token.text === "true" || token.text === "false") {
      return { kind: "literal", type: "boolean", value: token.text === "true", span };
    }
    if (token.text === "null") return { kind: "literal", type: "null", value: null, span };
    if (WORDS.has(token.text) || token.text.startsWith("$")) {
      throw new ApplySyntaxError(token.start, `expected a value but found ${describe(token)}`);
    }
    if (this.#peek().kind !== "(") {
      this.#noPath();
      return { kind: "member", name: token.text, span };
    }
    if (!VALUE_FUNCTIONS.has(token.text)) {
      if (FILTER_FUNCTIONS.has(token.text)) {
        throw unsupported(
          token.start,
          `Cannot call ${token.text}() at position ${token.start} of $apply outside filter(...): values call year, month, day, round, floor or ceiling`,
        );
      }
      throw new ApplySyntaxError(token.start, `found unknown function "${token.text}"`);
    }
    this.#enter(token);
    const { items: args, end } = this.#list(token.text, () => this.#value());
    this.#leave();
    if (args.length !== 1) {
      throw new ApplySyntaxError(
        token.start,
        `found ${token.text}() with ${args.length} arguments but it takes 1`,
      );
    }
    return { kind: "call", name: token.text, args, span: { start: token.start, end } };
  }
}
