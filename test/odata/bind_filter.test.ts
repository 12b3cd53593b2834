import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  bindFilter,
  type BoundFilter,
  type FilterFieldType,
  type FilterNode,
  type FilterSchema,
  ODataError,
  parseFilter,
} from "../../lib/odata/mod.ts";

const SCHEMA: FilterSchema = new Map([
  ["Id", { type: "integer" }],
  ["ID", { type: "string" }],
  ["Latitude", { type: "number" }],
  ["Longitude", { type: "number" }],
  ["ActivityStartYear", { type: "integer" }],
  ["ActivityStartDate", { type: "date" }],
  ["CreateTimestamp", { type: "datetime" }],
  ["DatasetId", { type: "guid" }],
  ["CharacteristicName", { type: "string" }],
  ["DOI", { type: "string" }],
  ["Public", { type: "boolean" }],
  ["RegionId", { type: "string", multiValued: true }],
]);

function bind(text: string): BoundFilter {
  return bindFilter(parseFilter(text), SCHEMA);
}

/** The bound filter without spans, as plain data. */
function plain(filter: BoundFilter): unknown {
  return JSON.parse(
    JSON.stringify(filter, (key, value: unknown) => (key === "span" ? undefined : value)),
  );
}

function field(name: string, type: FilterFieldType, multiValued = false): unknown {
  return { kind: "field", name, type, multiValued };
}

/** The shape of a bound comparison, as plain data. */
interface Compare {
  readonly op: string;
  readonly left: { readonly name: string; readonly type: string; readonly args: unknown[] };
  readonly right: { readonly args: unknown[] };
}

function literal(type: FilterFieldType | "null", value: string | number | boolean | null): unknown {
  return { kind: "literal", type, value };
}

/** The right-hand literal of a bound comparison. */
function rightOf(text: string): unknown {
  const filter = bind(text);
  assert.equal(filter.kind, "compare");
  return (plain(filter) as { right: unknown }).right;
}

