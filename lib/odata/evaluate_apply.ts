import type { ArithmeticOp } from "./apply_ast.ts";
import type { BoundApply, BoundExpr, BoundResultStep } from "./bound_apply.ts";
import { callFunction, evaluateFilter } from "./evaluate.ts";
import type { Scalar } from "./schema.ts";

/**
 * Evaluates a bound `$apply` value expression for one row. Arithmetic of
 * null is null, and so is a result that is not a finite number (a division
 * by zero); `div` of two integers truncates, `divby` never does, and `mod`
 * keeps the dividend's sign.
 * @param expr the expression
 * @param get the row's values by name
 * @returns its value
 * @example
 * ```ts
 * evaluateExpr(bound, (name) => (name === "ResultValue" ? 20 : null)); // 68 for ResultValue mul 1.8 add 32
 * ```
 */
export function evaluateExpr(expr: BoundExpr, get: (name: string) => Scalar): Scalar {
  switch (expr.kind) {
    case "field":
      return get(expr.name);
    case "literal":
      return expr.value;
    case "call":
      return callFunction(expr.name, expr.args.map((arg) => evaluateExpr(arg, get)));
    case "arithmetic": {
      const a = evaluateExpr(expr.left, get);
      const b = evaluateExpr(expr.right, get);
      if (typeof a !== "number" || typeof b !== "number") return null;
      const value = arithmetic(expr.op, a, b, expr.type === "integer");
      return Number.isFinite(value) ? value : null;
    }
  }
}

/**
 * One arithmetic operation on numbers, as {@linkcode evaluateExpr} does it;
 * the result may be `NaN` or infinite, which stands for null.
 * @param op the operator
 * @param a left operand
 * @param b right operand
 * @param integer whether both operands are integers (then `div` truncates)
 * @returns the result
 */
export function arithmetic(op: ArithmeticOp, a: number, b: number, integer: boolean): number {
  switch (op) {
    case "add":
      return a + b;
    case "sub":
      return a - b;
    case "mul":
      return a * b;
    case "div":
      return integer ? (b === 0 ? Number.NaN : Math.trunc(a / b)) : a / b;
    case "divby":
      return a / b;
    case "mod":
      return a % b;
  }
}

/**
 * Orders two result values as `$orderby` does: null first, then numbers,
 * booleans and text by value.
 * @param a a value
 * @param b another
 * @returns negative, zero or positive
 */
export function compareResultValues(a: Scalar, b: Scalar): number {
  if (a === b) return 0;
  if (a === null) return -1;
  if (b === null) return 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * The aggregated rows of a bound `$apply` in their final form: ordered by
 * the grouping properties (ascending, null first, so every page of a result
 * is cut from the same order), then transformed by the steps after the
 * aggregation, then by `extra` steps (the request's `$filter`, `$orderby`
 * and `$skip`). `topcount` and `bottomcount` keep the rows with the highest
 * (lowest) values, in that order, leaving out rows whose value is null. Each row holds the values of `apply.shape` in order (the
 * computed ones are appended here).
 * @param rows the groups' values and aggregates, as the engine made them
 * @param apply the bound `$apply`
 * @param extra steps after the `$apply`'s own
 * @returns the rows of the result, in order
 */
export function applyResultSteps(
  rows: readonly (readonly Scalar[])[],
  apply: BoundApply,
  extra: readonly BoundResultStep[] = [],
): Scalar[][] {
  const keys = apply.groups.length;
  let out = rows.map((row) => [...row]);
  out.sort((a, b) => {
    for (let k = 0; k < keys; k++) {
      const order = compareResultValues(a[k]!, b[k]!);
      if (order !== 0) return order;
    }
    return 0;
  });
  const index = new Map<string, number>();
  apply.shape.forEach((property, i) => {
    if (i < keys + apply.aggregates.length) index.set(property.name, i);
  });
  const getter = (row: readonly Scalar[]) => (name: string): Scalar => row[index.get(name)!]!;
  for (const step of [...apply.steps, ...extra]) {
    switch (step.kind) {
      case "filter":
        out = out.filter((row) => evaluateFilter(step.filter, getter(row)));
        break;
      case "compute":
        for (const item of step.items) {
          for (const row of out) row.push(evaluateExpr(item.value, getter(row)));
          index.set(item.alias, index.size);
        }
        break;
      case "orderby": {
        const at = step.keys.map((key) => ({
          i: index.get(key.name)!,
          sign: key.descending ? -1 : 1,
        }));
        out.sort((a, b) => {
          for (const { i, sign } of at) {
            const order = compareResultValues(a[i]!, b[i]!);
            if (order !== 0) return sign * order;
          }
          return 0;
        });
        break;
      }
      case "top":
        out = out.slice(0, step.count);
        break;
      case "skip":
        out = out.slice(step.count);
        break;
      case "topcount":
      case "bottomcount": {
        const sign = step.kind === "topcount" ? -1 : 1;
        const ranked = out.map((row) => ({ row, value: evaluateExpr(step.value, getter(row)) }))
          .filter((r) => r.value !== null);
        ranked.sort((a, b) => sign * compareResultValues(a.value, b.value));
        out = ranked.slice(0, step.count).map((r) => r.row);
        break;
      }
    }
  }
  return out;
}
