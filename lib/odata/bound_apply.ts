import type { AggregateMethod, ArithmeticOp } from "./apply_ast.ts";
import type { Span } from "./ast.ts";
import type { BoundField, BoundFilter, BoundLiteral } from "./bound.ts";
import type { FilterFieldType } from "./schema.ts";

/** A function call in a bound value expression, e.g. `year(ActivityStartDate)`. */
export interface BoundExprCall {
  readonly kind: "call";
  readonly name: string;
  readonly args: readonly BoundExpr[];
  readonly type: FilterFieldType;
  readonly span: Span;
}

/** Bound arithmetic: numbers in, a number out (an integer when both sides are and the operator keeps it). */
export interface BoundArithmetic {
  readonly kind: "arithmetic";
  readonly op: ArithmeticOp;
  readonly left: BoundExpr;
  readonly right: BoundExpr;
  readonly type: "number" | "integer";
  readonly span: Span;
}

/** A type-checked value expression of `$apply`. */
export type BoundExpr = BoundField | BoundLiteral | BoundExprCall | BoundArithmetic;

/** One grouping property: its name in the result and what it is of each row. */
export interface BoundGroupKey {
  readonly name: string;
  /** A field, or the expression a `compute` alias stands for. */
  readonly value: BoundExpr;
  readonly type: FilterFieldType;
}

/** One aggregate of the result. */
export type BoundAggregate =
  | { readonly kind: "count"; readonly alias: string; readonly type: "integer" }
  | {
    readonly kind: "with";
    readonly method: AggregateMethod;
    readonly value: BoundExpr;
    readonly alias: string;
    readonly type: FilterFieldType;
  };

/** A transformation applied to the aggregated rows, in order. */
export type BoundResultStep =
  | { readonly kind: "filter"; readonly filter: BoundFilter }
  | {
    readonly kind: "compute";
    readonly items: readonly { readonly alias: string; readonly value: BoundExpr }[];
  }
  | {
    readonly kind: "orderby";
    readonly keys: readonly { readonly name: string; readonly descending: boolean }[];
  }
  | { readonly kind: "top" | "skip"; readonly count: number }
  | {
    readonly kind: "topcount" | "bottomcount";
    readonly count: number;
    readonly value: BoundExpr;
  };

/** A property of the aggregated result. */
export interface ResultProperty {
  readonly name: string;
  readonly type: FilterFieldType;
}

/**
 * A type-checked `$apply`, in three stages: the rows it keeps (the
 * conjunction of its filters before the aggregation, computed aliases
 * replaced by their expressions), the aggregation (grouping keys and
 * aggregates), and the steps over the aggregated rows.
 */
export interface BoundApply {
  /** The condition on the rows, if any. */
  readonly filter?: BoundFilter;
  /** False for an `$apply` of filters alone: it selects rows, and answers them as rows. */
  readonly aggregated: boolean;
  readonly groups: readonly BoundGroupKey[];
  readonly aggregates: readonly BoundAggregate[];
  readonly steps: readonly BoundResultStep[];
  /** The properties of each result row, in order: the groups, the aggregates, then computed ones. */
  readonly shape: readonly ResultProperty[];
}
