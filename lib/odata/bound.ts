import type { CompareOp, Span } from "./ast.ts";
import type { FilterFieldType, Scalar } from "./schema.ts";

/** A field reference, resolved against the schema. */
export interface BoundField {
  readonly kind: "field";
  readonly name: string;
  readonly type: FilterFieldType;
  readonly multiValued: boolean;
  readonly span: Span;
}

/** A literal converted to the type it is compared with; `type` is `null` for `null`. */
export interface BoundLiteral {
  readonly kind: "literal";
  readonly type: FilterFieldType | "null";
  readonly value: Scalar;
  readonly span: Span;
}

/** A function call with checked arguments. */
export interface BoundCall {
  readonly kind: "call";
  readonly name: string;
  readonly args: readonly BoundValue[];
  readonly type: FilterFieldType;
  readonly span: Span;
}

/** A value-producing expression. */
export type BoundValue = BoundField | BoundLiteral | BoundCall;

/**
 * A type-checked filter, independent of storage: the memory store compiles it
 * to kernels, and a SQL adapter can compile it to parameterized SQL.
 */
export type BoundFilter =
  | { readonly kind: "and" | "or"; readonly operands: readonly BoundFilter[] }
  | { readonly kind: "not"; readonly operand: BoundFilter }
  | { readonly kind: "constant"; readonly value: boolean }
  | {
    readonly kind: "compare";
    readonly op: CompareOp;
    readonly left: BoundValue;
    readonly right: BoundValue;
  }
  | { readonly kind: "in"; readonly operand: BoundValue; readonly values: readonly Scalar[] }
  | { readonly kind: "test"; readonly value: BoundValue };
