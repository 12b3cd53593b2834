import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  bindFilter,
  evaluateFilter,
  type FilterSchema,
  parseFilter,
  type Scalar,
} from "../../lib/odata/mod.ts";
import { compareScalars, evaluateValue } from "../../lib/odata/evaluate.ts";

const SCHEMA: FilterSchema = new Map([
  ["Name", { type: "string" }],
  ["Note", { type: "string" }],
  ["Value", { type: "number" }],
  ["Count", { type: "integer" }],
  ["Day", { type: "date" }],
  ["Stamp", { type: "datetime" }],
  ["Uid", { type: "guid" }],
  ["Flag", { type: "boolean" }],
  ["RegionId", { type: "string", multiValued: true }],
  ["Depths", { type: "number", multiValued: true }],
  ["Other", { type: "string", multiValued: true }],
]);

type Row = Readonly<Record<string, Scalar | readonly Scalar[]>>;

const ROW: Row = {
  Name: " Dissolved Oxygen ",
  Note: null,
  Value: -2.5,
  Count: 7,
  Day: "2020-03-23",
  Stamp: Date.UTC(2020, 11, 31, 23, 30),
  Uid: "0a1b2c3d-0000-4000-8000-00000000000f",
  Flag: true,
  RegionId: ["hub.atlantic", "admin.2.ca"],
  Depths: [1, 5],
  Other: ["x", "admin.2.ca"],
};

function evaluate(text: string, row: Row = ROW): boolean {
  return evaluateFilter(bindFilter(parseFilter(text), SCHEMA), (name) => row[name] ?? null);
}

interface Case {
  readonly input: string;
  readonly expected: boolean;
}

function check(cases: readonly Case[], row: Row = ROW): void {
  for (const c of cases) {
    it(`evaluates ${c.input} to ${c.expected}`, () => {
      assert.equal(evaluate(c.input, row), c.expected);
    });
  }
}

