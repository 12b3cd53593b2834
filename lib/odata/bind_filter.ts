import type { CallNode, CompareOp, FilterNode, LiteralNode, Span } from "./ast.ts";
import type { BoundCall, BoundField, BoundFilter, BoundLiteral, BoundValue } from "./bound.ts";
import { ODataError } from "./errors.ts";
import { evaluateFilter } from "./evaluate.ts";
import { type ArgumentKind, FILTER_FUNCTIONS } from "./functions.ts";
import { isCalendarDate } from "./parse_filter.ts";
import type { FilterFieldType, FilterSchema, Scalar } from "./schema.ts";

type Operand = BoundField | BoundCall | LiteralNode;

const FLIPPED: Readonly<Record<CompareOp, CompareOp>> = {
  eq: "eq",
  ne: "ne",
  lt: "gt",
  le: "ge",
  gt: "lt",
  ge: "le",
};

const NUMERIC_TEXT = /^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$/;
const DATETIME_TEXT =
  /^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]+)?)?(Z|[+-][0-9]{2}:[0-9]{2})?$/;
const UUID_TEXT = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/**
 * Resolves the names of a parsed filter against a schema and checks types.
 * A literal compared with a field takes the field's type, so `Latitude gt '49'`
 * compares numbers and `CreateTimestamp gt 2020-03-23` compares instants. A
 * literal on the left is moved to the right. Conditions made of literals only
 * are folded to constants.
 * @param node the parsed filter
 * @param schema the filterable fields, by case-sensitive name
 * @returns the bound filter
 * @throws {ODataError} `ERR_ODATA_UNKNOWN_FIELD` naming an unknown field in `target`,
 * `ERR_ODATA_TYPE` for a type mismatch, `ERR_ODATA_UNSUPPORTED` for a construct
 * the binder does not accept (e.g. a condition used as a value)
 * @example
 * ```ts
 * const schema = new Map([["ResultValue", { type: "number" }]]);
 * bindFilter(parseFilter("ResultValue gt '7'"), schema);
 * // { kind: "compare", op: "gt", left: { kind: "field", ... }, right: { kind: "literal", value: 7, ... } }
 * ```
 */
export function bindFilter(node: FilterNode, schema: FilterSchema): BoundFilter {
  return new Binder(schema).condition(node);
}

class Binder {
  readonly #schema: FilterSchema;

  constructor(schema: FilterSchema) {
    this.#schema = schema;
  }

  condition(node: FilterNode): BoundFilter {
    switch (node.kind) {
      case "and":
      case "or":
        return {
          kind: node.kind,
          operands: node.operands.map((operand) => this.condition(operand)),
        };
      case "not":
        return { kind: "not", operand: this.condition(node.operand) };
      case "compare":
        return this.#compare(node.op, this.#operand(node.left), this.#operand(node.right));
      case "in":
        return this.#in(this.#operand(node.operand), node.values);
      case "literal":
        if (node.type === "boolean") return { kind: "constant", value: node.value };
        throw typeError(
          `Cannot use ${describeLiteral(node)} as a condition: it is not true or false`,
          node.span,
        );
      case "member":
      case "call": {
        const value = this.#operand(node);
        if (value.kind !== "literal" && value.type === "boolean") return { kind: "test", value };
        throw typeError(
          `Cannot use ${describe(value)} as a condition: it is a ${
            typeName(value)
          }; compare it with a value`,
          node.span,
          targetOf(value),
        );
      }
      default: {
        const unreachable: never = node;
        return unreachable;
      }
    }
  }

