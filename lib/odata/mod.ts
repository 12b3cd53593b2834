/**
 * OData v4 query support: a hand-written lexer and recursive-descent parser
 * for `$filter` and `$apply` (Data Aggregation) producing typed ASTs with positions, binding to a schema,
 * a reference evaluator, the system query options, and next links. The
 * language only: running a bound filter over columns is `lib/columnar`'s.
 * @module
 */
export { parseFilter } from "./parse_filter.ts";
export type { ParseFilterOptions } from "./parse_filter.ts";
export type {
  CallNode,
  CompareNode,
  CompareOp,
  FilterNode,
  InNode,
  LiteralNode,
  LogicalNode,
  MemberNode,
  NotNode,
  Span,
} from "./ast.ts";
export { parseApply } from "./parse_apply.ts";
export type { ParseApplyOptions } from "./parse_apply.ts";
export type {
  AggregateItem,
  AggregateMethod,
  ApplyNode,
  ApplyOrderKey,
  ApplyTransformation,
  ArithmeticNode,
  ArithmeticOp,
  ComputeItem,
  ValueCallNode,
  ValueNode,
} from "./apply_ast.ts";
export { ApplySyntaxError, FilterSyntaxError, ODataError } from "./errors.ts";
export type { ODataErrorCode, ODataErrorOptions } from "./errors.ts";
export type { FieldInfo, FilterFieldType, FilterSchema, Scalar } from "./schema.ts";
export { bindFilter } from "./bind_filter.ts";
export type { BoundCall, BoundField, BoundFilter, BoundLiteral, BoundValue } from "./bound.ts";
export { evaluateFilter } from "./evaluate.ts";
export { bindApply } from "./bind_apply.ts";
export type { BindApplyOptions } from "./bind_apply.ts";
export type {
  BoundAggregate,
  BoundApply,
  BoundArithmetic,
  BoundExpr,
  BoundExprCall,
  BoundGroupKey,
  BoundResultStep,
  ResultProperty,
} from "./bound_apply.ts";
export { applyResultSteps, evaluateExpr } from "./evaluate_apply.ts";
export type { FieldGetter } from "./evaluate.ts";
export { readQueryOptions } from "./query_options.ts";
export type {
  OrderKey,
  QueryOptions,
  QueryPair,
  ReadQueryOptionsOptions,
} from "./query_options.ts";
export { buildNextLink } from "./next_link.ts";
export type { NextLinkOptions } from "./next_link.ts";
