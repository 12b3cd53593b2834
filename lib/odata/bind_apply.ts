import type {
  AggregateItem,
  ApplyNode,
  ApplyTransformation,
  ArithmeticOp,
  ValueNode,
} from "./apply_ast.ts";
import type { MemberNode, Span } from "./ast.ts";
import { bindFilter } from "./bind_filter.ts";
import type { BoundFilter, BoundValue } from "./bound.ts";
import type {
  BoundAggregate,
  BoundApply,
  BoundExpr,
  BoundGroupKey,
  BoundResultStep,
  ResultProperty,
} from "./bound_apply.ts";
import { ODataError, type ODataErrorCode } from "./errors.ts";
import type { FilterFieldType, FilterSchema } from "./schema.ts";

/** Options of {@linkcode bindApply}. */
export interface BindApplyOptions {
  /**
   * Filterable names that cannot be grouped, aggregated or computed with,
   * each with the message that says what to do instead. Multi-valued fields
   * are refused in any case.
   */
  readonly ungroupable?: ReadonlyMap<string, string>;
}

/** Operators whose result is an integer when both operands are. */
const INTEGER_OPS: ReadonlySet<ArithmeticOp> = new Set(["add", "sub", "mul", "div", "mod"]);

/**
 * Resolves the names of a parsed `$apply` against a schema and checks types,
 * stage by stage. Before the one `groupby` or `aggregate`, transformations
 * act on the rows: `filter`s (which may use the aliases of an earlier
 * `compute` of date parts or of a property), and `compute`s. After it they
 * act on the aggregated rows: `filter`, `compute` (arithmetic on the
 * aggregates), `orderby`, `top`, `skip`, `topcount` and `bottomcount`.
 * `sum` and `average` take numbers; `min`, `max` and `countdistinct` take
 * any single-valued property. An `$apply` of filters alone is bound with
 * `aggregated: false`.
 * @param node the parsed `$apply`
 * @param schema the filterable fields of the rows, by case-sensitive name
 * @param options the names that cannot be grouped, and why
 * @returns the bound `$apply`
 * @throws {ODataError} `ERR_ODATA_UNKNOWN_FIELD` for an unknown name,
 * `ERR_ODATA_TYPE` for a type mismatch (e.g. averaging text),
 * `ERR_ODATA_QUERY_OPTION` for an alias that is already a name, and
 * `ERR_ODATA_UNSUPPORTED` for a sequence the service does not answer (two
 * aggregations, `orderby` or `top` before the aggregation, grouping by a
 * multi-valued field); each with the position in the `$apply` text
 * @example
 * ```ts
 * const schema = new Map([["LocationId", { type: "integer" }], ["ResultValue", { type: "number" }]]);
 * const bound = bindApply(
 *   parseApply("groupby((LocationId), aggregate(ResultValue with average as Mean))"),
 *   schema,
 * );
 * bound.shape; // [{ name: "LocationId", type: "integer" }, { name: "Mean", type: "number" }]
 * ```
 */
export function bindApply(
  node: ApplyNode,
  schema: FilterSchema,
  options: BindApplyOptions = {},
): BoundApply {
  const binder = new ApplyBinder(schema, options.ungroupable ?? new Map());
  for (const transformation of node) binder.add(transformation);
  return binder.finish();
}

class ApplyBinder {
  readonly #schema: FilterSchema;
  readonly #ungroupable: ReadonlyMap<string, string>;
  readonly #computed = new Map<string, BoundExpr>();
  readonly #filters: BoundFilter[] = [];
  #shape: ResultProperty[] | undefined;
  #groups: BoundGroupKey[] = [];
  #aggregates: BoundAggregate[] = [];
  readonly #steps: BoundResultStep[] = [];

  constructor(schema: FilterSchema, ungroupable: ReadonlyMap<string, string>) {
    this.#schema = schema;
    this.#ungroupable = ungroupable;
  }

