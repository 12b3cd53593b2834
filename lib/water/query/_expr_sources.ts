import {
  type CodeArray,
  type Column,
  type ColumnTable,
  rowNumberAt,
  rowNumberReader,
} from "../../columnar/mod.ts";
import { type BoundExpr, evaluateExpr, type Scalar } from "../../odata/mod.ts";
import { arithmetic } from "../../odata/_internal.ts";
import { upperBound } from "../store/store.ts";

// How the aggregation engine reads a value expression of `$apply` from the
// rows of a column table, batch by batch, without an object per row. An
// expression of one field whose values form a small domain (a dictionary, or
// the values of a coarser level: a location's, a dataset's) is "coded": a
// row gives a code, and the expression is evaluated once per code (so
// `year(ActivityStartDate)` costs a lookup per row). Any other expression is
// "dynamic": evaluated per row by a compiled closure over the columns.

/** Writes the codes of a batch of ascending rows. */
export interface CodeReader {
  /**
   * @param rows the rows, ascending (and after every row of earlier batches)
   * @param n how many
   * @param out where the codes go
   */
  fill(rows: Uint32Array, n: number, out: Int32Array): void;
}

/** An expression of one field over a finite domain of codes. */
export interface CodedSource {
  readonly kind: "coded";
  readonly codes: CodeReader;
  /** The expression's value for each code. */
  readonly values: readonly Scalar[];
  /** The code of each row, when the codes are a row-level column's (what `codes` reads). */
  readonly rowCodes?: CodeArray;
}

/** A row-level number column, read directly. */
export interface NumbersSource {
  readonly kind: "numbers";
  readonly values: Float64Array;
}

/** Any other expression, evaluated per row (rows ascending). */
export interface DynamicSource {
  readonly kind: "dynamic";
  readonly read: (row: number) => Scalar;
}

/** Where an expression's values come from. */
export type ExprSource = CodedSource | NumbersSource | DynamicSource;

/**
 * The source of an expression over a table's rows.
 * @param expr the bound expression
 * @param table the rows' columns, by bound name
 * @returns its source
 * @throws {TypeError} for a name the table lacks (binding should have refused it)
 */
export function sourceOf(expr: BoundExpr, table: ColumnTable): ExprSource {
  const fields = new Set<string>();
  collectFields(expr, fields);
  if (fields.size === 0) {
    const value = evaluateExpr(expr, () => null);
    return {
      kind: "coded",
      codes: { fill: (_rows, n, out) => out.fill(0, 0, n) },
      values: [value],
    };
  }
  if (fields.size === 1) {
    const name = [...fields][0]!;
    const column = columnOf(table, name);
    if (expr.kind === "field" && column.kind === "number") {
      return { kind: "numbers", values: column.values };
    }
    const coded = codedColumn(column);
    if (coded !== undefined) {
      // A field's values are the column's own (the same array each time, for what keeps work by it).
      const values = expr.kind === "field"
        ? coded.values
        : coded.values.map((value) => evaluateExpr(expr, () => value));
      return coded.rowCodes === undefined
        ? { kind: "coded", codes: coded.codes, values }
        : { kind: "coded", codes: coded.codes, values, rowCodes: coded.rowCodes };
    }
  }
  return { kind: "dynamic", read: compile(expr, table) };
}

function collectFields(expr: BoundExpr, into: Set<string>): void {
  switch (expr.kind) {
    case "field":
      into.add(expr.name);
      return;
    case "literal":
      return;
    case "call":
      expr.args.forEach((arg) => collectFields(arg, into));
      return;
    case "arithmetic":
      collectFields(expr.left, into);
      collectFields(expr.right, into);
      return;
  }
}

function columnOf(table: ColumnTable, name: string): Column {
  const column = table.column(name);
  if (column === undefined) throw new TypeError(`Cannot aggregate "${name}": the table lacks it`);
  return column;
}

/** A column as codes over a finite domain, or undefined for row-level numbers and row numbers. */
function codedColumn(
  column: Column,
): { codes: CodeReader; values: Scalar[]; rowCodes?: CodeArray } | undefined {
  switch (column.kind) {
    case "dict": {
      const codes = column.codes;
      return {
        codes: { fill: codeFill(codes) },
        values: column.values as Scalar[],
        rowCodes: codes,
      };
    }
    case "values":
      return {
        codes: {
          fill(rows, n, out) {
            for (let i = 0; i < n; i++) out[i] = rows[i]!;
          },
        },
        values: column.values.map((value) => (Array.isArray(value) ? null : value as Scalar)),
      };
    case "group": {
      let inner = groupCodesByColumn.get(column);
      if (inner === undefined) {
        inner = groupCodes(column.column, column.starts.length - 1);
        groupCodesByColumn.set(column, inner);
      }
      const byGroup = inner.codes;
      const starts = column.starts;
      const last = starts.length - 2;
      // The group of the last row read: rows come ascending, mostly in the same group or the next.
      let g = 0;
      return {
        codes: {
          fill(rows, n, out) {
            // The group's bounds and code in registers: a row of the same group costs one comparison.
            let h = g;
            let begin = starts[h]!;
            let end = starts[h + 1]!;
            let code = byGroup[h]!;
            for (let i = 0; i < n; i++) {
              const row = rows[i]!;
              if (row >= end || row < begin) {
                h = h < last && row >= end && row < starts[h + 2]!
                  ? h + 1
                  : upperBound(starts, row) - 1;
                begin = starts[h]!;
                end = starts[h + 1]!;
                code = byGroup[h]!;
              }
              out[i] = code;
            }
            g = h;
          },
        },
        values: inner.values,
      };
    }
    case "number":
    case "rownumber":
      return undefined;
  }
}