  #operand(node: FilterNode): Operand {
    switch (node.kind) {
      case "literal":
        return node;
      case "member":
        return this.#field(node.name, node.span);
      case "call":
        return this.#call(node);
      default:
        throw new ODataError(
          "ERR_ODATA_UNSUPPORTED",
          `Cannot use the condition at position ${node.span.start} as a value: ` +
            "compare fields and functions with literals",
          { position: node.span.start },
        );
    }
  }

  #field(name: string, span: Span): BoundField {
    const info = this.#schema.get(name);
    if (info === undefined) {
      const near = [...this.#schema.keys()].find((known) =>
        known.toLowerCase() === name.toLowerCase()
      );
      const hint = near === undefined ? "" : `; names are case-sensitive: did you mean "${near}"?`;
      throw new ODataError(
        "ERR_ODATA_UNKNOWN_FIELD",
        `Cannot filter on "${name}": the collection has no such filterable field${hint}`,
        { target: name, position: span.start },
      );
    }
    return { kind: "field", name, type: info.type, multiValued: info.multiValued === true, span };
  }

  #call(node: CallNode): BoundCall {
    const signature = FILTER_FUNCTIONS.get(node.name);
    if (signature === undefined) {
      throw new ODataError("ERR_ODATA_UNSUPPORTED", `Cannot call unknown function "${node.name}"`, {
        position: node.span.start,
      });
    }
    const args = node.args.map((arg, i) => {
      const kind = signature.args[i]!;
      const operand = this.#operand(arg);
      if (operand.kind === "literal") return argumentLiteral(operand, kind, node.name);
      if (!accepts(kind, operand.type)) {
        throw typeError(
          `Cannot call ${node.name}() with ${describe(operand)}: argument ${i + 1} must be ${
            kindName(kind)
          }`,
          arg.span,
          targetOf(operand),
        );
      }
      return operand;
    });
    const numeric = signature.args[0] === "numeric";
    const type: FilterFieldType = numeric ? "number" : signature.returns;
    return { kind: "call", name: node.name, args, type, span: node.span };
  }

  #compare(op: CompareOp, left: Operand, right: Operand): BoundFilter {
    if (left.kind === "literal" && right.kind === "literal") {
      const l = naturalLiteral(left);
      const r = coerce(right, l.type === "null" ? naturalLiteral(right).type : l.type, "");
      return constant({ kind: "compare", op, left: l, right: r });
    }
    if (left.kind === "literal") return this.#compare(FLIPPED[op], right, left);
    if (right.kind === "literal") {
      return {
        kind: "compare",
        op,
        left,
        right: coerce(right, left.type, describe(left), targetOf(left)),
      };
    }
    if (family(left.type) !== family(right.type)) {
      throw typeError(
        `Cannot compare ${describe(left)} (${left.type}) with ${describe(right)} (${right.type})`,
        right.span,
        targetOf(left),
      );
    }
    return { kind: "compare", op, left, right };
  }

  #in(operand: Operand, values: readonly FilterNode[]): BoundFilter {
    const literals = values.map((value) => {
      if (value.kind !== "literal") {
        throw new ODataError(
          "ERR_ODATA_UNSUPPORTED",
          `Cannot use a non-literal value at position ${value.span.start} in "in (...)": list literals only`,
          { position: value.span.start },
        );
      }
      return value;
    });
    if (operand.kind === "literal") {
      const bound = naturalLiteral(operand);
      const type = bound.type === "null" ? "string" : bound.type;
      return constant({
        kind: "in",
        operand: bound,
        values: literals.map((literal) => coerce(literal, type, "").value),
      });
    }
    const target = targetOf(operand);
    return {
      kind: "in",
      operand,
      values: literals.map((literal) =>
        coerce(literal, operand.type, describe(operand), target).value
      ),
    };
  }
}

function constant(filter: BoundFilter): BoundFilter {
  return { kind: "constant", value: evaluateFilter(filter, () => null) };
}

function naturalLiteral(node: LiteralNode): BoundLiteral {
  switch (node.type) {
    case "string":
    case "number":
    case "date":
    case "guid":
    case "boolean":
      return { kind: "literal", type: node.type, value: node.value, span: node.span };
    case "datetime":
      return { kind: "literal", type: "datetime", value: Date.parse(node.value), span: node.span };
    case "null":
      return { kind: "literal", type: "null", value: null, span: node.span };
  }
}

/**
 * Converts a literal to the type it is compared with.
 * @param node the literal
 * @param type the other side's type
 * @param other how to name the other side in a message
 * @param target the field to name in the error's `target`
 * @returns the bound literal
 */
function coerce(
  node: LiteralNode,
  type: FilterFieldType | "null",
  other: string,
  target?: string,
): BoundLiteral {
  const span = node.span;
  if (node.type === "null") return { kind: "literal", type: "null", value: null, span };
  const value = convert(node, type);
  if (value === undefined) {
    const against = other === "" ? "" : ` ${other} with`;
    throw typeError(
      `Cannot compare${against} ${describeLiteral(node)}: expected ${expectedName(type)}`,
      span,
      target,
    );
  }
  return { kind: "literal", type: type === "null" ? "string" : type, value, span };
}