  add(t: ApplyTransformation): void {
    if (t.kind === "identity") return;
    if (this.#shape === undefined) this.#rowStep(t);
    else this.#resultStep(t, this.#shape);
  }

  finish(): BoundApply {
    const filter = this.#filters.length === 0
      ? undefined
      : this.#filters.length === 1
      ? this.#filters[0]!
      : { kind: "and" as const, operands: this.#filters };
    const rows = filter === undefined ? {} : { filter };
    if (this.#shape === undefined) {
      if (this.#computed.size > 0) {
        throw new ODataError(
          "ERR_ODATA_UNSUPPORTED",
          "Cannot answer a compute without groupby or aggregate after it: group or aggregate the computed values",
          { target: "$apply" },
        );
      }
      return { ...rows, aggregated: false, groups: [], aggregates: [], steps: [], shape: [] };
    }
    return {
      ...rows,
      aggregated: true,
      groups: this.#groups,
      aggregates: this.#aggregates,
      steps: this.#steps,
      shape: this.#shape,
    };
  }

  // Rows, before the aggregation.

  #rowStep(t: Exclude<ApplyTransformation, { kind: "identity" }>): void {
    switch (t.kind) {
      case "filter": {
        const names = new Map(this.#schema);
        for (const [alias, value] of this.#computed) names.set(alias, { type: typeOf(value) });
        this.#filters.push(this.#substitute(bindInApply(() => bindFilter(t.filter, names))));
        return;
      }
      case "compute":
        for (const item of t.items) {
          this.#checkAlias(item.alias, item.span, [
            ...this.#schema.keys(),
            ...this.#computed.keys(),
          ]);
          this.#computed.set(item.alias, this.#expr(item.value, (m) => this.#rowName(m)));
        }
        return;
      case "groupby":
      case "aggregate": {
        const properties = t.kind === "groupby" ? t.properties : [];
        const seen = new Set<string>();
        this.#groups = properties.map((member) => {
          if (seen.has(member.name)) {
            throw error(
              "ERR_ODATA_QUERY_OPTION",
              `Cannot group by "${member.name}" twice`,
              member.span,
            );
          }
          seen.add(member.name);
          const value = this.#rowName(member);
          return { name: member.name, value, type: typeOf(value) };
        });
        const taken = [...this.#schema.keys(), ...this.#computed.keys(), ...seen];
        this.#aggregates = t.items.map((item) => {
          this.#checkAlias(item.alias, item.span, taken);
          taken.push(item.alias);
          return this.#aggregate(item);
        });
        this.#shape = [
          ...this.#groups.map((g) => ({ name: g.name, type: g.type })),
          ...this.#aggregates.map((a) => ({ name: a.alias, type: a.type })),
        ];
        return;
      }
      case "orderby":
      case "top":
      case "skip":
      case "topcount":
      case "bottomcount":
        throw error(
          "ERR_ODATA_UNSUPPORTED",
          `Cannot use ${t.kind} at position ${t.span.start} of $apply before groupby or aggregate: order and cut the aggregated rows, after them`,
          t.span,
        );
      default: {
        const unreachable: never = t;
        return unreachable;
      }
    }
  }

  #aggregate(item: AggregateItem): BoundAggregate {
    if (item.kind === "count") return { kind: "count", alias: item.alias, type: "integer" };
    const value = this.#expr(item.value, (m) => this.#rowName(m));
    const numeric = value.type === "number" || value.type === "integer";
    if ((item.method === "sum" || item.method === "average") && !numeric) {
      const name = value.kind === "field" ? `"${value.name}"` : "the expression";
      throw error(
        "ERR_ODATA_TYPE",
        `Cannot ${item.method === "sum" ? "sum" : "average"} ${name}: it is ${
          article(value.type)
        }; ${
          item.method === "sum" ? "sum" : "average"
        } numbers, e.g. ResultValue, or count values with countdistinct`,
        item.value.span,
        value.kind === "field" ? value.name : undefined,
      );
    }
    const type: FilterFieldType = item.method === "countdistinct"
      ? "integer"
      : item.method === "average" || item.method === "sum"
      ? "number"
      : typeOf(value);
    return { kind: "with", method: item.method, value, alias: item.alias, type };
  }

  /** A name on the rows: a computed alias stands for its expression; a field must be single-valued. */
  #rowName(member: MemberNode): BoundExpr {
    const computed = this.#computed.get(member.name);
    if (computed !== undefined) return computed;
    const info = this.#schema.get(member.name);
    if (info === undefined) throw unknown(member, [...this.#schema.keys()]);
    const refused = this.#ungroupable.get(member.name);
    if (refused !== undefined || info.multiValued === true) {
      throw error(
        "ERR_ODATA_UNSUPPORTED",
        refused ??
          `Cannot group or aggregate by "${member.name}": a row has several values of it; filter by it instead`,
        member.span,
        member.name,
      );
    }
    return {
      kind: "field",
      name: member.name,
      type: info.type,
      multiValued: false,
      span: member.span,
    };
  }

  /** A row filter with the computed aliases in it replaced by what they stand for. */
  #substitute(filter: BoundFilter): BoundFilter {
    const value = (v: BoundValue): BoundValue => {
      if (v.kind === "field") {
        const computed = this.#computed.get(v.name);
        if (computed === undefined) return v;
        const plain = asBoundValue(computed);
        if (plain === undefined) {
          throw error(
            "ERR_ODATA_UNSUPPORTED",
            `Cannot filter rows on "${v.name}" before the aggregation: it is arithmetic; filter on the properties it is computed from, or on the aggregated rows`,
            v.span,
            v.name,
          );
        }
        return plain;
      }
      if (v.kind === "call") return { ...v, args: v.args.map(value) };
      return v;
    };
    switch (filter.kind) {
      case "and":
      case "or":
        return { kind: filter.kind, operands: filter.operands.map((f) => this.#substitute(f)) };
      case "not":
        return { kind: "not", operand: this.#substitute(filter.operand) };
      case "constant":
        return filter;
      case "compare":
        return { ...filter, left: value(filter.left), right: value(filter.right) };
      case "in":
        return { ...filter, operand: value(filter.operand) };
      case "test":
        return { ...filter, value: value(filter.value) };
    }
  }

  // The aggregated rows.

  #resultStep(
    t: Exclude<ApplyTransformation, { kind: "identity" }>,
    shape: ResultProperty[],
  ): void {
    const names = new Map(shape.map((p) => [p.name, { type: p.type }]));
    const resolve = (member: MemberNode): BoundExpr => {
      const info = names.get(member.name);
      if (info === undefined) throw unknown(member, [...names.keys()]);
      return {
        kind: "field",
        name: member.name,
        type: info.type,
        multiValued: false,
        span: member.span,
      };
    };
    switch (t.kind) {
      case "filter":
        this.#steps.push({
          kind: "filter",
          filter: bindInApply(() => bindFilter(t.filter, names)),
        });
        return;
      case "compute": {
        const items = t.items.map((item) => {
          this.#checkAlias(item.alias, item.span, shape.map((p) => p.name));
          const value = this.#expr(item.value, resolve);
          shape.push({ name: item.alias, type: typeOf(value) });
          names.set(item.alias, { type: typeOf(value) });
          return { alias: item.alias, value };
        });
        this.#steps.push({ kind: "compute", items });
        return;
      }
      case "orderby":
        this.#steps.push({
          kind: "orderby",
          keys: t.keys.map((key) => {
            resolve(key.name);
            return { name: key.name.name, descending: key.descending };
          }),
        });
        return;
      case "top":
      case "skip":
        this.#steps.push({ kind: t.kind, count: t.count });
        return;
      case "topcount":
      case "bottomcount":
        this.#steps.push({ kind: t.kind, count: t.count, value: this.#expr(t.value, resolve) });
        return;
      case "groupby":
      case "aggregate":
        throw error(
          "ERR_ODATA_UNSUPPORTED",
          `Cannot use a second ${t.kind} at position ${t.span.start} of $apply: the service answers one groupby or aggregate per request`,
          t.span,
        );
      default: {
        const unreachable: never = t;
        return unreachable;
      }
    }
  }

  // Expressions.

  #expr(node: ValueNode, resolve: (member: MemberNode) => BoundExpr): BoundExpr {
    switch (node.kind) {
      case "literal":
        if (node.type !== "number") {
          throw error(
            "ERR_ODATA_TYPE",
            `Cannot compute with the literal at position ${node.span.start}: expressions take numbers`,
            node.span,
          );
        }
        return {
          kind: "literal",
          type: /^-?[0-9]+$/.test(node.text) && Number.isSafeInteger(node.value)
            ? "integer"
            : "number",
          value: node.value,
          span: node.span,
        };
      case "member":
        return resolve(node);
      case "call": {
        const arg = this.#expr(node.args[0]!, resolve);
        const temporal = node.name === "year" || node.name === "month" || node.name === "day";
        const fits = temporal
          ? arg.type === "date" || arg.type === "datetime"
          : arg.type === "number" || arg.type === "integer";
        if (!fits) {
          throw error(
            "ERR_ODATA_TYPE",
            `Cannot call ${node.name}() with ${describe(arg)}: it takes ${
              temporal ? "a date or date-time" : "a number"
            }`,
            node.args[0]!.span,
            arg.kind === "field" ? arg.name : undefined,
          );
        }
        const type: FilterFieldType = temporal
          ? "integer"
          : arg.type === "integer"
          ? "integer"
          : "number";
        return { kind: "call", name: node.name, args: [arg], type, span: node.span };
      }
      case "arithmetic": {
        const left = this.#expr(node.left, resolve);
        const right = this.#expr(node.right, resolve);
        for (const side of [left, right]) {
          if (side.type !== "number" && side.type !== "integer") {
            throw error(
              "ERR_ODATA_TYPE",
              `Cannot ${node.op} ${describe(side)}: it is ${
                article(side.type)
              }; arithmetic takes numbers`,
              side.span,
              side.kind === "field" ? side.name : undefined,
            );
          }
        }
        const integer = left.type === "integer" && right.type === "integer" &&
          INTEGER_OPS.has(node.op);
        return {
          kind: "arithmetic",
          op: node.op,
          left,
          right,
          type: integer ? "integer" : "number",
          span: node.span,
        };
      }
    }
  }

  #checkAlias(alias: string, span: Span, taken: readonly string[]): void {
    if (taken.includes(alias)) {
      throw error(
        "ERR_ODATA_QUERY_OPTION",
        `Cannot use "${alias}" as an alias at position ${span.start} of $apply: it already names a property; choose another name`,
        span,
        alias,
      );
    }
  }
}

