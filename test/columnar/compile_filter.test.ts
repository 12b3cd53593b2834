import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  type Column,
  type ColumnTable,
  type CompiledFilter,
  compileFilter,
  countMatches,
  MatchCursor,
  type PostingIndex,
} from "../../lib/columnar/mod.ts";
import {
  bindFilter,
  type BoundFilter,
  evaluateFilter,
  type FilterFieldType,
  type FilterSchema,
  parseFilter,
  type Scalar,
} from "../../lib/odata/mod.ts";
import { nextDown, nextUp } from "../../lib/columnar/compile_filter.ts";
import { createPrng, type Prng } from "../_helpers/prng.ts";

type Cell = Scalar | readonly Scalar[];

/** A field of a generated table: its name, type and column. */
interface FieldSpec {
  readonly name: string;
  readonly type: FilterFieldType;
  readonly multi: boolean;
  readonly column: Column;
}

/** A generated table with the plain value of every field in every row. */
interface Fixture {
  readonly table: ColumnTable;
  readonly schema: FilterSchema;
  readonly fields: readonly FieldSpec[];
  /** Plain values by field, one per row, decoded independently of the compiler. */
  readonly plain: ReadonlyMap<string, readonly Cell[]>;
  /** Distinct non-null values by field, to draw literals from. */
  readonly domains: ReadonlyMap<string, readonly Scalar[]>;
}

function tableOf(length: number, entries: Iterable<readonly [string, Column]>): ColumnTable {
  const columns = new Map(entries);
  return { length, column: (name) => columns.get(name) };
}

/** Parses, binds and compiles filter text. */
function compileText(text: string, schema: FilterSchema, table: ColumnTable): CompiledFilter {
  return compileFilter(bindFilter(parseFilter(text), schema), table);
}

/** The value of one row of a column, read the plain way. */
function decode(column: Column, row: number): Cell {
  switch (column.kind) {
    case "dict":
      return column.values[column.codes[row]!] ?? null;
    case "number": {
      const v = column.values[row]!;
      return Number.isNaN(v) ? null : v;
    }
    case "rownumber":
      return row + column.offset;
    case "group": {
      // The last group starting at or before the row; empty groups start where the next one does.
      let lo = 0;
      let hi = column.starts.length - 2;
      while (lo < hi) {
        const mid = (lo + hi + 1) >>> 1;
        if (column.starts[mid]! <= row) lo = mid;
        else hi = mid - 1;
      }
      return decode(column.column, lo);
    }
    case "values":
      return column.values[row] ?? null;
  }
}

/** A CSR posting index over `codes`, keyed by `keyOf[code]` when given. */
function buildIndex(codes: ArrayLike<number>, keys: number, keyOf?: Uint32Array): PostingIndex {
  const counts = new Uint32Array(keys + 1);
  const key = (code: number): number => (keyOf === undefined ? code : keyOf[code]!);
  for (let r = 0; r < codes.length; r++) counts[key(codes[r]!) + 1]!++;
  const starts = new Uint32Array(keys + 1);
  for (let k = 0; k < keys; k++) starts[k + 1] = starts[k]! + counts[k + 1]!;
  const fill = starts.slice(0, keys);
  const rows = new Uint32Array(codes.length);
  for (let r = 0; r < codes.length; r++) rows[fill[key(codes[r]!)]!++] = r;
  return keyOf === undefined ? { starts, rows } : { keyOf, starts, rows };
}

/** Starts of groups that cover `total` rows, some groups empty (also the last, at times). */
function groupStarts(prng: Prng, total: number, mean: number): Uint32Array {
  const starts = [0];
  let at = 0;
  while (at < total) {
    const size = prng.int(8) === 0 ? 0 : Math.min(total - at, 1 + prng.int(2 * mean));
    at += size;
    starts.push(at);
  }
  if (prng.int(2) === 0) starts.push(total);
  return Uint32Array.from(starts);
}

/** An index below `k`, skewed towards 0 so that some values are common and some rare. */
function skewed(prng: Prng, k: number): number {
  return Math.min(k - 1, Math.floor(prng.next() ** 3 * k));
}

const NAMES: readonly Scalar[] = [
  null,
  "pH",
  "Temperature, water",
  "Dissolved oxygen (DO)",
  "2,2'-Dichlorobiphenyl",
  "Specific conductance",
  "turbidity",
  "TURBIDITY",
  " Turbidity ",
  "",
  "Rivière 🌊",
  "Total Nitrogen, mixed forms",
];

const NUMBERS: readonly number[] = [
  0,
  -0,
  1,
  2,
  2.5,
  -2.5,
  3.5,
  -3.5,
  7,
  7.1,
  10,
  100,
  -1,
  1e-9,
  1e21,
  0.1 + 0.2,
  49.5,
];

