import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  type Column,
  type ColumnTable,
  compileFilter,
  countMatches,
} from "../../lib/columnar/mod.ts";
import {
  bindFilter,
  type BoundFilter,
  evaluateFilter,
  type FilterFieldType,
  type FilterNode,
  type FilterSchema,
  FilterSyntaxError,
  ODataError,
  parseFilter,
  type Scalar,
} from "../../lib/odata/mod.ts";
import { createPrng, type Prng } from "../_helpers/prng.ts";

const SEED = 0xf022a001;
const ROUNDS = 110_000;

interface Field {
  readonly name: string;
  readonly type: FilterFieldType;
  readonly multi?: boolean;
}

const FIELDS: readonly Field[] = [
  { name: "Id", type: "integer" },
  { name: "ID", type: "string" },
  { name: "ResultValue", type: "number" },
  { name: "ActivityStartYear", type: "integer" },
  { name: "ActivityStartDate", type: "date" },
  { name: "CreateTimestamp", type: "datetime" },
  { name: "DatasetId", type: "guid" },
  { name: "CharacteristicName", type: "string" },
  { name: "DOI", type: "string" },
  { name: "Public", type: "boolean" },
  { name: "RegionId", type: "string", multi: true },
];

const SCHEMA: FilterSchema = new Map(
  FIELDS.map((f) => [f.name, { type: f.type, multiValued: f.multi === true }] as const),
);

/** Two rows of plain values to evaluate accepted filters on. */
const ROWS: readonly Readonly<Record<string, Scalar | readonly Scalar[]>>[] = [
  {
    Id: 7,
    ID: "7",
    ResultValue: 7.5,
    ActivityStartYear: 2020,
    ActivityStartDate: "2020-03-23",
    CreateTimestamp: Date.UTC(2020, 2, 23, 10),
    DatasetId: "0a1b2c3d-0000-4000-8000-00000000000f",
    CharacteristicName: "Temperature, water",
    DOI: "10.25976/abcd-ef12",
    Public: true,
    RegionId: ["hub.atlantic", "admin.2.ca"],
  },
  { RegionId: [] },
];

/** A small table holding the same two rows, to compile accepted filters against. */
const TABLE: ColumnTable = (() => {
  const columns = new Map<string, Column>();
  for (const f of FIELDS) {
    columns.set(f.name, { kind: "values", values: ROWS.map((row) => row[f.name] ?? null) });
  }
  return { length: ROWS.length, column: (name) => columns.get(name) };
})();

const OPS = ["eq", "ne", "lt", "le", "gt", "ge", "lte", "gte"];
const FUNCTIONS = [
  "contains",
  "startswith",
  "endswith",
  "tolower",
  "toupper",
  "trim",
  "length",
  "indexof",
  "substring",
  "concat",
  "year",
  "month",
  "day",
  "round",
  "floor",
  "ceiling",
];

/** Builds mostly valid filters from a small grammar over the schema. */
function validFilter(p: Prng, depth: number): string {
  const r = p.next();
  if (depth <= 0 || r < 0.35) return leaf(p);
  if (r < 0.45) return `not (${validFilter(p, depth - 1)})`;
  const op = r < 0.75 ? " and " : " or ";
  const parts = Array.from({ length: 2 + p.int(3) }, () => validFilter(p, depth - 1));
  return parts.map((part) => (p.int(3) === 0 ? part : `(${part})`)).join(op);
}

function leaf(p: Prng): string {
  const field = p.pick(FIELDS);
  const op = p.pick(OPS);
  switch (p.int(8)) {
    case 0:
      return `${field.name} ${op} null`;
    case 1: {
      const values = Array.from({ length: 1 + p.int(3) }, () => literal(p, field.type));
      return `${field.name} in (${values.join(", ")})`;
    }
    case 2:
      return `${literal(p, field.type)} ${op} ${field.name}`;
    case 3:
      return call(p, field.name, field.type) ?? `${field.name} ${op} ${literal(p, field.type)}`;
    case 4:
      return p.pick(["true", "false", "1 eq 1", "'a' lt 'b'", "Public", "not Public"]);
    default:
      return `${field.name} ${op} ${literal(p, field.type)}`;
  }
}

function call(p: Prng, name: string, type: FilterFieldType): string | undefined {
  const op = p.pick(OPS);
  switch (type) {
    case "string":
    case "guid":
      return p.pick([
        `contains(${name}, 'a')`,
        `startswith(${name}, '10.')`,
        `endswith(${name}, 'ef12')`,
        `tolower(${name}) ${op} 'temperature, water'`,
        `toupper(${name}) eq 'X'`,
        `trim(${name}) ne ''`,
        `length(${name}) ${op} 5`,
        `indexof(${name}, ',') ${op} 11`,
        `substring(${name}, 1) eq 'x'`,
        `substring(${name}, 1, '2') eq 'x'`,
        `concat(${name}, '!') eq 'x!'`,
      ]);
    case "number":
    case "integer":
      return `${p.pick(["round", "floor", "ceiling"])}(${name}) ${op} ${p.int(10)}`;
    case "date":
    case "datetime":
      return `${p.pick(["year", "month", "day"])}(${name}) ${op} ${p.int(2030)}`;
    case "boolean":
      return undefined;
  }
}

