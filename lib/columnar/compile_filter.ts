import { type BoundFilter, type BoundValue, ODataError, type Scalar } from "../odata/mod.ts";
import { type BoundLeaf, evaluateLeaf, leafValues } from "../odata/_internal.ts";
import type {
  CodeArray,
  Column,
  ColumnTable,
  DictColumn,
  PostingIndex,
  RowNumberColumn,
} from "./columns.ts";
import {
  andKernel,
  constantKernel,
  dict16Kernel,
  dict32Kernel,
  dict8Kernel,
  eq16Kernel,
  eq32Kernel,
  eq8Kernel,
  type Kernel,
  MAX_BATCH,
  notKernel,
  numberRangeKernel,
  orKernel,
  rangesKernel,
  rowListKernel,
  rowTestKernel,
} from "./_kernels.ts";
import { rowNumberReader, rowsBelow, rowWithNumber } from "./row_numbers.ts";
import {
  EMPTY_SET,
  intersect,
  rangesFrom,
  type RowSet,
  sizeOf,
  union,
  unionRows,
} from "./_row_sets.ts";
import { type FusedExpr, fuseKernel } from "./_fused.ts";

/**
 * A filter compiled against a {@linkcode ColumnTable}: a batch kernel, and
 * where indexes or row grouping allow, a superset of the matching rows so
 * that a selective query touches only those.
 */
export interface CompiledFilter {
  /** Rows in the table. */
  readonly length: number;
  /** Rows that may match, ascending; `undefined` means every row. */
  readonly candidates: RowSet | undefined;
  /** Filters a batch of rows. */
  readonly kernel: Kernel;
  /** Counts a batch's matches without writing rows, when the filter is fused. */
  readonly count?: (sel: Uint32Array | null, start: number, n: number) => number;
}

interface Plan {
  /** Builds the plan's batch kernel (lazily: a fused parent may never need it). */
  readonly make: () => Kernel;
  /** The plan as one fusable condition, when all of it is simple enough. */
  readonly fused?: FusedExpr;
  readonly candidates: RowSet | undefined;
  /** Estimated share of rows that pass, 0..1. */
  readonly selectivity: number;
  /** Estimated passes over a batch. */
  readonly cost: number;
}

/** What a plan costs when nothing is known about its selectivity. */
const UNKNOWN = 0.5;

/**
 * Compiles a bound filter to batch kernels over a columnar table. Each
 * condition reads one field: dictionary columns are tested once per distinct
 * value into a lookup table, numeric comparisons become range checks, a
 * condition on a group (a location, a dataset) becomes the row ranges of the
 * matching groups, and posting indexes give candidate rows.
 * @param filter the bound filter; `undefined` matches every row
 * @param table the table
 * @returns the compiled filter
 * @throws {ODataError} `ERR_ODATA_UNSUPPORTED` for a condition on two fields
 * @throws {TypeError} when the table lacks a bound field
 * @example
 * ```ts
 * const compiled = compileFilter(bindFilter(parseFilter("Depth gt 2"), schema), table);
 * const rows = new Uint32Array(1024);
 * const found = new MatchCursor(compiled).next(rows); // the first matching row numbers, ascending
 * ```
 */
export function compileFilter(filter: BoundFilter | undefined, table: ColumnTable): CompiledFilter {
  if (filter === undefined) {
    return { length: table.length, candidates: undefined, kernel: constantKernel(true) };
  }
  const plan = compileNode(filter, table);
  let candidates = plan.candidates;
  // A long scattered row list is slower to follow than a plain scan.
  if (candidates?.kind === "rows" && candidates.rows.length > table.length / 4) {
    candidates = undefined;
  }
  if (plan.fused !== undefined) {
    const fused = fuseKernel(plan.fused);
    return { length: table.length, candidates, kernel: fused.kernel, count: fused.count };
  }
  return { length: table.length, candidates, kernel: plan.make() };
}