function numberValue(prng: Prng): number {
  if (prng.int(10) === 0) return Number.NaN;
  if (prng.int(2) === 0) return prng.pick(NUMBERS);
  return Math.round(prng.next() * 2000 - 500) / 10;
}

const DAY = 86_400_000;
const EPOCH_2019 = Date.UTC(2019, 0, 1);

function instant(prng: Prng): number {
  const day = EPOCH_2019 + prng.int(3 * 365) * DAY;
  return prng.int(3) === 0 ? day : day + prng.int(86_400) * 1000;
}

function isoDate(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

function guidOf(prng: Prng): string {
  const hex = (n: number): string => {
    let text = "";
    for (let i = 0; i < n; i++) text += "0123456789abcdef"[prng.int(16)];
    return text;
  };
  return `${hex(8)}-${hex(4)}-4${hex(3)}-8${hex(3)}-${hex(12)}`;
}

function buildFixture(prng: Prng, length: number): Fixture {
  const fields: FieldSpec[] = [];
  const add = (name: string, type: FilterFieldType, column: Column, multi = false): void => {
    fields.push({ name, type, multi, column });
  };

  add("Id", "integer", { kind: "rownumber", offset: 1000 });

  const nameCodes = new Uint8Array(length);
  for (let r = 0; r < length; r++) nameCodes[r] = skewed(prng, NAMES.length);
  add("CharacteristicName", "string", {
    kind: "dict",
    codes: nameCodes,
    values: NAMES,
    index: buildIndex(nameCodes, NAMES.length),
  });

  // More than 256 values: 16-bit codes, and an index with coarser keys (8 codes a key).
  const units: Scalar[] = [null];
  for (let i = 1; i < 400; i++) units.push(`u${String(i).padStart(3, "0")}`);
  const unitCodes = new Uint16Array(length);
  for (let r = 0; r < length; r++) unitCodes[r] = skewed(prng, units.length);
  const unitKeyOf = Uint32Array.from(units, (_, code) => code >> 3);
  add("Unit", "string", {
    kind: "dict",
    codes: unitCodes,
    values: units,
    index: buildIndex(unitCodes, (units.length >> 3) + 1, unitKeyOf),
  });

  const methods: Scalar[] = [null, "EPA 150.1", "SM 4500-H+ B", "field probe"];
  const methodCodes = new Uint32Array(length);
  for (let r = 0; r < length; r++) methodCodes[r] = prng.int(methods.length);
  add("MethodId", "string", { kind: "dict", codes: methodCodes, values: methods });

  // Integer values in a dictionary, indexed by decade-like keys.
  const years: Scalar[] = [null];
  for (let y = 1995; y <= 2024; y++) years.push(y);
  const yearCodes = new Uint8Array(length);
  for (let r = 0; r < length; r++) yearCodes[r] = years.length - 1 - skewed(prng, years.length);
  const yearKeyOf = Uint32Array.from(years, (_, code) => (code === 0 ? 0 : 1 + ((code - 1) >> 3)));
  add("ActivityStartYear", "integer", {
    kind: "dict",
    codes: yearCodes,
    values: years,
    index: buildIndex(yearCodes, 6, yearKeyOf),
  });

  const dates: Scalar[] = [null];
  for (let d = 0; d < 500; d++) dates.push(isoDate(EPOCH_2019 + d * 3 * DAY));
  const dateCodes = new Uint16Array(length);
  for (let r = 0; r < length; r++) dateCodes[r] = prng.int(dates.length);
  add("ActivityStartDate", "date", { kind: "dict", codes: dateCodes, values: dates });

  const numbers = (n: number): Float64Array =>
    Float64Array.from({ length: n }, () => numberValue(prng));
  add("ResultValue", "number", { kind: "number", values: numbers(length) });
  add("ResultDepth", "integer", {
    kind: "number",
    values: Float64Array.from({ length }, () => (prng.int(6) === 0 ? NaN : prng.int(40) - 5)),
  });
  add("ActivityStartTime", "datetime", {
    kind: "number",
    values: Float64Array.from({ length }, () => (prng.int(8) === 0 ? Number.NaN : instant(prng))),
  });
  add("Flagged", "boolean", {
    kind: "values",
    values: Array.from({ length }, () => prng.pick([true, false, false, null])),
  });
  const comments: Scalar[] = [null, "ok", " ok ", "OK", "it's fine", "", "sample (dup)", "a,b"];
  const picks = (n: number, xs: readonly Scalar[]): Scalar[] =>
    Array.from({ length: n }, () => prng.pick(xs));
  add("Comment", "string", { kind: "values", values: picks(length, comments) });
  const tags: Scalar[] = ["ice", "storm", "dup", "lab"];
  add(
    "Tags",
    "string",
    {
      kind: "values",
      values: Array.from({ length }, (): Cell => {
        if (prng.int(10) === 0) return null;
        return Array.from({ length: prng.int(4) }, () => prng.pick(tags));
      }),
    },
    true,
  );

  // Locations: groups of rows; datasets: groups of locations.
  const locStarts = groupStarts(prng, length, 40);
  const locations = locStarts.length - 1;
  const dsStarts = groupStarts(prng, locations, 6);
  const datasets = dsStarts.length - 1;
  const atLocation = (column: Column): Column => ({ kind: "group", starts: locStarts, column });
  const atDataset = (column: Column): Column =>
    atLocation({ kind: "group", starts: dsStarts, column });

  add("LocationId", "integer", atLocation({ kind: "rownumber", offset: 1 }));
  add("Latitude", "number", atLocation({ kind: "number", values: numbers(locations) }));
  const lakes: Scalar[] = [null, "Lake One", "Lake Two", "Bay d'Espoir", "Rivière", "lake one"];
  const lakeCodes = Uint8Array.from({ length: locations }, () => skewed(prng, lakes.length));
  add(
    "MonitoringLocationName",
    "string",
    atLocation({
      kind: "dict",
      codes: lakeCodes,
      values: lakes,
      index: buildIndex(lakeCodes, lakes.length),
    }),
  );
  const regions = ["hub.atlantic", "hub.pacific", "admin.2.ca", "admin.4.ca.ns", "admin.4.ca.bc"];
  add(
    "RegionId",
    "string",
    atLocation({
      kind: "values",
      values: Array.from({ length: locations }, (): Cell => {
        if (prng.int(12) === 0) return null;
        const list: Scalar[] = [];
        for (let k = prng.int(4); k > 0; k--) list.push(prng.pick(regions));
        return list;
      }),
    }),
    true,
  );

  const dois: Scalar[] = [null];
  for (let i = 1; i < 300; i++) dois.push(`10.25976/${String(i).padStart(4, "0")}-x${i % 7}`);
  const doiCodes = Uint16Array.from({ length: datasets }, () => skewed(prng, dois.length));
  const doiIndex = buildIndex(doiCodes, dois.length);
  add("DOI", "string", atDataset({ kind: "dict", codes: doiCodes, values: dois, index: doiIndex }));
  const guids = Array.from({ length: datasets }, () => guidOf(prng));
  add("DatasetId", "guid", atDataset({ kind: "values", values: guids }));
  add(
    "CreateTimestamp",
    "datetime",
    atDataset({
      kind: "number",
      values: Float64Array.from({ length: datasets }, () => instant(prng)),
    }),
  );
  const publics: Scalar[] = [null, true, false];
  const publicCodes = Uint8Array.from({ length: datasets }, () => prng.int(3));
  add("Public", "boolean", atDataset({ kind: "dict", codes: publicCodes, values: publics }));
  const words: Scalar[] = ["lake", "river", "citizen", "nutrients"];
  add(
    "Keywords",
    "string",
    atDataset({
      kind: "values",
      values: Array.from({ length: datasets }, () => picks(prng.int(3), words)),
    }),
    true,
  );

  const columns = new Map(fields.map((f) => [f.name, f.column] as const));
  const plain = new Map<string, Cell[]>();
  const domains = new Map<string, Scalar[]>();
  for (const f of fields) {
    const cells = Array.from({ length }, (_, row) => decode(f.column, row));
    plain.set(f.name, cells);
    const distinct = new Set<Scalar>();
    for (const cell of cells) {
      for (const v of Array.isArray(cell) ? cell : [cell]) if (v !== null) distinct.add(v);
    }
    const all = [...distinct];
    domains.set(f.name, all.length <= 60 ? all : Array.from({ length: 60 }, () => prng.pick(all)));
  }
  const schema: FilterSchema = new Map(
    fields.map((f) => [f.name, { type: f.type, multiValued: f.multi }] as const),
  );
  return { table: tableOf(length, columns), schema, fields, plain, domains };
}

/** Generates random filter text over a fixture's fields. */
class FilterGenerator {
  readonly #prng: Prng;
  readonly #fixture: Fixture;

  constructor(prng: Prng, fixture: Fixture) {
    this.#prng = prng;
    this.#fixture = fixture;
  }

  filter(depth: number): string {
    const p = this.#prng;
    const r = p.next();
    if (depth <= 0 || r < 0.3) return this.#leaf();
    if (r < 0.42) return `not (${this.filter(depth - 1)})`;
    const op = r < 0.75 ? "and" : "or";
    const parts = Array.from({ length: 2 + p.int(3) }, () => this.filter(depth - 1));
    // Leaves go without parentheses now and then; composite parts always keep them.
    const bare = (part: string): boolean => p.int(4) === 0 && !/ (and|or) /.test(part);
    const wrapped = parts.map((part) => (bare(part) ? part : `(${part})`));
    return wrapped.join(` ${op} `);
  }

  #leaf(): string {
    const p = this.#prng;
    if (p.int(60) === 0) return p.pick(CONSTANTS);
    const field = p.pick(this.#fixture.fields);
    const name = field.name;
    const r = p.next();
    if (r < 0.08) return `${name} ${this.#op()} null`;
    if (r < 0.1) return `null ${this.#op()} ${name}`;
    if (r < 0.22) {
      const values = Array.from(
        { length: 1 + p.int(4) },
        () => (p.int(8) === 0 ? "null" : this.#literal(field)),
      );
      return `${name} in (${values.join(", ")})`;
    }
    if (r < 0.45) {
      const call = this.#call(field);
      if (call !== undefined) return call;
    }
    if (field.type === "boolean" && p.int(3) === 0) return p.int(2) === 0 ? name : `not ${name}`;
    const literal = this.#literal(field);
    return p.int(5) === 0 ? `${literal} ${this.#op()} ${name}` : `${name} ${this.#op()} ${literal}`;
  }

  #op(): string {
    return this.#prng.pick(["eq", "ne", "lt", "le", "gt", "ge", "lte", "gte", "eq", "ne"]);
  }

  #sample(field: FieldSpec): Scalar {
    const domain = this.#fixture.domains.get(field.name) ?? [];
    return domain.length === 0 ? null : this.#prng.pick(domain);
  }

  #call(field: FieldSpec): string | undefined {
    const p = this.#prng;
    const name = field.name;
    const op = this.#op();
    switch (field.type) {
      case "string":
      case "guid": {
        const text = String(this.#sample(field) ?? "x");
        const start = p.int(text.length + 2);
        const piece = text.slice(start, start + 1 + p.int(4));
        const pieceText = quote(p.int(6) === 0 ? "zz" : piece);
        switch (p.int(11)) {
          case 0:
            return `contains(${name}, ${pieceText})`;
          case 1:
            return `${p.int(3) === 0 ? "not " : ""}startswith(${name}, ${pieceText})`;
          case 2:
            return `endswith(${name}, ${pieceText})`;
          case 3:
            return `tolower(${name}) ${op} ${quote(text.toLowerCase())}`;
          case 4:
            return `toupper(${name}) ${op} ${quote(text.toUpperCase())}`;
          case 5:
            return `trim(${name}) ${op} ${quote(text.trim())}`;
          case 6:
            return `length(${name}) ${op} ${p.int(3) === 0 ? `'${p.int(25)}'` : p.int(25)}`;
          case 7:
            return `indexof(${name}, ${pieceText}) ${op} ${p.int(7) - 1}`;
          case 8:
            return p.int(2) === 0
              ? `substring(${name}, ${start}) ${op} ${quote(text.slice(start))}`
              : `substring(${name}, ${start}, ${piece.length}) ${op} ${quote(piece)}`;
          case 9:
            return `concat(${name}, ${pieceText}) ${op} ${quote(text + piece)}`;
          default:
            return `contains(tolower(${name}), ${quote(piece.toLowerCase())})`;
        }
      }
      case "number":
      case "integer": {
        const fn = p.pick(["round", "floor", "ceiling"]);
        const value = this.#sample(field);
        const n = typeof value === "number" ? Math.round(value) : p.int(10);
        return `${fn}(${name}) ${op} ${n}`;
      }
      case "date":
      case "datetime": {
        const fn = p.pick(["year", "month", "day"]);
        const n = fn === "year" ? 2018 + p.int(5) : fn === "month" ? 1 + p.int(12) : 1 + p.int(31);
        return `${fn}(${name}) ${op} ${p.int(4) === 0 ? `'${n}'` : n}`;
      }
      case "boolean":
        return undefined;
    }
  }

  #literal(field: FieldSpec): string {
    const p = this.#prng;
    const value = this.#sample(field);
    switch (field.type) {
      case "string":
        if (p.int(5) === 0 || typeof value !== "string") {
          return quote(p.pick(["zz", "", "pH ", "u1"]));
        }
        return quote(value);
      case "number":
      case "integer": {
        let n = typeof value === "number" ? value : 0;
        const r = p.int(10);
        if (r === 0) n += 0.5;
        else if (r === 1) n = p.pick([-1e9, 1e9, -3, 0.25, 1e-9]);
        else if (r === 2) n = n + p.int(3) - 1;
        return numberText(p, n);
      }
      case "date": {
        const text = typeof value === "string" && p.int(5) !== 0
          ? value
          : isoDate(EPOCH_2019 + p.int(1600) * DAY);
        return p.int(2) === 0 ? text : `'${text}'`;
      }
      case "datetime": {
        const ms = typeof value === "number" && p.int(5) !== 0 ? value : instant(p);
        const text = dateTimeText(p, ms);
        return p.int(3) === 0 ? `'${text}'` : text;
      }
      case "guid": {
        const text = typeof value === "string" && p.int(5) !== 0 ? value : guidOf(p);
        const cased = p.int(2) === 0 ? text : text.toUpperCase();
        return p.int(2) === 0 ? cased : `'${cased}'`;
      }
      case "boolean":
        return p.pick(["true", "false"]);
    }
  }
}