function literal(p: Prng, type: FilterFieldType): string {
  switch (type) {
    case "string":
      return p.pick([
        "'pH'",
        "'Temperature, water'",
        "'2,2''-Dichlorobiphenyl'",
        "''",
        "'hub.atlantic'",
        "'Rivière'",
      ]);
    case "number":
    case "integer":
      return p.pick(["7", "-80", "'49'", "'-102.01'", "7.5", "1e3", "-0.5e-2", "' 12 '", "2015"]);
    case "date":
      return p.pick(["2020-03-23", "'2020-03-23'", "2020-02-29", "'2024-06-01'"]);
    case "datetime":
      return p.pick([
        "2020-03-23",
        "'2020-03-25'",
        "2020-03-23T10:00:00Z",
        "2020-03-23T10:00:00.5+05:30",
        "'2020-03-23T10:00:00'",
      ]);
    case "guid":
      return p.pick([
        "0A1B2C3D-0000-4000-8000-00000000000F",
        "'0a1b2c3d-0000-4000-8000-00000000000f'",
      ]);
    case "boolean":
      return p.pick(["true", "false"]);
  }
}

const NOISE = [
  ..."()',\"-.:; \t\r\n0123456789azAZ_$/*+=&%#@!?[]{}<>\\|^~`",
  "é",
  "🌊",
  "\u0000",
  "\u202e",
  "\ud800",
  "\udfff",
  "\ufeff",
  "ß",
  "İ",
];
const TOKENS = [
  ..."and or not in eq ne lt gte AND Or EQ add has mod ( ) , '' ' null true False".split(" "),
  ..."Id id ID Foo contains( length( year( Contains( substring( round(".split(" "),
  ..."2020-02-30 2020-13-01 2021-02-29 12ab 1e999 - --1 1. .5 2020-03-23T10:00".split(" "),
  "0A1B2C3D-0000-4000-8000-00000000000F",
  "2020-03-23T25:00:00Z",
  "2020-03-23T10:00",
  "substring(",
  "round(",
];