describe("evaluateFilter()", () => {
  describe("null rules", () => {
    check([
      { input: "Note eq null", expected: true },
      { input: "Note ne null", expected: false },
      { input: "Name eq null", expected: false },
      { input: "Name ne null", expected: true },
      { input: "Note eq 'x'", expected: false },
      { input: "Note ne 'x'", expected: true },
      { input: "Note lt 'x'", expected: false },
      { input: "Note le 'x'", expected: false },
      { input: "Note gt 'x'", expected: false },
      { input: "Note ge 'x'", expected: false },
      { input: "Value lt null", expected: false },
      { input: "Value ge null", expected: false },
      { input: "not (Note lt 'x')", expected: true },
      { input: "contains(Note, 'x')", expected: false },
      { input: "not contains(Note, 'x')", expected: true },
      { input: "tolower(Note) eq null", expected: true },
      { input: "length(Note) eq null", expected: true },
      { input: "length(Note) gt 0", expected: false },
      { input: "contains(Name, null)", expected: false },
      { input: "concat(Name, null) eq null", expected: true },
      { input: "substring(Name, null) eq null", expected: true },
      { input: "Note in ('a', null)", expected: true },
      { input: "Note in ('a', 'b')", expected: false },
      { input: "Name in (null)", expected: false },
    ]);

    it("gives null for a function of null", () => {
      const bound = bindFilter(parseFilter("toupper(Note) eq 'x'"), SCHEMA);
      assert.equal(bound.kind, "compare");
      if (bound.kind !== "compare") return;
      assert.equal(evaluateValue(bound.left, () => null), null);
    });
  });

  describe("comparisons", () => {
    check([
      { input: "Value eq -2.5", expected: true },
      { input: "Value eq '-2.5'", expected: true },
      { input: "Value lt -2", expected: true },
      { input: "Value gt -2.5", expected: false },
      { input: "Value ge -2.5", expected: true },
      { input: "Value le -3", expected: false },
      { input: "Count ne 7", expected: false },
      { input: "Day gt '2020-03-22'", expected: true },
      { input: "Day lt 2020-03-23", expected: false },
      { input: "Day le 2020-03-23", expected: true },
      { input: "Stamp gt 2020-12-31", expected: true },
      { input: "Stamp lt 2021-01-01T00:00:00+01:00", expected: false },
      { input: "Stamp lt 2021-01-01T00:00:00-01:00", expected: true },
      { input: "Uid eq 0A1B2C3D-0000-4000-8000-00000000000F", expected: true },
      { input: "Flag", expected: true },
      { input: "Flag eq false", expected: false },
      { input: "not Flag", expected: false },
      { input: "Name gt 'A'", expected: false },
      { input: "Name lt 'A'", expected: true },
      { input: "Count gt Value", expected: true },
      { input: "Count in (1, '7')", expected: true },
    ]);

    it("treats a missing boolean as not true", () => {
      assert.equal(evaluate("Flag", { ...ROW, Flag: null }), false);
      assert.equal(evaluate("not Flag", { ...ROW, Flag: null }), true);
    });
  });

  describe("logical operators", () => {
    check([
      { input: "Flag and Count eq 7", expected: true },
      { input: "Flag and Count eq 8", expected: false },
      { input: "Count eq 8 or Flag", expected: true },
      { input: "Count eq 8 or Count eq 9", expected: false },
      { input: "not (Count eq 8 or Count eq 9)", expected: true },
      { input: "true and false", expected: false },
      { input: "1 eq 1", expected: true },
    ]);
  });

  describe("string functions", () => {
    check([
      { input: "contains(Name, 'Oxygen')", expected: true },
      { input: "contains(Name, 'oxygen')", expected: false },
      { input: "contains(Name, '')", expected: true },
      { input: "startswith(Name, ' Dis')", expected: true },
      { input: "startswith(Name, 'Dis')", expected: false },
      { input: "endswith(Name, 'gen ')", expected: true },
      { input: "endswith(Name, 'gen')", expected: false },
      { input: "tolower(Name) eq ' dissolved oxygen '", expected: true },
      { input: "toupper(Name) eq ' DISSOLVED OXYGEN '", expected: true },
      { input: "trim(Name) eq 'Dissolved Oxygen'", expected: true },
      { input: "length(Name) eq 18", expected: true },
      { input: "length(trim(Name)) eq 16", expected: true },
      { input: "indexof(Name, 'Oxygen') eq 11", expected: true },
      { input: "indexof(Name, 'nitrogen') eq -1", expected: true },
      { input: "substring(Name, 1) eq 'Dissolved Oxygen '", expected: true },
      { input: "substring(Name, 1, 9) eq 'Dissolved'", expected: true },
      { input: "substring(Name, 100) eq ''", expected: true },
      { input: "substring(Name, -3, 4) eq ' Dis'", expected: true },
      { input: "substring(Name, 1, -2) eq ''", expected: true },
      { input: "concat(trim(Name), ' (DO)') eq 'Dissolved Oxygen (DO)'", expected: true },
      { input: "contains(tolower(Name), 'oxygen')", expected: true },
      { input: "startswith(Uid, '0a1b')", expected: true },
      { input: "contains('abc', 'b')", expected: true },
    ]);
  });

  describe("date parts", () => {
    check([
      { input: "year(Day) eq 2020", expected: true },
      { input: "month(Day) eq 3", expected: true },
      { input: "day(Day) eq 23", expected: true },
      { input: "year(Stamp) eq 2020", expected: true },
      { input: "month(Stamp) eq 12", expected: true },
      { input: "day(Stamp) eq 31", expected: true },
      { input: "year(2021-01-01T00:30:00+01:00) eq 2020", expected: true },
      { input: "month(2020-02-29) eq 2", expected: true },
    ]);
  });

  describe("arithmetic functions", () => {
    const cases = [
      { value: 2.5, round: 3, floor: 2, ceiling: 3 },
      { value: -2.5, round: -3, floor: -3, ceiling: -2 },
      { value: 2.4, round: 2, floor: 2, ceiling: 3 },
      { value: -2.4, round: -2, floor: -3, ceiling: -2 },
      { value: 0.5, round: 1, floor: 0, ceiling: 1 },
      { value: -0.5, round: -1, floor: -1, ceiling: -0 },
      { value: 7, round: 7, floor: 7, ceiling: 7 },
    ] as const;
    for (const c of cases) {
      it(`rounds ${c.value} half away from zero to ${c.round}`, () => {
        assert.equal(evaluate(`round(Value) eq ${c.round}`, { Value: c.value }), true);
      });
      it(`floors ${c.value} to ${c.floor} and ceils it to ${c.ceiling}`, () => {
        assert.equal(evaluate(`floor(Value) eq ${c.floor}`, { Value: c.value }), true);
        assert.equal(evaluate(`ceiling(Value) eq ${c.ceiling}`, { Value: c.value }), true);
      });
    }

    it("rounds an integer field", () => {
      assert.equal(evaluate("round(Count) eq 7"), true);
    });

    it("gives null for round() of null", () => {
      assert.equal(evaluate("round(Value) eq null", { Value: null }), true);
      assert.equal(evaluate("floor(Value) lt 0", { Value: null }), false);
    });
  });

  describe("multi-valued fields", () => {
    check([
      { input: "RegionId eq 'hub.atlantic'", expected: true },
      { input: "RegionId eq 'admin.2.ca'", expected: true },
      { input: "RegionId eq 'hub.pacific'", expected: false },
      { input: "not (RegionId eq 'hub.atlantic')", expected: false },
      { input: "not (RegionId eq 'hub.pacific')", expected: true },
      { input: "RegionId ne 'hub.atlantic'", expected: true },
      { input: "RegionId in ('hub.pacific', 'admin.2.ca')", expected: true },
      { input: "startswith(RegionId, 'hub.')", expected: true },
      { input: "endswith(RegionId, '.us')", expected: false },
      { input: "RegionId eq null", expected: false },
      { input: "Depths gt 4", expected: true },
      { input: "Depths gt 4 and Depths lt 2", expected: true },
      { input: "Depths gt 5 or Depths lt 1", expected: false },
      { input: "RegionId eq Other", expected: true },
    ]);

    it("matches nothing when the list is empty", () => {
      const row = { RegionId: [] };
      assert.equal(evaluate("RegionId eq 'hub.atlantic'", row), false);
      assert.equal(evaluate("RegionId ne 'hub.atlantic'", row), false);
      assert.equal(evaluate("RegionId eq null", row), false);
      assert.equal(evaluate("not (RegionId eq 'hub.atlantic')", row), true);
    });

    it("treats a null in place of the list as one null value", () => {
      assert.equal(evaluate("RegionId eq null", { RegionId: null }), true);
      assert.equal(evaluate("RegionId eq 'x'", { RegionId: null }), false);
    });

    it("treats a single value in place of the list as a list of one", () => {
      assert.equal(evaluate("RegionId eq 'x'", { RegionId: "x" }), true);
    });

    it("finds a null inside the list", () => {
      assert.equal(evaluate("RegionId eq null", { RegionId: ["a", null] }), true);
    });

    it("pairs the values of two multi-valued fields", () => {
      const row = { RegionId: ["a", "b"], Other: ["c", "d"] };
      assert.equal(evaluate("RegionId eq Other", row), false);
      assert.equal(evaluate("RegionId ne Other", row), true);
      assert.equal(evaluate("RegionId lt Other", row), true);
    });

    it("evaluates a long list without running out of stack", () => {
      const list = Array.from({ length: 100_000 }, (_, i) => `r${i}`);
      assert.equal(evaluate("RegionId eq 'r99999'", { RegionId: list }), true);
    });
  });

  describe("'in'", () => {
    check([
      { input: "Count in (7)", expected: true },
      { input: "Count in (6, 8)", expected: false },
      { input: "Name in (' Dissolved Oxygen ', 'pH')", expected: true },
    ]);

    it("matches null only with null in the list", () => {
      assert.equal(evaluate("Count in (null)", { Count: null }), true);
      assert.equal(evaluate("Count in (1, 2)", { Count: null }), false);
      assert.equal(evaluate("not (Count in (1, 2))", { Count: null }), true);
    });
  });
});