function compileNode(node: BoundFilter, table: ColumnTable): Plan {
  switch (node.kind) {
    case "constant":
      return constantPlan(node.value);
    case "and": {
      const plans = node.operands.map((operand) => compileNode(operand, table));
      if (plans.some((plan) => plan.selectivity === 0 && plan.cost === 0)) {
        return constantPlan(false);
      }
      let candidates: RowSet | undefined;
      for (const plan of plans) {
        if (plan.candidates === undefined) continue;
        candidates = candidates === undefined
          ? plan.candidates
          : intersect(candidates, plan.candidates);
      }
      // Cheap conditions that reject many rows run first, so that costly
      // ones see few rows (the classic cost / (1 - selectivity) order).
      const ordered = plans.filter((plan) => !isTrue(plan)).sort((a, b) => rank(a) - rank(b));
      if (ordered.length === 0) return constantPlan(true);
      let selectivity = 1;
      let cost = 0;
      for (const plan of ordered) {
        cost += plan.cost * selectivity;
        selectivity *= plan.selectivity;
      }
      const simple = ordered.filter((plan) => plan.fused !== undefined);
      const fused: FusedExpr | undefined = simple.length === ordered.length
        ? { kind: "and", operands: simple.map((plan) => plan.fused!) }
        : undefined;
      const make = (): Kernel => {
        if (fused !== undefined) return fuseKernel(fused).kernel;
        // The simple conditions run fused, in one pass, before the others.
        const kernels = simple.length > 1
          ? [fuseKernel({ kind: "and", operands: simple.map((plan) => plan.fused!) }).kernel]
          : simple.map((plan) => plan.make());
        for (const plan of ordered) if (plan.fused === undefined) kernels.push(plan.make());
        return andKernel(kernels);
      };
      return { make, ...(fused === undefined ? {} : { fused }), candidates, selectivity, cost };
    }
    case "or": {
      const plans = node.operands.map((operand) => compileNode(operand, table));
      if (plans.some(isTrue)) return constantPlan(true);
      const live = plans.filter((plan) => !(plan.selectivity === 0 && plan.cost === 0));
      if (live.length === 0) return constantPlan(false);
      let candidates: RowSet | undefined = EMPTY_SET;
      for (const plan of live) {
        candidates = plan.candidates === undefined || candidates === undefined
          ? undefined
          : union(candidates, plan.candidates);
      }
      const ordered = [...live].sort((a, b) => b.selectivity / b.cost - a.selectivity / a.cost);
      const selectivity = 1 - ordered.reduce((rest, plan) => rest * (1 - plan.selectivity), 1);
      const cost = ordered.reduce((sum, plan) => sum + plan.cost, 3);
      const fused: FusedExpr | undefined = ordered.every((plan) => plan.fused !== undefined)
        ? { kind: "or", operands: ordered.map((plan) => plan.fused!) }
        : undefined;
      const make = (): Kernel =>
        fused !== undefined
          ? fuseKernel(fused).kernel
          : orKernel(ordered.map((plan) => plan.make()));
      return { make, ...(fused === undefined ? {} : { fused }), candidates, selectivity, cost };
    }
    case "not": {
      const inner = compileNode(node.operand, table);
      const fused: FusedExpr | undefined = inner.fused === undefined
        ? undefined
        : { kind: "not", operand: inner.fused };
      return {
        make: () => (fused !== undefined ? fuseKernel(fused).kernel : notKernel(inner.make())),
        ...(fused === undefined ? {} : { fused }),
        candidates: undefined,
        selectivity: 1 - inner.selectivity,
        cost: inner.cost + 1,
      };
    }
    case "compare":
    case "in":
    case "test":
      return compileLeaf(node, table);
  }
}

/** Lower runs first in an `and`: cost per rejected row. */
function rank(plan: Plan): number {
  return plan.cost / Math.max(1e-9, 1 - plan.selectivity);
}

