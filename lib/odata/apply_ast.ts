import type { FilterNode, LiteralNode, MemberNode, Span } from "./ast.ts";

/** The standard aggregation methods of `with` (OData Data Aggregation 4.0 §3.1.3). */
export type AggregateMethod = "sum" | "min" | "max" | "average" | "countdistinct";

/** Arithmetic operators of `compute` and of aggregated expressions. */
export type ArithmeticOp = "add" | "sub" | "mul" | "div" | "divby" | "mod";

/** A function call in a value expression, e.g. `year(ActivityStartDate)`. */
export interface ValueCallNode {
  readonly kind: "call";
  readonly name: string;
  readonly args: readonly ValueNode[];
  readonly span: Span;
}

/** Arithmetic on two values, e.g. `ResultValue mul 1.8`. */
export interface ArithmeticNode {
  readonly kind: "arithmetic";
  readonly op: ArithmeticOp;
  readonly left: ValueNode;
  readonly right: ValueNode;
  readonly span: Span;
}

/** A value expression of `compute`, of `with` and of `topcount`. */
export type ValueNode = LiteralNode | MemberNode | ValueCallNode | ArithmeticNode;

/** One aggregate: `X with method as Alias`, or `$count as Alias`. */
export type AggregateItem =
  | {
    readonly kind: "with";
    readonly value: ValueNode;
    readonly method: AggregateMethod;
    readonly alias: string;
    readonly span: Span;
  }
  | { readonly kind: "count"; readonly alias: string; readonly span: Span };

/** One computed property: `expression as Alias`. */
export interface ComputeItem {
  readonly value: ValueNode;
  readonly alias: string;
  readonly span: Span;
}

/** One key of the `orderby` transformation. */
export interface ApplyOrderKey {
  readonly name: MemberNode;
  readonly descending: boolean;
}

/** One transformation of a `$apply` sequence. */
export type ApplyTransformation =
  | { readonly kind: "identity"; readonly span: Span }
  | { readonly kind: "filter"; readonly filter: FilterNode; readonly span: Span }
  | { readonly kind: "compute"; readonly items: readonly ComputeItem[]; readonly span: Span }
  | { readonly kind: "aggregate"; readonly items: readonly AggregateItem[]; readonly span: Span }
  | {
    readonly kind: "groupby";
    readonly properties: readonly MemberNode[];
    /** The aggregates of each group; empty for the distinct groups alone. */
    readonly items: readonly AggregateItem[];
    readonly span: Span;
  }
  | { readonly kind: "orderby"; readonly keys: readonly ApplyOrderKey[]; readonly span: Span }
  | { readonly kind: "top" | "skip"; readonly count: number; readonly span: Span }
  | {
    readonly kind: "topcount" | "bottomcount";
    readonly count: number;
    readonly value: ValueNode;
    readonly span: Span;
  };

/** A parsed `$apply`: its transformations, in the order they apply. */
export type ApplyNode = readonly ApplyTransformation[];
