/** Types a field or bound expression can have. */
export type FilterFieldType =
  | "string"
  | "number"
  | "integer"
  | "date"
  | "datetime"
  | "guid"
  | "boolean";

/** What binding needs to know about one filterable field. */
export interface FieldInfo {
  readonly type: FilterFieldType;
  /**
   * A field with several values per row (e.g. a location's regions). A
   * condition on it holds when it holds for at least one value.
   */
  readonly multiValued?: boolean;
}

/** The filterable fields of a collection, by case-sensitive name. */
export type FilterSchema = ReadonlyMap<string, FieldInfo>;

/**
 * A value as filters see it. Dates are `YYYY-MM-DD` strings, date-times are
 * epoch milliseconds, GUIDs lower-case strings.
 */
export type Scalar = string | number | boolean | null;