function constantPlan(value: boolean): Plan {
  return {
    make: () => constantKernel(value),
    candidates: value ? undefined : EMPTY_SET,
    selectivity: value ? 1 : 0,
    cost: 0,
  };
}

function isTrue(plan: Plan): boolean {
  return plan.selectivity === 1 && plan.cost === 0;
}

function compileLeaf(leaf: BoundLeaf, table: ColumnTable): Plan {
  const fields = new Set<string>();
  for (const value of leafValues(leaf)) collectFields(value, fields);
  if (fields.size === 0) return constantPlan(evaluateLeaf(leaf, () => null));
  if (fields.size > 1) {
    throw new ODataError(
      "ERR_ODATA_UNSUPPORTED",
      `Cannot compare fields ${[...fields].map((f) => `"${f}"`).join(" and ")} with each other: ` +
        "compare each field with a literal",
      { target: [...fields][0]! },
    );
  }
  const name = [...fields][0]!;
  const column = table.column(name);
  if (column === undefined) {
    throw new TypeError(`Cannot compile filter: the table has no column "${name}"`);
  }
  const test = (value: Scalar | readonly Scalar[]): boolean =>
    Array.isArray(value)
      ? (value as readonly Scalar[]).some((one) => evaluateLeaf(leaf, () => one))
      : evaluateLeaf(leaf, () => value as Scalar);
  return compileOnColumn(leaf, test, column, table.length);
}

function compileOnColumn(
  leaf: BoundLeaf,
  test: (value: Scalar | readonly Scalar[]) => boolean,
  column: Column,
  length: number,
): Plan {
  switch (column.kind) {
    case "dict":
      return compileDict(test, column, length);
    case "number": {
      const range = numericRange(leaf);
      const values = column.values;
      if (range !== undefined) {
        const [lo, hi] = range;
        return {
          make: () => numberRangeKernel(values, lo, hi),
          fused: { kind: "between", values, lo, hi },
          candidates: undefined,
          selectivity: UNKNOWN,
          cost: 1,
        };
      }
      return {
        make: () =>
          rowTestKernel((row) => {
            const v = values[row]!;
            return test(Number.isNaN(v) ? null : v);
          }),
        candidates: undefined,
        selectivity: UNKNOWN,
        cost: 4,
      };
    }
    case "rownumber":
      return compileRowNumber(leaf, test, column, length);
    case "group":
      return compileGroup(leaf, test, column.starts, column.column);
    case "values": {
      const values = column.values;
      return {
        make: () => rowTestKernel((row) => test(values[row] ?? null)),
        candidates: undefined,
        selectivity: UNKNOWN,
        cost: 4,
      };
    }
  }
}

function compileDict(test: (value: Scalar) => boolean, column: DictColumn, length: number): Plan {
  const values = column.values;
  const table = new Uint8Array(values.length);
  let hits = 0;
  for (let code = 0; code < values.length; code++) {
    if (test(values[code] ?? null)) {
      table[code] = 1;
      hits++;
    }
  }
  if (hits === 0) return constantPlan(false);
  if (hits === values.length) return constantPlan(true);
  const codes = column.codes;
  const code = table.indexOf(1);
  const make = (): Kernel =>
    hits === 1
      ? equalityKernel(codes, code)
      : codes instanceof Uint8Array
      ? dict8Kernel(codes, table)
      : codes instanceof Uint16Array
      ? dict16Kernel(codes, table)
      : dict32Kernel(codes, table);
  const fused: FusedExpr = hits === 1
    ? { kind: "eq", codes, code }
    : { kind: "table", codes, table };
  const candidates = column.index === undefined
    ? undefined
    : postingRows(column.index, table, length);
  return {
    make,
    fused,
    candidates,
    selectivity: dictSelectivity(column, table, hits, length),
    cost: 1,
  };
}

