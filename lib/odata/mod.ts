/**
 * OData v4 query support: a hand-written lexer and recursive-descent parser
 * for `$filter` producing a typed AST with positions, binding to a schema,
 * a reference evaluator, a compiler to batch kernels over columnar tables,
 * the system query options, and next links.
 * @module
 */
export { parseFilter, isCalendarDate } from "./parse_filter.ts";
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
export { FilterSyntaxError, ODataError } from "./errors.ts";
export type { ODataErrorCode, ODataErrorOptions } from "./errors.ts";
export { FILTER_FUNCTIONS } from "./functions.ts";
export type { ArgumentKind, FunctionSignature } from "./functions.ts";
export type { FieldInfo, FilterFieldType, FilterSchema, Scalar } from "./schema.ts";
export { bindFilter } from "./bind_filter.ts";
export type { BoundCall, BoundField, BoundFilter, BoundLiteral, BoundValue } from "./bound.ts";
export { compareScalars, evaluateFilter, evaluateLeaf, evaluateValue, leafValues } from "./evaluate.ts";
export type { BoundLeaf, FieldGetter } from "./evaluate.ts";
export type {
  CodeArray,
  Column,
  ColumnTable,
  DictColumn,
  GroupColumn,
  NumberColumn,
  PostingIndex,
  RowNumberColumn,
  RowNumberSegments,
  ValuesColumn,
} from "./columns.ts";
export { rowNumberAt, rowNumberReader, rowsBelow, rowWithNumber } from "./row_numbers.ts";
export { compileFilter } from "./compile_filter.ts";
export type { CompiledFilter } from "./compile_filter.ts";
export { countMatches, MatchCursor } from "./match_cursor.ts";
export type { MatchCursorOptions } from "./match_cursor.ts";
export { describeQueryOptions, readQueryOptions } from "./query_options.ts";
export type { OrderKey, QueryOptionInfo, QueryOptions, QueryPair, ReadQueryOptionsOptions } from "./query_options.ts";
export { buildNextLink, encodeQueryValue } from "./next_link.ts";
export type { NextLinkOptions } from "./next_link.ts";