/**
 * Reads a batch's codes from a dictionary column: a loop for each kind of
 * code array, so that each reads one kind (one loop for all would read
 * three, and every read would ask which).
 */
function codeFill(codes: CodeArray): CodeReader["fill"] {
  if (codes instanceof Uint8Array) return (rows, n, out) => fill8(codes, rows, n, out);
  if (codes instanceof Uint16Array) return (rows, n, out) => fill16(codes, rows, n, out);
  return (rows, n, out) => fill32(codes, rows, n, out);
}

function fill8(codes: Uint8Array, rows: Uint32Array, n: number, out: Int32Array): void {
  for (let i = 0; i < n; i++) out[i] = codes[rows[i]!]!;
}

function fill16(codes: Uint16Array, rows: Uint32Array, n: number, out: Int32Array): void {
  for (let i = 0; i < n; i++) out[i] = codes[rows[i]!]!;
}

function fill32(codes: Uint32Array, rows: Uint32Array, n: number, out: Int32Array): void {
  for (let i = 0; i < n; i++) out[i] = codes[rows[i]!]!;
}

/**
 * Codes of each group of a group column's level, by the column (the
 * store's, kept): the same values array each time, so what is kept by it
 * (keys, ranks) is found again.
 */
const groupCodesByColumn = new WeakMap<Column, { codes: Int32Array; values: Scalar[] }>();

/** Codes of each group of a coarser level, with the values of the codes. */
function groupCodes(column: Column, count: number): { codes: Int32Array; values: Scalar[] } {
  const codes = new Int32Array(count);
  switch (column.kind) {
    case "dict":
      for (let g = 0; g < count; g++) codes[g] = column.codes[g]!;
      return { codes, values: column.values as Scalar[] };
    case "number":
    case "rownumber":
    case "values": {
      const values: Scalar[] = new Array<Scalar>(count);
      for (let g = 0; g < count; g++) {
        codes[g] = g;
        values[g] = column.kind === "number"
          ? (Number.isNaN(column.values[g]!) ? null : column.values[g]!)
          : column.kind === "rownumber"
          ? rowNumberAt(column, g)
          : (Array.isArray(column.values[g]) ? null : column.values[g] as Scalar);
      }
      return { codes, values };
    }
    case "group": {
      const inner = groupCodes(column.column, column.starts.length - 1);
      let h = 0;
      for (let g = 0; g < count; g++) {
        while (column.starts[h + 1]! <= g) h++;
        codes[g] = inner.codes[h]!;
      }
      return { codes, values: inner.values };
    }
  }
}

/**
 * The group of a row, for rows read mostly in ascending order: the group of
 * the last row is tried first, then the ones after it, else a search.
 */
function groupWalker(starts: Uint32Array): (row: number) => number {
  let g = 0;
  const last = starts.length - 2;
  return (row) => {
    if (row < starts[g]!) g = upperBound(starts, row) - 1;
    else {
      let steps = 0;
      while (g < last && starts[g + 1]! <= row) {
        if (++steps > 8) {
          g = upperBound(starts, row) - 1;
          break;
        }
        g++;
      }
    }
    return g;
  };
}

/** A closure reading an expression's value from a row. */
function compile(expr: BoundExpr, table: ColumnTable): (row: number) => Scalar {
  switch (expr.kind) {
    case "field":
      return reader(columnOf(table, expr.name));
    case "literal": {
      const value = expr.value;
      return () => value;
    }
    case "call": {
      const arg = compile(expr.args[0]!, table);
      const name = expr.name;
      return (row) => callOn(name, arg(row));
    }
    case "arithmetic": {
      const left = compile(expr.left, table);
      const right = compile(expr.right, table);
      const op = expr.op;
      const integer = expr.type === "integer";
      return (row) => {
        const a = left(row);
        const b = right(row);
        if (typeof a !== "number" || typeof b !== "number") return null;
        const value = arithmetic(op, a, b, integer);
        return Number.isFinite(value) ? value : null;
      };
    }
  }
}

/** A one-argument function of a value (date parts, rounding), as `evaluateExpr` computes it. */
function callOn(name: string, value: Scalar): Scalar {
  if (value === null) return null;
  switch (name) {
    case "year":
    case "month":
    case "day": {
      if (typeof value === "string") {
        const at = name === "year" ? 0 : name === "month" ? 5 : 8;
        return Number(value.slice(at, name === "year" ? 4 : at + 2));
      }
      const date = new Date(Number(value));
      return name === "year"
        ? date.getUTCFullYear()
        : name === "month"
        ? date.getUTCMonth() + 1
        : date.getUTCDate();
    }
    case "round": {
      const n = Number(value);
      return Math.sign(n) * Math.round(Math.abs(n));
    }
    case "floor":
      return Math.floor(Number(value));
    case "ceiling":
      return Math.ceil(Number(value));
    default:
      throw new TypeError(`Cannot compute ${name}(): not a value function`);
  }
}

function reader(column: Column): (row: number) => Scalar {
  switch (column.kind) {
    case "dict": {
      const { codes, values } = column;
      return (row) => values[codes[row]!]!;
    }
    case "number": {
      const values = column.values;
      return (row) => {
        const value = values[row]!;
        return Number.isNaN(value) ? null : value;
      };
    }
    case "rownumber":
      return rowNumberReader(column);
    case "values": {
      const values = column.values;
      return (row) => {
        const value = values[row];
        return value === undefined || Array.isArray(value) ? null : value as Scalar;
      };
    }
    case "group": {
      const walk = groupWalker(column.starts);
      const inner = reader(column.column);
      return (row) => inner(walk(row));
    }
  }
}