function convert(node: LiteralNode, type: FilterFieldType | "null"): Scalar | undefined {
  switch (type) {
    case "string":
    case "null":
      return node.type === "string" ? node.value : undefined;
    case "number":
    case "integer":
      if (node.type === "number") return node.value;
      if (node.type === "string" && NUMERIC_TEXT.test(node.value.trim())) {
        return Number(node.value.trim());
      }
      return undefined;
    case "date":
      if (node.type === "date") return node.value;
      if (node.type === "string" && isCalendarDate(node.value.trim())) return node.value.trim();
      // A date-time against a date field (`ActivityStartDate ge 2015-01-01T00:00:00Z`, as DataStream
      // answers it): its calendar date in UTC.
      if (node.type === "datetime") return utcDate(Date.parse(node.value));
      if (node.type === "string") return utcDate(parseInstant(node.value.trim()));
      return undefined;
    case "datetime":
      if (node.type === "date") return Date.parse(`${node.value}T00:00:00Z`);
      if (node.type === "datetime") return Date.parse(node.value);
      if (node.type === "string") return parseInstant(node.value.trim());
      return undefined;
    case "guid":
      if (node.type === "guid") return node.value;
      if (node.type === "string" && UUID_TEXT.test(node.value.trim())) {
        return node.value.trim().toLowerCase();
      }
      return undefined;
    case "boolean":
      return node.type === "boolean" ? node.value : undefined;
  }
}

/** The UTC calendar date (`YYYY-MM-DD`) of an instant; undefined for none. */
function utcDate(ms: number | undefined): string | undefined {
  if (ms === undefined || Number.isNaN(ms)) return undefined;
  return new Date(ms).toISOString().slice(0, 10);
}

function parseInstant(text: string): number | undefined {
  if (isCalendarDate(text)) return Date.parse(`${text}T00:00:00Z`);
  const match = DATETIME_TEXT.exec(text);
  if (match === null || !isCalendarDate(text.slice(0, 10))) return undefined;
  const ms = Date.parse(match[1] === undefined ? `${text}Z` : text);
  return Number.isNaN(ms) ? undefined : ms;
}

function argumentLiteral(node: LiteralNode, kind: ArgumentKind, fn: string): BoundLiteral {
  if (node.type === "null") return { kind: "literal", type: "null", value: null, span: node.span };
  let type: FilterFieldType;
  switch (kind) {
    case "string":
      type = "string";
      break;
    case "integer":
      type = "integer";
      break;
    case "numeric":
      type = "number";
      break;
    case "temporal":
      type = node.type === "datetime" ? "datetime" : "date";
      break;
  }
  const value = convert(node, type);
  if (value === undefined) {
    throw typeError(
      `Cannot call ${fn}() with ${describeLiteral(node)}: expected ${kindName(kind)}`,
      node.span,
    );
  }
  return { kind: "literal", type, value, span: node.span };
}

function accepts(kind: ArgumentKind, type: FilterFieldType): boolean {
  switch (kind) {
    case "string":
      return type === "string" || type === "guid";
    case "integer":
    case "numeric":
      return type === "integer" || type === "number";
    case "temporal":
      return type === "date" || type === "datetime";
  }
}

function family(type: FilterFieldType): string {
  switch (type) {
    case "integer":
    case "number":
      return "number";
    case "guid":
      return "string";
    default:
      return type;
  }
}

function typeError(message: string, span: Span, target?: string): ODataError {
  return new ODataError("ERR_ODATA_TYPE", message, {
    position: span.start,
    ...(target === undefined ? {} : { target }),
  });
}

function targetOf(value: BoundValue): string | undefined {
  if (value.kind === "field") return value.name;
  if (value.kind === "call") {
    for (const arg of value.args) {
      const found = targetOf(arg);
      if (found !== undefined) return found;
    }
  }
  return undefined;
}

function describe(value: BoundValue): string {
  switch (value.kind) {
    case "field":
      return `"${value.name}"`;
    case "call":
      return `${value.name}()`;
    case "literal":
      return JSON.stringify(value.value);
  }
}

function describeLiteral(node: LiteralNode): string {
  switch (node.type) {
    case "string":
      return `'${node.value.replaceAll("'", "''")}'`;
    case "number":
      return node.text;
    default:
      return String(node.value);
  }
}

function typeName(value: BoundValue): string {
  return value.kind === "literal" ? String(value.type) : value.type;
}

function expectedName(type: FilterFieldType | "null"): string {
  switch (type) {
    case "string":
    case "null":
      return "a quoted string, e.g. 'pH'";
    case "number":
      return "a number, e.g. 7.5 or '7.5'";
    case "integer":
      return "an integer, e.g. 42 or '42'";
    case "date":
      return "a date, e.g. 2020-03-23 or '2020-03-23'";
    case "datetime":
      return "a date or date-time, e.g. '2020-03-23' or 2020-03-23T10:00:00Z";
    case "guid":
      return "a UUID, e.g. '0a1b2c3d-0000-4000-8000-000000000000'";
    case "boolean":
      return "true or false";
  }
}

function kindName(kind: ArgumentKind): string {
  switch (kind) {
    case "string":
      return "a string";
    case "integer":
      return "an integer";
    case "numeric":
      return "a number";
    case "temporal":
      return "a date or date-time";
  }
}