function quote(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

function numberText(p: Prng, n: number): string {
  const text = p.int(4) === 0 ? n.toExponential() : String(n);
  switch (p.int(4)) {
    case 0:
      return `'${text}'`;
    case 1:
      return `' ${text} '`;
    default:
      return text;
  }
}

/** A date-time literal for an instant: a date at midnight, UTC, or with an offset. */
function dateTimeText(p: Prng, ms: number): string {
  if (ms % DAY === 0 && p.int(2) === 0) return isoDate(ms);
  if (p.int(2) === 0) return new Date(ms).toISOString();
  const offset = p.pick([-480, -300, 0, 60, 330]);
  const local = new Date(ms + offset * 60_000).toISOString().slice(0, 23);
  const sign = offset < 0 ? "-" : "+";
  const abs = Math.abs(offset);
  const two = (n: number): string => String(n).padStart(2, "0");
  return `${local}${sign}${two(Math.floor(abs / 60))}:${two(abs % 60)}`;
}

/** The rows where the reference evaluator holds, ascending. */
function expectedRows(fixture: Fixture, bound: BoundFilter): number[] {
  let row = 0;
  const columns: Record<string, readonly Cell[]> = Object.fromEntries(fixture.plain);
  const get = (name: string): Cell => columns[name]![row]!;
  const out: number[] = [];
  for (; row < fixture.table.length; row++) if (evaluateFilter(bound, get)) out.push(row);
  return out;
}

function firstAtOrAfter(rows: readonly number[], row: number): number {
  let lo = 0;
  let hi = rows.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (rows[mid]! < row) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

const CONSTANTS = [
  "true",
  "false",
  "1 eq 1",
  "'a' eq 'b'",
  "contains('abc', 'b')",
  "length('abc') eq 3",
];

const PAGE_SIZES = [1, 2, 3, 17, 100, 255, 256, 257, 1000, 4096, 8192, 8193, 20_000];

/**
 * Walks a cursor with random page sizes and seeks, checking every page
 * against the expected rows; returns a description of the first difference.
 */
function walk(
  p: Prng,
  fixture: Fixture,
  bound: BoundFilter,
  expected: readonly number[],
): string | undefined {
  const length = fixture.table.length;
  const compiled = compileFilter(bound, fixture.table);
  if (countMatches(compiled) !== expected.length) {
    return `countMatches gave ${countMatches(compiled)}, expected ${expected.length}`;
  }
  const from = p.int(3) === 0 ? 0 : p.int(length + 10);
  let at = firstAtOrAfter(expected, from);
  const counted = countMatches(compiled, { from });
  if (counted !== expected.length - at) {
    return `countMatches from ${from} gave ${counted}, expected ${expected.length - at}`;
  }
  const cursor = new MatchCursor(compiled, { from });
  let last = from;
  for (let step = 0; step < 200; step++) {
    if (p.int(6) === 0) {
      // Mostly short hops around the last row, some backwards; now and then anywhere.
      const hop = p.int(Math.max(1, length >> 4)) - (length >> 6);
      const target = p.int(4) === 0 ? p.int(length + 5) : last + hop;
      cursor.seek(target);
      at = Math.max(at, firstAtOrAfter(expected, target));
      continue;
    }
    const max = p.pick(PAGE_SIZES);
    const out = new Uint32Array(max + p.int(3));
    const n = cursor.next(out, max);
    const want = Math.min(max, expected.length - at);
    if (n !== want) return `page ${step} of max ${max} gave ${n} rows, expected ${want} (at ${at})`;
    for (let i = 0; i < n; i++) {
      if (out[i] !== expected[at + i]) {
        return `page ${step} row ${i} is ${out[i]}, expected ${expected[at + i]}`;
      }
    }
    at += n;
    if (n > 0) last = out[n - 1]!;
    if (n < max) {
      if (cursor.next(out, max) !== 0) return "the cursor gave rows after its end";
      return undefined;
    }
  }
  return undefined;
}

describe("compileFilter()", () => {
  describe("matches the reference evaluator on random tables and filters", () => {
    const runs = [
      { seed: 0x0da7a001, length: 3_000, filters: 1_000 },
      { seed: 0x0da7a002, length: 5_987, filters: 650 },
      { seed: 0x0da7a003, length: 12_000, filters: 350 },
    ] as const;
    for (const run of runs) {
      it(`agrees on ${run.filters} filters over ${run.length} rows (seed ${run.seed})`, (t) => {
        t.diagnostic(`seed ${run.seed}`);
        const p = createPrng(run.seed);
        const fixture = buildFixture(p, run.length);
        const generate = new FilterGenerator(p, fixture);
        let matched = 0;
        let empty = 0;
        for (let i = 0; i < run.filters; i++) {
          const text = generate.filter(1 + p.int(4));
          const bound = bindFilter(parseFilter(text), fixture.schema);
          const expected = expectedRows(fixture, bound);
          if (expected.length === 0) empty++;
          else matched++;
          const problem = walk(p, fixture, bound, expected);
          if (problem !== undefined) {
            assert.fail(`seed ${run.seed}, filter #${i}: ${text}\n${problem}`);
          }
        }
        t.diagnostic(`${matched} filters matched some rows, ${empty} matched none`);
        assert.ok(matched > run.filters / 3, `only ${matched} filters matched any row`);
        assert.ok(empty > run.filters / 50, `only ${empty} filters matched no row`);
      });
    }
  });

  describe("row numbers", () => {
    const length = 50;
    const offset = 100;
    const table = tableOf(length, [["Id", { kind: "rownumber", offset }]]);
    const schema: FilterSchema = new Map([["Id", { type: "integer" }]]);
    const literals = [
      "-1000",
      "-0.5",
      "99",
      "99.5",
      "100",
      "100.5",
      "'120'",
      "120",
      "120.5",
      "149",
      "149.5",
      "150",
      "151",
      "1e9",
      "null",
    ];
    for (const op of ["eq", "ne", "lt", "le", "gt", "ge"] as const) {
      for (const literal of literals) {
        it(`selects the right rows for Id ${op} ${literal}`, () => {
          const bound = bindFilter(parseFilter(`Id ${op} ${literal}`), schema);
          const expected = Array.from({ length }, (_, r) => r)
            .filter((r) => evaluateFilter(bound, () => r + offset));
          const compiled = compileFilter(bound, table);
          assert.notEqual(compiled.candidates, undefined);
          assert.deepEqual(allRows(compiled), expected);
        });
      }
    }

    it("selects the rows of an 'in' list, skipping non-integers, nulls and other rows", () => {
      const text = "Id in (149, 100, 99, 120.5, null, 130, 130, 150)";
      const compiled = compileText(text, schema, table);
      assert.deepEqual(allRows(compiled), [0, 30, 49]);
      assert.deepEqual(compiled.candidates, { kind: "rows", rows: Uint32Array.of(0, 30, 49) });
    });

    it("tests row by row for a function of the row number", () => {
      const bound = bindFilter(parseFilter("round(Id) eq 120 or floor(Id) in (101)"), schema);
      assert.deepEqual(allRows(compileFilter(bound, table)), [1, 20]);
    });

    it("compares a row number with a string field's text row by row", () => {
      const text = tableOf(3, [["Code", { kind: "rownumber", offset: 0 }]]);
      const bound = bindFilter(parseFilter("Code eq '1'"), new Map([["Code", { type: "string" }]]));
      assert.deepEqual(allRows(compileFilter(bound, text)), []);
    });
  });

  describe("numbers", () => {
    const values = [
      1,
      nextUp(1),
      nextDown(1),
      2,
      Number.NaN,
      -0,
      0,
      Number.MIN_VALUE,
      -Number.MIN_VALUE,
      Number.MAX_VALUE,
      -Number.MAX_VALUE,
      -2.5,
    ];
    const column: Column = { kind: "number", values: Float64Array.from(values) };
    const table = tableOf(values.length, [["V", column]]);
    const schema: FilterSchema = new Map([["V", { type: "number" }]]);
    const { MIN_VALUE, MAX_VALUE } = Number;
    const literals = [1, nextUp(1), nextDown(1), 0, MIN_VALUE, -MIN_VALUE, MAX_VALUE, -2.5];
    for (const op of ["eq", "ne", "lt", "le", "gt", "ge"] as const) {
      for (const k of literals) {
        it(`keeps exact values apart for V ${op} ${k}`, () => {
          const bound = bindFilter(parseFilter(`V ${op} ${k}`), schema);
          const holds = (v: number): boolean =>
            evaluateFilter(bound, () => (Number.isNaN(v) ? null : v));
          const expected = values.flatMap((v, r) => (holds(v) ? [r] : []));
          assert.deepEqual(allRows(compileFilter(bound, table)), expected);
        });
      }
    }

    it("excludes the literal itself for strict 'gt' and 'lt'", () => {
      const gt = compileText("V gt 1", schema, table);
      assert.deepEqual(allRows(gt).map((r) => values[r]), [nextUp(1), 2, Number.MAX_VALUE]);
      const lt = compileText("V lt 1", schema, table);
      assert.deepEqual(
        allRows(lt).map((r) => values[r]),
        [nextDown(1), -0, 0, MIN_VALUE, -MIN_VALUE, -MAX_VALUE, -2.5],
      );
    });

    it("compares with an infinite quoted number", () => {
      const all = values.flatMap((v, r) => (Number.isNaN(v) ? [] : [r]));
      assert.deepEqual(allRows(compileText("V lt '1e999'", schema, table)), all);
      assert.deepEqual(allRows(compileText("V gt '1e999'", schema, table)), []);
      assert.deepEqual(allRows(compileText("V ge '-1e999'", schema, table)), all);
    });

    it("matches null (NaN) with 'eq null' and 'ne' with anything else", () => {
      assert.deepEqual(allRows(compileText("V eq null", schema, table)), [4]);
      assert.equal(allRows(compileText("V ne 2", schema, table)).length, values.length - 1);
    });
  });

  describe("nextUp() and nextDown()", () => {
    const cases = [
      { x: 1, up: 1 + 2 ** -52, down: 1 - 2 ** -53 },
      { x: -1, up: -1 + 2 ** -53, down: -1 - 2 ** -52 },
      { x: 0, up: Number.MIN_VALUE, down: -Number.MIN_VALUE },
      { x: -0, up: Number.MIN_VALUE, down: -Number.MIN_VALUE },
      { x: Number.MIN_VALUE, up: 2 * Number.MIN_VALUE, down: 0 },
      { x: Number.MAX_VALUE, up: Infinity, down: Number.MAX_VALUE - 2 ** 970 },
      { x: Infinity, up: Infinity, down: Number.MAX_VALUE },
      { x: -Infinity, up: -Number.MAX_VALUE, down: -Infinity },
      { x: 2 ** 53, up: 2 ** 53 + 2, down: 2 ** 53 - 1 },
    ] as const;
    for (const c of cases) {
      it(`steps from ${c.x} to the neighbouring doubles`, () => {
        assert.equal(nextUp(c.x), c.up);
        assert.equal(nextDown(c.x), c.down);
      });
    }

    it("steps from -MIN_VALUE up to negative zero", () => {
      assert.equal(nextUp(-Number.MIN_VALUE), -0);
    });

    it("keeps NaN", () => {
      assert.ok(Number.isNaN(nextUp(Number.NaN)));
      assert.ok(Number.isNaN(nextDown(Number.NaN)));
    });

    it("gives a value strictly between no two doubles", () => {
      const p = createPrng(0x5eed0001);
      for (let i = 0; i < 1000; i++) {
        const x = (p.next() - 0.5) * 10 ** (p.int(40) - 20);
        assert.ok(nextUp(x) > x && nextDown(x) < x, `seed ${p.seed}, x ${x}`);
        assert.equal(nextDown(nextUp(x)), x);
      }
    });
  });

  describe("errors", () => {
    const table = tableOf(3, [
      ["A", { kind: "number", values: Float64Array.of(1, 2, 3) }],
      ["B", { kind: "number", values: Float64Array.of(3, 2, 1) }],
    ]);
    const schema: FilterSchema = new Map([
      ["A", { type: "number" }],
      ["B", { type: "number" }],
      ["C", { type: "number" }],
    ]);

    it("refuses a comparison of two fields", () => {
      assert.throws(() => compileText("A gt B", schema, table), {
        name: "ODataError",
        code: "ERR_ODATA_UNSUPPORTED",
        target: "A",
      });
    });

    it("refuses a comparison of two fields inside a function", () => {
      assert.throws(() => compileText("A eq 1 or round(A) eq B", schema, table), {
        code: "ERR_ODATA_UNSUPPORTED",
      });
    });

    it("refuses a field the table does not have with a TypeError", () => {
      assert.throws(() => compileText("C eq 1", schema, table), { name: "TypeError" });
    });
  });

  describe("indexes", () => {
    const length = 4000;
    const values: Scalar[] = [null, "common", "rare", "other"];
    const codes = new Uint8Array(length);
    // Half the rows "common", a tenth "rare", a tenth null, the rest "other".
    for (let r = 0; r < length; r++) codes[r] = [1, 2, 1, 0, 1, 3, 1, 3, 1, 3][r % 10]!;
    const table = tableOf(length, [
      ["X", { kind: "dict", codes, values, index: buildIndex(codes, values.length) }],
      ["Id", { kind: "rownumber", offset: 0 }],
    ]);
    const schema: FilterSchema = new Map([["X", { type: "string" }], ["Id", { type: "integer" }]]);
    const compile = (text: string): CompiledFilter => compileText(text, schema, table);
    const brute = (test: (value: Scalar, row: number) => boolean): number[] =>
      Array.from({ length }, (_, r) => r).filter((r) => test(values[codes[r]!]!, r));

    it("uses the index rows as candidates for a rare value", () => {
      const compiled = compile("X eq 'rare'");
      assert.equal(compiled.candidates?.kind, "rows");
      assert.deepEqual(allRows(compiled), brute((v) => v === "rare"));
    });

    it("uses the union of the index rows for an 'in' list", () => {
      const compiled = compile("X in ('rare', null)");
      assert.equal(compiled.candidates?.kind, "rows");
      assert.deepEqual(allRows(compiled), brute((v) => v === "rare" || v === null));
    });

    it("does not use an index that holds more than a quarter of the rows", () => {
      const compiled = compile("X eq 'common'");
      assert.equal(compiled.candidates, undefined);
      assert.deepEqual(allRows(compiled), brute((v) => v === "common"));
    });

    it("does not use a long row list as candidates", () => {
      const ids = Array.from({ length: 1500 }, (_, i) => i * 2).join(", ");
      const compiled = compile(`Id in (${ids})`);
      assert.equal(compiled.candidates, undefined);
      assert.equal(countMatches(compiled), 1500);
    });

    it("intersects candidates of 'and' and keeps results exact", () => {
      const compiled = compile("X eq 'rare' and Id lt 2000");
      assert.equal(compiled.candidates?.kind, "rows");
      assert.deepEqual(allRows(compiled), brute((v, r) => v === "rare" && r < 2000));
    });

    it("drops candidates for 'or' with an operand that has none", () => {
      const compiled = compile("X eq 'rare' or X eq 'common'");
      assert.equal(compiled.candidates, undefined);
      assert.deepEqual(allRows(compiled), brute((v) => v === "rare" || v === "common"));
    });

    it("drops candidates for 'not'", () => {
      const compiled = compile("not (X eq 'rare')");
      assert.equal(compiled.candidates, undefined);
      assert.deepEqual(allRows(compiled), brute((v) => v !== "rare"));
    });

    it("gives no candidates and no rows when no value matches", () => {
      const compiled = compile("X eq 'absent'");
      assert.deepEqual(compiled.candidates, { kind: "rows", rows: new Uint32Array(0) });
      assert.equal(countMatches(compiled), 0);
    });

    it("matches every row when every value matches", () => {
      const compiled = compile("X ne 'absent'");
      assert.equal(compiled.candidates, undefined);
      assert.equal(countMatches(compiled), length);
    });
  });

  describe("kernels", () => {
    const table = tableOf(100, [["Id", { kind: "rownumber", offset: 0 }]]);
    const schema: FilterSchema = new Map([["Id", { type: "integer" }]]);
    const filters = [
      "Id gt 10",
      "Id in (3, 50, 70)",
      "Id gt 10 or Id eq 2",
      "not (Id lt 5)",
      "Id ge 0 and Id in (1, 2)",
    ];

    for (const text of filters) {
      it(`returns no rows for an empty batch: ${text}`, () => {
        const compiled = compileText(text, schema, table);
        const out = new Uint32Array(8);
        assert.equal(compiled.kernel(null, 20, 0, out), 0);
        assert.equal(compiled.kernel(new Uint32Array(0), 0, 0, out), 0);
      });

      it(`filters a given selection in place: ${text}`, () => {
        const bound = bindFilter(parseFilter(text), schema);
        const compiled = compileFilter(bound, table);
        const sel = Uint32Array.of(0, 2, 3, 11, 50, 51, 70, 99);
        const expected = [...sel].filter((r) => evaluateFilter(bound, () => r));
        const n = compiled.kernel(sel, 0, sel.length, sel);
        assert.deepEqual([...sel.subarray(0, n)], expected);
      });
    }
  });

  describe("columns.ts", () => {
    it("holds types only, so it loads with no runtime exports", async () => {
      assert.deepEqual(Object.keys(await import("../../lib/columnar/columns.ts")), []);
    });
  });

  describe("constants", () => {
    const table = tableOf(10, [["V", { kind: "values", values: [1, 2, 3] }]]);

    it("matches every row without a filter", () => {
      const compiled = compileFilter(undefined, table);
      assert.equal(compiled.candidates, undefined);
      assert.equal(compiled.length, 10);
      assert.deepEqual(allRows(compiled), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    });

    it("matches every row for a true constant", () => {
      assert.equal(countMatches(compileFilter({ kind: "constant", value: true }, table)), 10);
    });

    it("matches no row for a false constant, without scanning", () => {
      const compiled = compileFilter({ kind: "constant", value: false }, table);
      assert.equal(compiled.candidates?.kind, "rows");
      assert.equal(countMatches(compiled), 0);
    });

    it("evaluates a condition on literals only once", () => {
      const schema: FilterSchema = new Map([["V", { type: "integer" }]]);
      assert.equal(countMatches(compileText("contains('abc', 'b')", schema, table)), 10);
      assert.equal(countMatches(compileText("length('abc') eq 2", schema, table)), 0);
    });

    it("reads missing plain values as null", () => {
      const schema: FilterSchema = new Map([["V", { type: "integer" }]]);
      assert.deepEqual(allRows(compileText("V eq null", schema, table)), [3, 4, 5, 6, 7, 8, 9]);
    });
  });
});

function allRows(compiled: CompiledFilter): number[] {
  const cursor = new MatchCursor(compiled);
  const out = new Uint32Array(compiled.length + 1);
  return [...out.subarray(0, cursor.next(out))];
}