/** The type of a bound expression; literals here are numbers, never null. */
function typeOf(expr: BoundExpr): FilterFieldType {
  return expr.type === "null" ? "number" : expr.type;
}

/** A bound expression without arithmetic as a filter value, or undefined when it has arithmetic. */
function asBoundValue(expr: BoundExpr): BoundValue | undefined {
  switch (expr.kind) {
    case "field":
    case "literal":
      return expr;
    case "call": {
      const args: BoundValue[] = [];
      for (const arg of expr.args) {
        const plain = asBoundValue(arg);
        if (plain === undefined) return undefined;
        args.push(plain);
      }
      return { kind: "call", name: expr.name, args, type: expr.type, span: expr.span };
    }
    case "arithmetic":
      return undefined;
  }
}

/** Binds a filter inside `$apply`: its errors name `$apply` where they name no field. */
function bindInApply(bind: () => BoundFilter): BoundFilter {
  try {
    return bind();
  } catch (e) {
    if (e instanceof ODataError && e.target === undefined) {
      throw new ODataError(e.code, e.message, {
        target: "$apply",
        ...(e.position === undefined ? {} : { position: e.position }),
        cause: e,
      });
    }
    throw e;
  }
}

function unknown(member: MemberNode, known: readonly string[]): ODataError {
  const near = known.find((name) => name.toLowerCase() === member.name.toLowerCase());
  const hint = near === undefined ? "" : `; names are case-sensitive: did you mean "${near}"?`;
  return error(
    "ERR_ODATA_UNKNOWN_FIELD",
    `Cannot use "${member.name}" at position ${member.span.start} of $apply: there is no such property here${hint}`,
    member.span,
    member.name,
  );
}

function error(code: ODataErrorCode, message: string, span: Span, target?: string): ODataError {
  return new ODataError(code, message, { target: target ?? "$apply", position: span.start });
}

function describe(expr: BoundExpr): string {
  switch (expr.kind) {
    case "field":
      return `"${expr.name}"`;
    case "literal":
      return String(expr.value);
    case "call":
      return `${expr.name}()`;
    case "arithmetic":
      return `the ${expr.op} expression`;
  }
}

function article(type: FilterFieldType | "null"): string {
  switch (type) {
    case "integer":
      return "an integer";
    case "string":
      return "text";
    case "guid":
      return "a UUID";
    default:
      return `a ${type}`;
  }
}
