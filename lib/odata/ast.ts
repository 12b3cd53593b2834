/** Where a node stands in the filter text: 0-based, end exclusive. */
export interface Span {
  readonly start: number;
  readonly end: number;
}

/** Comparison operators; `lte` and `gte` are read as `le` and `ge`. */
export type CompareOp = "eq" | "ne" | "lt" | "le" | "gt" | "ge";

/** A literal value as written in the filter. */
export type LiteralNode =
  | {
    readonly kind: "literal";
    readonly type: "string";
    readonly value: string;
    readonly span: Span;
  }
  | {
    readonly kind: "literal";
    readonly type: "number";
    readonly value: number;
    /** The digits as written, e.g. `"7.10"`. */
    readonly text: string;
    readonly span: Span;
  }
  | { readonly kind: "literal"; readonly type: "date"; readonly value: string; readonly span: Span }
  | {
    readonly kind: "literal";
    readonly type: "datetime";
    /** As written, e.g. `"2020-03-23T10:00:00Z"`. */
    readonly value: string;
    readonly span: Span;
  }
  | { readonly kind: "literal"; readonly type: "guid"; readonly value: string; readonly span: Span }
  | {
    readonly kind: "literal";
    readonly type: "boolean";
    readonly value: boolean;
    readonly span: Span;
  }
  | { readonly kind: "literal"; readonly type: "null"; readonly value: null; readonly span: Span };

/** A property name, e.g. `CharacteristicName`. Names are case-sensitive. */
export interface MemberNode {
  readonly kind: "member";
  readonly name: string;
  readonly span: Span;
}

/** A function call, e.g. `endswith(DOI, 'ab12')`. */
export interface CallNode {
  readonly kind: "call";
  readonly name: string;
  readonly args: readonly FilterNode[];
  readonly span: Span;
}

/** A comparison, e.g. `ResultValue gt 7`. */
export interface CompareNode {
  readonly kind: "compare";
  readonly op: CompareOp;
  readonly left: FilterNode;
  readonly right: FilterNode;
  readonly span: Span;
}

/** Membership, e.g. `RegionId in ('hub.atlantic', 'hub.pacific')`. */
export interface InNode {
  readonly kind: "in";
  readonly operand: FilterNode;
  readonly values: readonly FilterNode[];
  readonly span: Span;
}

/** `and` or `or` over two or more operands, flattened so chains stay shallow. */
export interface LogicalNode {
  readonly kind: "and" | "or";
  readonly operands: readonly FilterNode[];
  readonly span: Span;
}

/** Negation. */
export interface NotNode {
  readonly kind: "not";
  readonly operand: FilterNode;
  readonly span: Span;
}

/** A parsed `$filter` expression. */
export type FilterNode =
  | LiteralNode
  | MemberNode
  | CallNode
  | CompareNode
  | InNode
  | LogicalNode
  | NotNode;
