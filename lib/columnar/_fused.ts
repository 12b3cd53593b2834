// Fused kernels: a tree of simple conditions (dictionary lookups, equality on
// codes, numeric ranges, joined by and/or/not) evaluated in ONE pass per
// row, the way a hand-written loop would, instead of one pass per condition.
//
// The loops are generated with `new Function`, once per shape of tree and
// cached. The source is built only from fixed fragments and argument
// indexes: every literal of the filter has already become a dictionary
// code, a lookup table or a number, and all of them are passed in as
// arguments. No text from a request ever reaches the generated source.

import type { CodeArray } from "./columns.ts";
import type { Kernel } from "./_kernels.ts";

/** A condition the fused loops can evaluate per row. */
export type FusedExpr =
  | { readonly kind: "table"; readonly codes: CodeArray; readonly table: Uint8Array }
  | { readonly kind: "eq"; readonly codes: CodeArray; readonly code: number }
  | {
    readonly kind: "between";
    readonly values: Float64Array;
    readonly lo: number;
    readonly hi: number;
  }
  | { readonly kind: "and" | "or"; readonly operands: readonly FusedExpr[] }
  | { readonly kind: "not"; readonly operand: FusedExpr };

type Loop = (
  args: readonly unknown[],
  sel: Uint32Array | null,
  start: number,
  n: number,
  out: Uint32Array,
) => number;
type CountLoop = (
  args: readonly unknown[],
  sel: Uint32Array | null,
  start: number,
  n: number,
) => number;

interface Loops {
  readonly range: Loop;
  readonly selected: Loop;
  readonly countRange: CountLoop;
  readonly countSelected: CountLoop;
}

/** A fused condition: a kernel, and a counter that writes no rows. */
export interface FusedKernel {
  readonly kernel: Kernel;
  readonly count: (sel: Uint32Array | null, start: number, n: number) => number;
}

const MAX_SHAPES = 512;
const cache = new Map<string, Loops>();

/**
 * Builds the fused kernel of a condition tree.
 * @param expr the tree
 * @returns the kernel and its counter
 */
export function fuseKernel(expr: FusedExpr): FusedKernel {
  const args: unknown[] = [];
  const types: string[] = [];
  const temps = { count: 0 };
  const test = emit(expr, args, types, temps);
  const key = `${test}|${types.join(",")}|${temps.count}`;
  let loops = cache.get(key);
  if (loops === undefined) {
    loops = generate(test, args.length, temps.count);
    if (cache.size >= MAX_SHAPES) cache.delete(cache.keys().next().value!);
    cache.set(key, loops);
  }
  const { range, selected, countRange, countSelected } = loops;
  return {
    kernel: (
      sel,
      start,
      n,
      out,
    ) => (sel === null ? range(args, null, start, n, out) : selected(args, sel, start, n, out)),
    count: (
      sel,
      start,
      n,
    ) => (sel === null ? countRange(args, null, start, n) : countSelected(args, sel, start, n)),
  };
}

function slot(args: unknown[], types: string[], value: unknown): string {
  args.push(value);
  types.push(typeof value === "object" && value !== null ? value.constructor.name : typeof value);
  return `a${args.length - 1}`;
}

function emit(expr: FusedExpr, args: unknown[], types: string[], temps: { count: number }): string {
  switch (expr.kind) {
    case "table": {
      const codes = slot(args, types, expr.codes);
      const table = slot(args, types, expr.table);
      return `${table}[${codes}[r]] !== 0`;
    }
    case "eq": {
      const codes = slot(args, types, expr.codes);
      const code = slot(args, types, expr.code);
      return `${codes}[r] === ${code}`;
    }
    case "between": {
      // NaN (null) fails every comparison, as it must. A one-sided range
      // needs one comparison; which side is part of the shape.
      const values = slot(args, types, expr.values);
      if (expr.hi === Infinity) return `${values}[r] >= ${slot(args, types, expr.lo)}`;
      if (expr.lo === -Infinity) return `${values}[r] <= ${slot(args, types, expr.hi)}`;
      const lo = slot(args, types, expr.lo);
      const hi = slot(args, types, expr.hi);
      const x = `x${temps.count++}`;
      return `((${x} = ${values}[r]) >= ${lo} && ${x} <= ${hi})`;
    }
    case "and":
    case "or":
      return `(${
        expr.operands.map((operand) => emit(operand, args, types, temps)).join(
          expr.kind === "and" ? " && " : " || ",
        )
      })`;
    case "not":
      return `!(${emit(expr.operand, args, types, temps)})`;
  }
}

function generate(test: string, arity: number, temps: number): Loops {
  const locals = Array.from({ length: arity }, (_, i) => `const a${i} = args[${i}];`).join("\n");
  const scratch = temps === 0
    ? ""
    : `let ${Array.from({ length: temps }, (_, i) => `x${i} = 0`).join(", ")};`;
  const make = <T>(body: string, params: string): T =>
    new Function(
      "args",
      ...params.split(","),
      `"use strict";\n${locals}\n${scratch}\nlet m = 0;\n${body}\nreturn m;`,
    ) as T;
  return {
    range: make<Loop>(
      `for (let r = start, e = start + n; r < e; r++) if (${test}) out[m++] = r;`,
      "sel,start,n,out",
    ),
    selected: make<Loop>(
      `for (let i = 0; i < n; i++) { const r = sel[i]; if (${test}) out[m++] = r; }`,
      "sel,start,n,out",
    ),
    countRange: make<CountLoop>(
      `for (let r = start, e = start + n; r < e; r++) if (${test}) m++;`,
      "sel,start,n",
    ),
    countSelected: make<CountLoop>(
      `for (let i = 0; i < n; i++) { const r = sel[i]; if (${test}) m++; }`,
      "sel,start,n",
    ),
  };
}
