/**
 * The columnar execution engine: tables of typed-array columns (dictionary
 * codes, numbers, row numbers, groups), a bound `$filter` compiled to batch
 * kernels over them (fused where it can be, with candidate rows from
 * posting indexes and row groups), and the cursor that reads the matching
 * rows. The language (parsing, binding, the reference evaluator) is
 * `lib/odata`'s; this engine takes its bound filters. Internal to the
 * package: no entry point of its own.
 * @module
 */
export type {
  CodeArray,
  Column,
  ColumnTable,
  DictColumn,
  PostingIndex,
  RowNumberColumn,
} from "./columns.ts";
export { rowNumberAt, rowNumberReader, rowsBelow, rowWithNumber } from "./row_numbers.ts";
export { compileFilter } from "./compile_filter.ts";
export type { CompiledFilter } from "./compile_filter.ts";
export { countMatches, FULL_BATCH, MatchCursor } from "./match_cursor.ts";
export type { MatchCursorOptions } from "./match_cursor.ts";