/** The share of rows whose code matches: exact from row counts, else from the share of codes. */
function dictSelectivity(
  column: DictColumn,
  table: Uint8Array,
  hits: number,
  length: number,
): number {
  const counts = column.counts;
  if (counts === undefined || length === 0) return hits / table.length;
  let rows = 0;
  for (let code = 0; code < table.length; code++) if (table[code] !== 0) rows += counts[code] ?? 0;
  return rows / length;
}

/** A kernel for one matching code: a plain comparison instead of a table lookup. */
function equalityKernel(codes: CodeArray, code: number): Kernel {
  if (codes instanceof Uint8Array) return eq8Kernel(codes, code);
  if (codes instanceof Uint16Array) return eq16Kernel(codes, code);
  return eq32Kernel(codes, code);
}

/** Rows of the index keys that hold a matching code, or undefined when too many to help. */
function postingRows(index: PostingIndex, table: Uint8Array, length: number): RowSet | undefined {
  const keys = new Set<number>();
  for (let code = 0; code < table.length; code++) {
    if (table[code] !== 0) keys.add(index.keyOf === undefined ? code : index.keyOf[code]!);
  }
  let total = 0;
  for (const key of keys) total += index.starts[key + 1]! - index.starts[key]!;
  if (total > length / 4) return undefined;
  let rows: Uint32Array | undefined;
  for (const key of [...keys].sort((a, b) => a - b)) {
    const part = index.rows.subarray(index.starts[key]!, index.starts[key + 1]!);
    rows = rows === undefined ? part : unionRows(rows, part);
  }
  return { kind: "rows", rows: rows ?? new Uint32Array(0) };
}

function compileRowNumber(
  leaf: BoundLeaf,
  test: (value: Scalar) => boolean,
  column: RowNumberColumn,
  length: number,
): Plan {
  const set = rowNumberSet(leaf, column, length);
  if (set === undefined) {
    const read = rowNumberReader(column);
    return {
      make: () => rowTestKernel((row) => test(read(row))),
      candidates: undefined,
      selectivity: UNKNOWN,
      cost: 4,
    };
  }
  const make =
    (): Kernel => (set.kind === "ranges" ? rangesKernel(set.ranges) : rowListKernel(set.rows));
  return { make, candidates: set, selectivity: length === 0 ? 0 : sizeOf(set) / length, cost: 1 };
}

/**
 * The rows a condition on a row number selects, when it is a plain comparison
 * or `in`: numbers ascend with rows, so a bound is the count of rows below it.
 */
function rowNumberSet(
  leaf: BoundLeaf,
  column: RowNumberColumn,
  length: number,
): RowSet | undefined {
  if (leaf.kind === "in" && leaf.operand.kind === "field") {
    const rows = new Set<number>();
    for (const value of leaf.values) {
      if (typeof value !== "number") continue;
      const row = rowWithNumber(column, length, value);
      if (row !== -1) rows.add(row);
    }
    return { kind: "rows", rows: Uint32Array.from([...rows].sort((a, b) => a - b)) };
  }
  if (leaf.kind !== "compare" || leaf.left.kind !== "field" || leaf.right.kind !== "literal") {
    return undefined;
  }
  const value = leaf.right.value;
  if (value === null) return leaf.op === "ne" ? rangesFrom([0, length]) : EMPTY_SET;
  if (typeof value !== "number") return undefined;
  /** Rows whose number is below `v`. */
  const below = (v: number): number => rowsBelow(column, length, v);
  switch (leaf.op) {
    case "eq": {
      const row = rowWithNumber(column, length, value);
      return row === -1 ? EMPTY_SET : rangesFrom([row, row + 1]);
    }
    case "ne": {
      const row = rowWithNumber(column, length, value);
      return row === -1 ? rangesFrom([0, length]) : rangesFrom([0, row, row + 1, length]);
    }
    case "lt":
      return rangesFrom([0, below(value)]);
    case "le":
      return rangesFrom([0, below(Math.floor(value) + 1)]);
    case "gt":
      return rangesFrom([below(Math.floor(value) + 1), length]);
    case "ge":
      return rangesFrom([below(value), length]);
  }
}

