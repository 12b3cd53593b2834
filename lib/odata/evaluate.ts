import type { CompareOp } from "./ast.ts";
import type { BoundFilter, BoundValue } from "./bound.ts";
import type { Scalar } from "./schema.ts";

/** Gives a field's value for one row; a multi-valued field gives an array. */
export type FieldGetter = (name: string) => Scalar | readonly Scalar[];

/**
 * Evaluates a bound filter for one row, following OData's null rules: `eq`
 * and `ne` treat null as a value, ordering comparisons with null are false,
 * and functions of null are null. A condition on a multi-valued field holds
 * when it holds for one of its values. This is the reference semantics the
 * compiled kernels must match.
 * @param filter the bound filter
 * @param get the row's field values
 * @returns whether the row matches
 * @example
 * ```ts
 * const bound = bindFilter(parseFilter("ResultValue gt 7"), new Map([["ResultValue", { type: "number" }]]));
 * evaluateFilter(bound, (name) => (name === "ResultValue" ? 7.5 : null)); // true
 * ```
 */
export function evaluateFilter(filter: BoundFilter, get: FieldGetter): boolean {
  switch (filter.kind) {
    case "and":
      return filter.operands.every((operand) => evaluateFilter(operand, get));
    case "or":
      return filter.operands.some((operand) => evaluateFilter(operand, get));
    case "not":
      return !evaluateFilter(filter.operand, get);
    case "constant":
      return filter.value;
    case "compare":
    case "in":
    case "test":
      return evaluateLeafAny(filter, get);
  }
}

/** A filter node that is a single condition: a comparison, `in`, or a boolean test. */
export type BoundLeaf = Extract<BoundFilter, { kind: "compare" | "in" | "test" }>;

/**
 * Evaluates a leaf once per value of each multi-valued field in it; `fixed`
 * lists the fields already replaced by one of their values.
 */
function evaluateLeafAny(
  leaf: BoundLeaf,
  get: FieldGetter,
  fixed: readonly string[] = [],
): boolean {
  const multi = findMultiValued(leaf, fixed);
  if (multi === undefined) return evaluateLeaf(leaf, get as (name: string) => Scalar);
  const values = get(multi);
  const list = Array.isArray(values) ? values : [values as Scalar];
  const done = [...fixed, multi];
  return list.some((value) =>
    evaluateLeafAny(leaf, (name) => (name === multi ? (value as Scalar) : get(name)), done)
  );
}

function findMultiValued(leaf: BoundLeaf, fixed: readonly string[]): string | undefined {
  for (const value of leafValues(leaf)) {
    const found = findMultiInValue(value, fixed);
    if (found !== undefined) return found;
  }
  return undefined;
}

function findMultiInValue(value: BoundValue, fixed: readonly string[]): string | undefined {
  if (value.kind === "field") {
    return value.multiValued && !fixed.includes(value.name) ? value.name : undefined;
  }
  if (value.kind === "call") {
    for (const arg of value.args) {
      const found = findMultiInValue(arg, fixed);
      if (found !== undefined) return found;
    }
  }
  return undefined;
}

/**
 * The value expressions a condition reads.
 * @param leaf the condition
 * @returns its operands
 */
export function leafValues(leaf: BoundLeaf): readonly BoundValue[] {
  switch (leaf.kind) {
    case "compare":
      return [leaf.left, leaf.right];
    case "in":
      return [leaf.operand];
    case "test":
      return [leaf.value];
  }
}

/**
 * Evaluates one condition with single-valued fields.
 * @param leaf the condition
 * @param get the row's field values
 * @returns whether it holds
 */
export function evaluateLeaf(leaf: BoundLeaf, get: (name: string) => Scalar): boolean {
  switch (leaf.kind) {
    case "compare":
      return compareScalars(leaf.op, evaluateValue(leaf.left, get), evaluateValue(leaf.right, get));
    case "in": {
      const value = evaluateValue(leaf.operand, get);
      return leaf.values.includes(value);
    }
    case "test":
      return evaluateValue(leaf.value, get) === true;
  }
}

/**
 * Compares two values with OData's null rules.
 * @param op the operator
 * @param a left value
 * @param b right value
 * @returns the comparison's result
 */
export function compareScalars(op: CompareOp, a: Scalar, b: Scalar): boolean {
  switch (op) {
    case "eq":
      return a === b;
    case "ne":
      return a !== b;
    default:
      if (a === null || b === null) return false;
      switch (op) {
        case "lt":
          return a < b;
        case "le":
          return a <= b;
        case "gt":
          return a > b;
        case "ge":
          return a >= b;
      }
  }
}

/**
 * Evaluates a value expression.
 * @param value the expression
 * @param get the row's field values
 * @returns its value, null when an input is null
 */
export function evaluateValue(value: BoundValue, get: (name: string) => Scalar): Scalar {
  switch (value.kind) {
    case "field":
      return get(value.name);
    case "literal":
      return value.value;
    case "call":
      return callFunction(value.name, value.args.map((arg) => evaluateValue(arg, get)));
  }
}

/**
 * Calls a filter function on values.
 * @param name the function
 * @param args its arguments' values
 * @returns its value, null when an argument is null
 */
export function callFunction(name: string, args: readonly Scalar[]): Scalar {
  if (args.some((arg) => arg === null)) return null;
  const [a, b, c] = args;
  switch (name) {
    case "contains":
      return String(a).includes(String(b));
    case "startswith":
      return String(a).startsWith(String(b));
    case "endswith":
      return String(a).endsWith(String(b));
    case "tolower":
      return String(a).toLowerCase();
    case "toupper":
      return String(a).toUpperCase();
    case "trim":
      return String(a).trim();
    case "length":
      return String(a).length;
    case "indexof":
      return String(a).indexOf(String(b));
    case "substring": {
      const text = String(a);
      const start = Math.max(0, Math.trunc(Number(b)));
      return c === undefined
        ? text.slice(start)
        : text.slice(start, start + Math.max(0, Math.trunc(Number(c))));
    }
    case "concat":
      return String(a) + String(b);
    case "year":
    case "month":
    case "day":
      return datePart(name, a!);
    case "round": {
      const n = Number(a);
      return Math.sign(n) * Math.round(Math.abs(n));
    }
    case "floor":
      return Math.floor(Number(a));
    case "ceiling":
      return Math.ceil(Number(a));
    default:
      return null;
  }
}

function datePart(part: "year" | "month" | "day", value: Scalar): number {
  if (typeof value === "string") {
    const index = part === "year" ? [0, 4] : part === "month" ? [5, 7] : [8, 10];
    return Number(value.slice(index[0], index[1]));
  }
  const date = new Date(Number(value));
  return part === "year"
    ? date.getUTCFullYear()
    : part === "month"
    ? date.getUTCMonth() + 1
    : date.getUTCDate();
}