/** Damages a filter in one of several ways. */
function mutate(p: Prng, text: string, other: string): string {
  const at = p.int(text.length + 1);
  switch (p.int(13)) {
    case 0:
      return text.slice(0, at) + text.slice(at + 1 + p.int(3));
    case 1:
      return text.slice(0, at) + p.pick(NOISE) + text.slice(at);
    case 2:
      return text.slice(0, at) + p.pick(NOISE) + text.slice(at + 1);
    case 3: {
      const words = text.split(" ");
      words.splice(p.int(words.length), 1);
      return words.join(" ");
    }
    case 4: {
      const words = text.split(" ");
      words.splice(p.int(words.length + 1), 0, p.pick(TOKENS));
      return words.join(" ");
    }
    case 5: {
      const words = text.split(" ");
      words[p.int(words.length)] = p.pick(TOKENS);
      return words.join(" ");
    }
    case 6:
      return text.slice(0, at) + other.slice(p.int(other.length + 1));
    case 7: {
      const n = 1 + p.int(70);
      const close = p.int(2) === 0 ? n : p.int(n + 1);
      return `${"(".repeat(n)}${text}${")".repeat(close)}`;
    }
    case 8: {
      const quote = p.pick(["'", "''", '"', "'''", `${p.pick(FUNCTIONS)}(`]);
      return text.slice(0, at) + quote + text.slice(at);
    }
    case 9: {
      let out = text;
      for (let k = 1 + p.int(5); k > 0; k--) {
        const i = p.int(out.length + 1);
        out = out.slice(0, i) + String.fromCodePoint(p.int(0x11_0000 - 0x800)) + out.slice(i);
      }
      return out;
    }
    case 10:
      return text.replace(p.pick([/ and /, / or /, / eq /, /\(/]), (m) => m.toUpperCase());
    case 11: {
      const words = text.split(" ");
      const i = p.int(words.length);
      const j = p.int(words.length);
      [words[i], words[j]] = [words[j]!, words[i]!];
      return words.join(" ");
    }
    default:
      return text.slice(0, at) + text.slice(at).split("").reverse().join("");
  }
}

/** Very long or very deep inputs, some over the limits. */
function huge(p: Prng): string {
  switch (p.int(6)) {
    case 0: {
      const leaves = Array.from({ length: 200 + p.int(3000) }, () => leaf(p));
      return leaves.join(p.pick([" and ", " or "]));
    }
    case 1:
      return `${"not ".repeat(p.int(5000))}Public`;
    case 2: {
      const n = p.int(8000);
      return `${"(".repeat(n)}Public${")".repeat(n)}`;
    }
    case 3:
      return `DOI eq '${"x".repeat(p.int(20_000))}'`;
    case 4:
      return `${"trim(".repeat(p.int(3000))}DOI${")".repeat(p.int(3000))} eq 'x'`;
    default:
      return `Id in (${Array.from({ length: p.int(5000) }, (_, i) => i).join(",")})`;
  }
}

/** Checks that every span lies inside the text. */
function checkSpans(node: FilterNode, length: number): void {
  assert.ok(node.span.start >= 0 && node.span.start <= node.span.end && node.span.end <= length);
  switch (node.kind) {
    case "call":
      for (const arg of node.args) checkSpans(arg, length);
      break;
    case "compare":
      checkSpans(node.left, length);
      checkSpans(node.right, length);
      break;
    case "in":
      checkSpans(node.operand, length);
      for (const value of node.values) checkSpans(value, length);
      break;
    case "and":
    case "or":
      for (const operand of node.operands) checkSpans(operand, length);
      break;
    case "not":
      checkSpans(node.operand, length);
      break;
    case "literal":
    case "member":
      break;
  }
}

function describeInput(text: string): string {
  return JSON.stringify(text.length > 300 ? `${text.slice(0, 300)}…(${text.length} chars)` : text);
}

describe("parseFilter() and bindFilter() under fuzzing", () => {
  it(`only throw FilterSyntaxError or ODataError on ${ROUNDS} filters`, (t) => {
    t.diagnostic(`seed ${SEED}`);
    const p = createPrng(SEED);
    let accepted = 0;
    let syntax = 0;
    let semantic = 0;
    let previous = "Public";
    for (let round = 0; round < ROUNDS; round++) {
      const valid = validFilter(p, 1 + p.int(3));
      let text: string;
      const r = p.next();
      if (r < 0.4) text = valid;
      else if (r < 0.995) {
        text = valid;
        const times = 1 + (p.int(4) === 0 ? p.int(4) : 0);
        for (let k = 0; k < times; k++) text = mutate(p, text, previous);
      } else text = huge(p);
      previous = valid;

      let bound: BoundFilter;
      try {
        const ast = parseFilter(text);
        checkSpans(ast, text.length);
        bound = bindFilter(ast, SCHEMA);
      } catch (error) {
        if (error instanceof FilterSyntaxError) {
          assert.equal(error.code, "ERR_ODATA_SYNTAX");
          const { position } = error;
          assert.ok(
            Number.isInteger(position) && position >= 0 && position <= text.length,
            `seed ${SEED}, round ${round}: position ${position} outside ${describeInput(text)}`,
          );
          syntax++;
          continue;
        }
        if (error instanceof ODataError) {
          assert.match(error.code, /^ERR_ODATA_/);
          semantic++;
          continue;
        }
        assert.fail(`seed ${SEED}, round ${round}: ${describeInput(text)} threw ${String(error)}`);
      }
      accepted++;
      try {
        for (const row of ROWS) evaluateFilter(bound, (name) => row[name] ?? null);
        countMatches(compileFilter(bound, TABLE));
      } catch (error) {
        if (error instanceof ODataError && error.code === "ERR_ODATA_UNSUPPORTED") continue;
        const input = describeInput(text);
        assert.fail(`seed ${SEED}, round ${round}: ${input} failed after binding: ${error}`);
      }
    }
    t.diagnostic(`${accepted} accepted, ${syntax} syntax errors, ${semantic} binding errors`);
    assert.ok(accepted > ROUNDS * 0.3, `only ${accepted} accepted`);
    assert.ok(syntax > ROUNDS * 0.2, `only ${syntax} syntax errors`);
    assert.ok(semantic > ROUNDS * 0.02, `only ${semantic} binding errors`);
  });

  it("agrees between the evaluator and compiled kernels on accepted filters", (t) => {
    const seed = SEED + 1;
    t.diagnostic(`seed ${seed}`);
    const p = createPrng(seed);
    for (let round = 0; round < 5000; round++) {
      const text = validFilter(p, 1 + p.int(3));
      const bound = bindFilter(parseFilter(text), SCHEMA);
      const expected = ROWS.filter((row) => evaluateFilter(bound, (name) => row[name] ?? null));
      assert.equal(
        countMatches(compileFilter(bound, TABLE)),
        expected.length,
        `seed ${seed}, round ${round}: ${text}`,
      );
    }
  });
});