function compileGroup(
  leaf: BoundLeaf,
  test: (value: Scalar | readonly Scalar[]) => boolean,
  starts: Uint32Array,
  inner: Column,
): Plan {
  const groups = starts.length - 1;
  const plan = compileOnColumn(leaf, test, inner, groups);
  const matching = runAll(plan.make(), plan.candidates, groups);
  const pairs: number[] = [];
  for (let i = 0; i < matching.length; i++) {
    const g = matching[i]!;
    pairs.push(starts[g]!, starts[g + 1]!);
  }
  const set = rangesFrom(pairs);
  const length = starts[groups] ?? 0;
  return {
    make: () => rangesKernel(set.kind === "ranges" ? set.ranges : new Uint32Array(0)),
    candidates: set,
    selectivity: length === 0 ? 0 : sizeOf(set) / length,
    cost: 1,
  };
}

/** All rows a kernel keeps of its candidates, ascending. */
function runAll(kernel: Kernel, candidates: RowSet | undefined, length: number): Uint32Array {
  const out: number[] = [];
  const buffer = new Uint32Array(
    Math.min(MAX_BATCH, candidates === undefined ? length : sizeOf(candidates)),
  );
  const visit = (sel: Uint32Array | null, start: number, n: number): void => {
    const m = kernel(sel, start, n, buffer);
    for (let i = 0; i < m; i++) out.push(buffer[i]!);
  };
  if (candidates === undefined) {
    for (let s = 0; s < length; s += MAX_BATCH) visit(null, s, Math.min(MAX_BATCH, length - s));
  } else if (candidates.kind === "ranges") {
    const r = candidates.ranges;
    for (let k = 0; k < r.length; k += 2) {
      for (let s = r[k]!; s < r[k + 1]!; s += MAX_BATCH) {
        visit(null, s, Math.min(MAX_BATCH, r[k + 1]! - s));
      }
    }
  } else {
    const rows = candidates.rows;
    for (let s = 0; s < rows.length; s += MAX_BATCH) {
      const sel = rows.subarray(s, Math.min(rows.length, s + MAX_BATCH));
      visit(sel, 0, sel.length);
    }
  }
  return Uint32Array.from(out);
}

/**
 * The closed interval a plain numeric comparison selects, or undefined for
 * other forms (functions, `ne`, null, `in`).
 */
function numericRange(leaf: BoundLeaf): [number, number] | undefined {
  if (leaf.kind !== "compare" || leaf.left.kind !== "field" || leaf.right.kind !== "literal") {
    return undefined;
  }
  const k = leaf.right.value;
  if (typeof k !== "number") return undefined;
  switch (leaf.op) {
    case "eq":
      return [k, k];
    case "lt":
      return [-Infinity, nextDown(k)];
    case "le":
      return [-Infinity, k];
    case "gt":
      return [nextUp(k), Infinity];
    case "ge":
      return [k, Infinity];
    case "ne":
      return undefined;
  }
}

const scratch = new DataView(new ArrayBuffer(8));

/** The smallest double greater than `x`. */
export function nextUp(x: number): number {
  if (Number.isNaN(x) || x === Infinity) return x;
  if (x === 0) return Number.MIN_VALUE;
  scratch.setFloat64(0, x);
  const bits = scratch.getBigUint64(0);
  scratch.setBigUint64(0, x > 0 ? bits + 1n : bits - 1n);
  return scratch.getFloat64(0);
}

/** The largest double less than `x`. */
export function nextDown(x: number): number {
  return -nextUp(-x);
}

function collectFields(value: BoundValue, into: Set<string>): void {
  if (value.kind === "field") into.add(value.name);
  else if (value.kind === "call") { for (const arg of value.args) collectFields(arg, into); }
}