describe("evaluateValue()", () => {
  it("gives null for a function it does not know", () => {
    const value = evaluateValue(
      { kind: "call", name: "nope", args: [], type: "string", span: { start: 0, end: 6 } },
      () => null,
    );
    assert.equal(value, null);
  });

  it("reads a field through the getter", () => {
    const value = evaluateValue(
      {
        kind: "field",
        name: "Count",
        type: "integer",
        multiValued: false,
        span: { start: 0, end: 5 },
      },
      (name) => (name === "Count" ? 3 : null),
    );
    assert.equal(value, 3);
  });
});

describe("compareScalars()", () => {
  const cases = [
    { op: "eq", a: null, b: null, expected: true },
    { op: "ne", a: null, b: null, expected: false },
    { op: "eq", a: 1, b: null, expected: false },
    { op: "ne", a: 1, b: null, expected: true },
    { op: "lt", a: null, b: 1, expected: false },
    { op: "le", a: null, b: null, expected: false },
    { op: "gt", a: 1, b: null, expected: false },
    { op: "ge", a: null, b: null, expected: false },
    { op: "lt", a: 1, b: 2, expected: true },
    { op: "le", a: 2, b: 2, expected: true },
    { op: "gt", a: "b", b: "a", expected: true },
    { op: "ge", a: "a", b: "b", expected: false },
  ] as const;
  for (const c of cases) {
    it(`gives ${c.expected} for ${String(c.a)} ${c.op} ${String(c.b)}`, () => {
      assert.equal(compareScalars(c.op, c.a, c.b), c.expected);
    });
  }
});