describe("bindFilter()", () => {
  describe("literal coercion", () => {
    const accepted = [
      {
        name: "keeps a number for a number field",
        input: "Latitude gt 7",
        expected: literal("number", 7),
      },
      {
        name: "converts a quoted number for a number field",
        input: "Latitude gt '7'",
        expected: literal("number", 7),
      },
      {
        name: "converts a quoted negative decimal for a number field",
        input: "Longitude gt '-102.01'",
        expected: literal("number", -102.01),
      },
      {
        name: "converts a quoted exponent for a number field",
        input: "Latitude gt '1e3'",
        expected: literal("number", 1000),
      },
      {
        name: "trims a quoted number",
        input: "Latitude gt ' 49 '",
        expected: literal("number", 49),
      },
      {
        name: "converts a quoted year for an integer field",
        input: "ActivityStartYear lt '2015'",
        expected: literal("integer", 2015),
      },
      {
        name: "keeps a number for an integer field",
        input: "Id eq 3271776",
        expected: literal("integer", 3271776),
      },
      {
        name: "converts a quoted id for an integer field",
        input: "Id eq '3271776'",
        expected: literal("integer", 3271776),
      },
      {
        name: "keeps an unquoted date for a date field",
        input: "ActivityStartDate ge 2024-06-01",
        expected: literal("date", "2024-06-01"),
      },
      {
        name: "converts a quoted date for a date field",
        input: "ActivityStartDate eq '2020-03-23'",
        expected: literal("date", "2020-03-23"),
      },
      {
        name: "reads an unquoted date as midnight UTC for a date-time field",
        input: "CreateTimestamp gt 2020-03-23",
        expected: literal("datetime", Date.UTC(2020, 2, 23)),
      },
      {
        name: "reads a quoted date as midnight UTC for a date-time field",
        input: "CreateTimestamp gt '2020-03-23'",
        expected: literal("datetime", Date.UTC(2020, 2, 23)),
      },
      {
        name: "reads a date-time in UTC for a date-time field",
        input: "CreateTimestamp lt 2020-03-25T10:30:00Z",
        expected: literal("datetime", Date.UTC(2020, 2, 25, 10, 30)),
      },
      {
        name: "reads a date-time with an offset for a date-time field",
        input: "CreateTimestamp lt 2020-03-23T10:00:00+02:00",
        expected: literal("datetime", Date.UTC(2020, 2, 23, 8)),
      },
      {
        name: "reads a quoted date-time with an offset for a date-time field",
        input: "CreateTimestamp lt '2020-03-23T10:00:00-05:00'",
        expected: literal("datetime", Date.UTC(2020, 2, 23, 15)),
      },
      {
        name: "reads a quoted date-time without a zone as UTC",
        input: "CreateTimestamp lt '2020-03-23T10:00:00.250'",
        expected: literal("datetime", Date.UTC(2020, 2, 23, 10, 0, 0, 250)),
      },
      {
        name: "lower-cases an unquoted GUID for a guid field",
        input: "DatasetId eq 0A1B2C3D-0000-4000-8000-00000000000F",
        expected: literal("guid", "0a1b2c3d-0000-4000-8000-00000000000f"),
      },
      {
        name: "lower-cases a quoted UUID for a guid field",
        input: "DatasetId eq '0A1B2C3D-0000-4000-8000-00000000000F'",
        expected: literal("guid", "0a1b2c3d-0000-4000-8000-00000000000f"),
      },
      {
        name:
          "converts a date-time for a date field to its calendar date in UTC, as DataStream answers it",
        input: "ActivityStartDate ge 2015-01-01T00:00:00Z",
        expected: literal("date", "2015-01-01"),
      },
      {
        name: "converts a date-time with an offset, and a quoted one, to the UTC date",
        input: "ActivityStartDate lt '2015-01-01T23:30:00-05:00'",
        expected: literal("date", "2015-01-02"),
      },
      {
        name: "keeps a string for a string field",
        input: "CharacteristicName eq 'pH'",
        expected: literal("string", "pH"),
      },
      {
        name: "keeps a quoted number as text for a string field",
        input: "ID eq '3271776'",
        expected: literal("string", "3271776"),
      },
      {
        name: "keeps true for a boolean field",
        input: "Public eq true",
        expected: literal("boolean", true),
      },
      {
        name: "keeps false for a boolean field",
        input: "Public ne false",
        expected: literal("boolean", false),
      },
      {
        name: "keeps null for any field",
        input: "Latitude eq null",
        expected: literal("null", null),
      },
    ] as const;
    for (const c of accepted) {
      it(c.name, () => assert.deepEqual(rightOf(c.input), c.expected));
    }

    const refused = [
      {
        name: "refuses text for a number field",
        input: "Latitude gt 'abc'",
        target: "Latitude",
        position: 12,
      },
      {
        name: "refuses an empty string for a number field",
        input: "Latitude gt ''",
        target: "Latitude",
        position: 12,
      },
      {
        name: "refuses a date for a number field",
        input: "Latitude gt 2020-01-01",
        target: "Latitude",
        position: 12,
      },
      { name: "refuses true for an integer field", input: "Id eq true", target: "Id", position: 6 },
      {
        name: "refuses an impossible quoted date",
        input: "ActivityStartDate eq '2020-02-30'",
        target: "ActivityStartDate",
        position: 21,
      },
      {
        name: "refuses a number for a date field",
        input: "ActivityStartDate eq 20200323",
        target: "ActivityStartDate",
        position: 21,
      },
      {
        name: "refuses text that is no date or date-time for a date field",
        input: "ActivityStartDate eq 'soon'",
        target: "ActivityStartDate",
        position: 21,
      },
      {
        name: "refuses text for a date-time field",
        input: "CreateTimestamp gt 'soon'",
        target: "CreateTimestamp",
        position: 19,
      },
      {
        name: "refuses an impossible quoted date-time",
        input: "CreateTimestamp gt '2020-02-30T10:00:00Z'",
        target: "CreateTimestamp",
        position: 19,
      },
      {
        name: "refuses a quoted date-time with hour 25",
        input: "CreateTimestamp gt '2020-03-23T25:00:00Z'",
        target: "CreateTimestamp",
        position: 19,
      },
      {
        name: "refuses a number for a date-time field",
        input: "CreateTimestamp gt 2020",
        target: "CreateTimestamp",
        position: 19,
      },
      {
        name: "refuses a malformed UUID",
        input: "DatasetId eq '0a1b2c3d-0000'",
        target: "DatasetId",
        position: 13,
      },
      {
        name: "refuses a number for a guid field",
        input: "DatasetId eq 7",
        target: "DatasetId",
        position: 13,
      },
      {
        name: "refuses an unquoted number for a string field",
        input: "CharacteristicName eq 7",
        target: "CharacteristicName",
        position: 22,
      },
      {
        name: "refuses an unquoted date for a string field",
        input: "DOI eq 2020-01-01",
        target: "DOI",
        position: 7,
      },
      {
        name: "refuses a quoted boolean for a boolean field",
        input: "Public eq 'true'",
        target: "Public",
        position: 10,
      },
      {
        name: "refuses a number for a boolean field",
        input: "Public eq 1",
        target: "Public",
        position: 10,
      },
      {
        name: "refuses a bad value in an 'in' list",
        input: "Id in (1, 'x')",
        target: "Id",
        position: 10,
      },
    ] as const;
    for (const c of refused) {
      it(c.name, () => {
        assert.throws(() => bind(c.input), {
          name: "ODataError",
          code: "ERR_ODATA_TYPE",
          target: c.target,
          position: c.position,
        });
      });
    }

    it("converts every value of an 'in' list", () => {
      assert.deepEqual(plain(bind("Id in ('1', 2, null)")), {
        kind: "in",
        operand: field("Id", "integer"),
        values: [1, 2, null],
      });
    });

    it("keeps values with commas in an 'in' list", () => {
      assert.deepEqual(plain(bind("CharacteristicName in ('Temperature, water', 'pH')")), {
        kind: "in",
        operand: field("CharacteristicName", "string"),
        values: ["Temperature, water", "pH"],
      });
    });
  });

  describe("literal on the left", () => {
    const cases = [
      { input: "'49' lt Latitude", op: "gt", value: 49 },
      { input: "'-80' lte Longitude", op: "ge", value: -80 },
      { input: "7 gt Latitude", op: "lt", value: 7 },
      { input: "7 ge Latitude", op: "le", value: 7 },
      { input: "7 le Latitude", op: "ge", value: 7 },
      { input: "7 eq Latitude", op: "eq", value: 7 },
      { input: "7 ne Latitude", op: "ne", value: 7 },
    ] as const;
    for (const c of cases) {
      it(`flips ${c.input} to a field on the left`, () => {
        const filter = plain(bind(c.input)) as Compare;
        assert.equal(filter.op, c.op);
        assert.equal(filter.left.name, c.input.includes("Longitude") ? "Longitude" : "Latitude");
        assert.deepEqual(filter.right, literal("number", c.value));
      });
    }

    it("flips null on the left", () => {
      assert.deepEqual(plain(bind("null eq Id")), {
        kind: "compare",
        op: "eq",
        left: field("Id", "integer"),
        right: literal("null", null),
      });
    });
  });

  describe("names", () => {
    it("refuses an unknown name with it as the target", () => {
      assert.throws(() => bind("Foo eq 1"), {
        name: "ODataError",
        code: "ERR_ODATA_UNKNOWN_FIELD",
        target: "Foo",
        position: 0,
      });
    });

    it("refuses an unknown name inside a call", () => {
      assert.throws(() => bind("Latitude gt 1 and contains(Foo, 'x')"), {
        code: "ERR_ODATA_UNKNOWN_FIELD",
        target: "Foo",
        position: 27,
      });
    });

    it("refuses an unknown name inside 'in'", () => {
      assert.throws(() => bind("Bar in (1)"), { code: "ERR_ODATA_UNKNOWN_FIELD", target: "Bar" });
    });

    it("hints at the right case of a name", () => {
      assert.throws(() => bind("latitude gt 1"), {
        code: "ERR_ODATA_UNKNOWN_FIELD",
        target: "latitude",
        message: /names are case-sensitive: did you mean "Latitude"\?/,
      });
    });

    it("gives no hint when no name is near", () => {
      assert.throws(() => bind("Depth gt 1"), (error: unknown) => {
        assert.ok(error instanceof ODataError);
        assert.doesNotMatch(error.message, /did you mean/);
        return true;
      });
    });

    it("keeps 'Id' and 'ID' apart", () => {
      assert.deepEqual((plain(bind("Id eq 1")) as { left: unknown }).left, field("Id", "integer"));
      assert.deepEqual((plain(bind("ID eq '1'")) as { left: unknown }).left, field("ID", "string"));
      assert.throws(() => bind("ID eq 1"), { code: "ERR_ODATA_TYPE", target: "ID" });
    });

    it("refuses 'id' although both 'Id' and 'ID' exist", () => {
      assert.throws(() => bind("id eq 1"), {
        code: "ERR_ODATA_UNKNOWN_FIELD",
        target: "id",
        message: /did you mean "Id"/,
      });
    });

    it("marks multi-valued fields", () => {
      assert.deepEqual(
        (plain(bind("RegionId eq 'hub.atlantic'")) as { left: unknown }).left,
        field("RegionId", "string", true),
      );
    });
  });

  describe("functions", () => {
    it("binds contains() on a string field as a boolean test", () => {
      assert.deepEqual(plain(bind("contains(DOI, 'xx')")), {
        kind: "test",
        value: {
          kind: "call",
          name: "contains",
          args: [field("DOI", "string"), literal("string", "xx")],
          type: "boolean",
        },
      });
    });

    it("accepts a guid field in string functions", () => {
      assert.equal(bind("startswith(DatasetId, '0a1b')").kind, "test");
    });

    it("refuses contains() on a number field", () => {
      assert.throws(() => bind("contains(Latitude, '4')"), {
        code: "ERR_ODATA_TYPE",
        target: "Latitude",
        position: 9,
      });
    });

    it("refuses a number literal as a string argument", () => {
      assert.throws(() => bind("contains(DOI, 4)"), { code: "ERR_ODATA_TYPE", position: 14 });
    });

    it("binds year() on a date field as an integer", () => {
      assert.deepEqual(plain(bind("year(ActivityStartDate) eq '2020'")), {
        kind: "compare",
        op: "eq",
        left: {
          kind: "call",
          name: "year",
          args: [field("ActivityStartDate", "date")],
          type: "integer",
        },
        right: literal("integer", 2020),
      });
    });

    it("binds month() on a date-time field", () => {
      assert.equal(bind("month(CreateTimestamp) eq 3").kind, "compare");
    });

    it("refuses year() on a string field", () => {
      assert.throws(() => bind("year(DOI) eq 2020"), {
        code: "ERR_ODATA_TYPE",
        target: "DOI",
        position: 5,
      });
    });

    it("refuses year() of a call that is not a date", () => {
      assert.throws(() => bind("year(year(ActivityStartDate)) eq 2020"), {
        code: "ERR_ODATA_TYPE",
        target: "ActivityStartDate",
      });
    });

    it("binds year() of a date literal", () => {
      const filter = plain(bind("year(2020-03-23) eq 2020")) as { left: { args: unknown[] } };
      assert.deepEqual(filter.left.args, [literal("date", "2020-03-23")]);
    });

    it("binds year() of a date-time literal as an instant", () => {
      const filter = plain(bind("year(2020-03-23T10:00:00Z) eq 2020")) as Compare;
      assert.deepEqual(filter.left.args, [literal("datetime", Date.UTC(2020, 2, 23, 10))]);
    });

    it("refuses year() of text", () => {
      assert.throws(() => bind("year('soon') eq 2020"), { code: "ERR_ODATA_TYPE", position: 5 });
    });

    it("binds substring() with 2 arguments", () => {
      const filter = plain(bind("substring(DOI, 3) eq '25976/x'")) as { left: unknown };
      assert.deepEqual(filter.left, {
        kind: "call",
        name: "substring",
        args: [field("DOI", "string"), literal("integer", 3)],
        type: "string",
      });
    });

    it("binds substring() with 3 arguments, converting a quoted length", () => {
      const filter = plain(bind("substring(DOI, 0, '2') eq '10'")) as { left: { args: unknown[] } };
      assert.deepEqual(
        filter.left.args,
        [field("DOI", "string"), literal("integer", 0), literal("integer", 2)],
      );
    });

    it("refuses text as substring()'s start", () => {
      assert.throws(() => bind("substring(DOI, 'a') eq 'x'"), {
        code: "ERR_ODATA_TYPE",
        position: 15,
      });
    });

    it("accepts a number field as substring()'s start", () => {
      assert.equal(bind("substring(DOI, Id) eq 'x'").kind, "compare");
    });

    it("types length() and indexof() as integers", () => {
      assert.deepEqual(
        (plain(bind("length(DOI) gt '3'")) as { right: unknown }).right,
        literal("integer", 3),
      );
      assert.deepEqual(
        (plain(bind("indexof(DOI, '/') eq 2")) as { right: unknown }).right,
        literal("integer", 2),
      );
    });

    it("types round(), floor() and ceiling() as numbers, also of integers", () => {
      for (const name of ["round", "floor", "ceiling"]) {
        const filter = plain(bind(`${name}(ActivityStartYear) eq '2.5'`)) as Compare;
        assert.equal(filter.left.type, "number");
        assert.deepEqual(filter.right, literal("number", 2.5));
      }
    });

    it("refuses round() of a string field", () => {
      assert.throws(() => bind("round(DOI) eq 1"), { code: "ERR_ODATA_TYPE", target: "DOI" });
    });

    it("converts a quoted number given to round()", () => {
      const filter = plain(bind("Latitude eq round('2.5')")) as { right: { args: unknown[] } };
      assert.deepEqual(filter.right.args, [literal("number", 2.5)]);
    });

    it("refuses comparing a string function with a number", () => {
      assert.throws(() => bind("tolower(DOI) eq 3"), {
        code: "ERR_ODATA_TYPE",
        target: "DOI",
        position: 16,
      });
    });

    it("accepts null as an argument", () => {
      assert.equal(bind("contains(null, 'x')").kind, "test");
    });

    it("accepts nested string functions", () => {
      assert.equal(bind("contains(tolower(trim(CharacteristicName)), 'ph')").kind, "test");
    });

    it("refuses a condition as an argument", () => {
      assert.throws(() => bind("contains(contains(DOI, 'a'), 'b')"), {
        code: "ERR_ODATA_TYPE",
        target: "DOI",
      });
    });

    it("refuses a call the parser would not produce", () => {
      const node: FilterNode = { kind: "call", name: "nope", args: [], span: { start: 0, end: 6 } };
      assert.throws(() => bindFilter(node, SCHEMA), { code: "ERR_ODATA_UNSUPPORTED", position: 0 });
    });
  });

  describe("conditions", () => {
    it("binds a boolean field as a test", () => {
      assert.deepEqual(plain(bind("Public")), { kind: "test", value: field("Public", "boolean") });
    });

    it("binds 'not' of a boolean field", () => {
      assert.deepEqual(plain(bind("not Public")), {
        kind: "not",
        operand: { kind: "test", value: field("Public", "boolean") },
      });
    });

    it("binds 'and' and 'or' with all their operands", () => {
      const filter = plain(bind("Public and Id eq 1 or Latitude gt 2")) as {
        kind: string;
        operands: { kind: string }[];
      };
      assert.equal(filter.kind, "or");
      assert.deepEqual(filter.operands.map((o) => o.kind), ["and", "compare"]);
    });

    it("refuses a string field as a condition", () => {
      assert.throws(() => bind("DOI"), { code: "ERR_ODATA_TYPE", target: "DOI", position: 0 });
    });

    it("refuses a number field as a condition inside 'and'", () => {
      assert.throws(() => bind("Public and Latitude"), {
        code: "ERR_ODATA_TYPE",
        target: "Latitude",
        position: 11,
      });
    });

    it("refuses a string function as a condition", () => {
      assert.throws(() => bind("tolower(DOI)"), { code: "ERR_ODATA_TYPE", target: "DOI" });
    });

    it("refuses a number literal as a condition", () => {
      assert.throws(() => bind("Public or 7"), {
        name: "ODataError",
        code: "ERR_ODATA_TYPE",
        position: 10,
      });
    });

    it("refuses null as a condition", () => {
      assert.throws(() => bind("null"), { code: "ERR_ODATA_TYPE", position: 0 });
    });

    it("refuses a condition used as a value", () => {
      assert.throws(() => bind("(Id eq 1) eq true"), {
        name: "ODataError",
        code: "ERR_ODATA_UNSUPPORTED",
        position: 0,
      });
    });

    it("refuses a condition used as a value on the right", () => {
      assert.throws(() => bind("Public eq (Id eq 1)"), {
        code: "ERR_ODATA_UNSUPPORTED",
        position: 10,
      });
    });

    it("refuses 'not' used as a value", () => {
      assert.throws(() => bind("not Public eq true"), {
        code: "ERR_ODATA_UNSUPPORTED",
        position: 0,
      });
    });

    it("refuses a chained comparison", () => {
      assert.throws(() => bind("Id eq 1 eq true"), { code: "ERR_ODATA_UNSUPPORTED" });
    });

    it("refuses a member inside an 'in' list", () => {
      assert.throws(() => bind("Id in (1, Latitude)"), {
        name: "ODataError",
        code: "ERR_ODATA_UNSUPPORTED",
        position: 10,
      });
    });

    it("refuses a condition as the operand of 'in'", () => {
      assert.throws(() => bind("(Id eq 1) in (true)"), { code: "ERR_ODATA_UNSUPPORTED" });
    });
  });

  describe("two fields", () => {
    it("binds a comparison of two number fields", () => {
      assert.deepEqual(plain(bind("Latitude gt Id")), {
        kind: "compare",
        op: "gt",
        left: field("Latitude", "number"),
        right: field("Id", "integer"),
      });
    });

    it("binds a comparison of a string and a guid field", () => {
      assert.equal(bind("DOI eq DatasetId").kind, "compare");
    });

    it("refuses a comparison of a number and a string field", () => {
      assert.throws(() => bind("Latitude eq DOI"), {
        code: "ERR_ODATA_TYPE",
        target: "Latitude",
        position: 12,
      });
    });

    it("refuses a comparison of a date and a date-time field", () => {
      assert.throws(() => bind("ActivityStartDate lt CreateTimestamp"), {
        code: "ERR_ODATA_TYPE",
        target: "ActivityStartDate",
      });
    });
  });

  describe("constant folding", () => {
    const cases = [
      { input: "1 eq 1", expected: true },
      { input: "1 eq 2", expected: false },
      { input: "'a' eq 'b'", expected: false },
      { input: "'a' lt 'b'", expected: true },
      { input: "1 eq '1'", expected: true },
      { input: "2 gt '10'", expected: false },
      { input: "null eq null", expected: true },
      { input: "null ne null", expected: false },
      { input: "null lt 1", expected: false },
      { input: "1 ne null", expected: true },
      { input: "null eq 2020-03-23T10:00:00Z", expected: false },
      { input: "2020-03-23T10:00:00Z eq 2020-03-23", expected: false },
      { input: "2020-03-23T00:00:00Z eq 2020-03-23", expected: true },
      { input: "2020-03-23T12:00:00+02:00 eq 2020-03-23T10:00:00Z", expected: true },
      {
        input: "0a1b2c3d-0000-4000-8000-00000000000f eq '0A1B2C3D-0000-4000-8000-00000000000F'",
        expected: true,
      },
      { input: "true ne false", expected: true },
      { input: "'a' in ('a', 'b')", expected: true },
      { input: "3 in ('1', 2)", expected: false },
      { input: "null in (null, 'a')", expected: true },
      { input: "true", expected: true },
      { input: "false", expected: false },
    ] as const;
    for (const c of cases) {
      it(`folds ${c.input} to constant ${c.expected}`, () => {
        assert.deepEqual(bind(c.input), { kind: "constant", value: c.expected });
      });
    }

    it("folds inside 'and' and keeps the other operands", () => {
      const filter = plain(bind("1 eq 1 and Id eq 2")) as { operands: unknown[] };
      assert.deepEqual(filter.operands[0], { kind: "constant", value: true });
    });

    it("refuses a literal comparison of mismatched types", () => {
      assert.throws(() => bind("'1' eq 1"), { code: "ERR_ODATA_TYPE", position: 7 });
    });

    it("refuses a literal 'in' list of mismatched types", () => {
      assert.throws(() => bind("1 in ('x')"), { code: "ERR_ODATA_TYPE", position: 6 });
    });
  });

  describe("null comparisons", () => {
    for (const op of ["eq", "ne", "lt", "le", "gt", "ge"] as const) {
      it(`binds Latitude ${op} null with a null literal`, () => {
        assert.deepEqual(plain(bind(`Latitude ${op} null`)), {
          kind: "compare",
          op,
          left: field("Latitude", "number"),
          right: literal("null", null),
        });
      });
    }

    it("binds null for every field type", () => {
      for (const name of SCHEMA.keys()) {
        assert.deepEqual(
          (plain(bind(`${name} eq null`)) as { right: unknown }).right,
          literal("null", null),
        );
      }
    });
  });

  it("reports errors as ODataError with a code", () => {
    assert.throws(() => bind("Foo eq 1"), (error: unknown) => {
      assert.ok(error instanceof ODataError);
      assert.ok(error instanceof Error);
      assert.equal(error.name, "ODataError");
      return true;
    });
  });
});

describe("bound.ts and schema.ts", () => {
  it("hold types only, so they load with no runtime exports", async () => {
    assert.deepEqual(Object.keys(await import("../../lib/odata/bound.ts")), []);
    assert.deepEqual(Object.keys(await import("../../lib/odata/schema.ts")), []);
  });
});

describe("ODataError", () => {
  it("keeps its cause", () => {
    const cause = new Error("inner");
    const error = new ODataError("ERR_ODATA_TYPE", "Cannot x: y", {
      cause,
      target: "A",
      position: 3,
    });
    assert.equal(error.cause, cause);
    assert.equal(error.target, "A");
    assert.equal(error.position, 3);
  });

  it("leaves target and position undefined by default", () => {
    const error = new ODataError("ERR_ODATA_UNSUPPORTED", "Cannot x");
    assert.equal(error.target, undefined);
    assert.equal(error.position, undefined);
    assert.equal("cause" in error, false);
  });
});
