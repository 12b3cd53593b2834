import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { FILTER_FUNCTIONS } from "../../lib/odata/functions.ts";
import { type FilterNode, parseFilter } from "../../lib/odata/mod.ts";
import { isCalendarDate } from "../../lib/odata/parse_filter.ts";

/** Writes an AST as a compact prefix expression, without spans, e.g. `(and (eq A 1) B)`. */
function show(node: FilterNode): string {
  switch (node.kind) {
    case "literal":
      switch (node.type) {
        case "string":
          return `'${node.value.replaceAll("'", "''")}'`;
        case "number":
          return node.text;
        case "null":
          return "null";
        case "boolean":
          return String(node.value);
        default:
          return `${node.type}:${node.value}`;
      }
    case "member":
      return node.name;
    case "call":
      return `${node.name}(${node.args.map(show).join(", ")})`;
    case "compare":
      return `(${node.op} ${show(node.left)} ${show(node.right)})`;
    case "in":
      return `(in ${show(node.operand)} [${node.values.map(show).join(", ")}])`;
    case "and":
    case "or":
      return `(${node.kind} ${node.operands.map(show).join(" ")})`;
    case "not":
      return `(not ${show(node.operand)})`;
  }
}

/** Removes spans, keeping everything else, for exact comparisons of literal nodes. */
function withoutSpans(node: FilterNode): unknown {
  return JSON.parse(
    JSON.stringify(node, (key, value: unknown) => (key === "span" ? undefined : value)),
  );
}

/** The longest nesting of the tree, counting every node. */
function depthOf(node: FilterNode): number {
  switch (node.kind) {
    case "literal":
    case "member":
      return 1;
    case "call":
      return 1 + Math.max(0, ...node.args.map(depthOf));
    case "compare":
      return 1 + Math.max(depthOf(node.left), depthOf(node.right));
    case "in":
      return 1 + Math.max(depthOf(node.operand), ...node.values.map(depthOf));
    case "and":
    case "or":
      return 1 + Math.max(...node.operands.map(depthOf));
    case "not":
      return 1 + depthOf(node.operand);
  }
}

describe("parseFilter()", () => {
  describe("comparisons", () => {
    const cases = [
      { name: "parses 'eq'", input: "ResultValue eq 7", expected: "(eq ResultValue 7)" },
      { name: "parses 'ne'", input: "ResultValue ne 7", expected: "(ne ResultValue 7)" },
      { name: "parses 'lt'", input: "ResultValue lt 7", expected: "(lt ResultValue 7)" },
      { name: "parses 'le'", input: "ResultValue le 7", expected: "(le ResultValue 7)" },
      { name: "parses 'gt'", input: "ResultValue gt 7", expected: "(gt ResultValue 7)" },
      { name: "parses 'ge'", input: "ResultValue ge 7", expected: "(ge ResultValue 7)" },
      {
        name: "reads DataStream's 'lte' as 'le'",
        input: "ResultValue lte 7",
        expected: "(le ResultValue 7)",
      },
      {
        name: "reads DataStream's 'gte' as 'ge'",
        input: "ResultValue gte 7",
        expected: "(ge ResultValue 7)",
      },
      {
        name: "keeps a literal on the left",
        input: "'-80' lte Longitude",
        expected: "(le '-80' Longitude)",
      },
      { name: "compares two members", input: "A eq B", expected: "(eq A B)" },
      {
        name: "compares a function call",
        input: "length(Name) gt 3",
        expected: "(gt length(Name) 3)",
      },
      { name: "accepts tabs and line breaks as spaces", input: "A\teq\r\n1", expected: "(eq A 1)" },
      {
        name: "accepts a name with digits and underscores",
        input: "_a1_B2 eq 1",
        expected: "(eq _a1_B2 1)",
      },
      {
        name: "reads a comparison chain left to right (binding refuses it)",
        input: "A eq 1 eq true",
        expected: "(eq (eq A 1) true)",
      },
    ] as const;
    for (const c of cases) {
      it(c.name, () => assert.equal(show(parseFilter(c.input)), c.expected));
    }
  });

  describe("'in'", () => {
    const cases = [
      {
        name: "parses a list whose values contain commas",
        input: "CharacteristicName in ('Temperature, water', 'pH')",
        expected: "(in CharacteristicName ['Temperature, water', 'pH'])",
      },
      {
        name: "parses a list of one value",
        input: "RegionId in ('hub.atlantic')",
        expected: "(in RegionId ['hub.atlantic'])",
      },
      {
        name: "parses numbers and null in a list",
        input: "Id in (1, -2, null)",
        expected: "(in Id [1, -2, null])",
      },
      { name: "parses a list without spaces", input: "Id in(1,2)", expected: "(in Id [1, 2])" },
      {
        name: "parses three DOIs and another 'in'",
        input: "DOI in ('10.25976/a', '10.25976/b', '10.25976/c') and " +
          "CharacteristicName in ('Temperature, water', 'pH')",
        expected: "(and (in DOI ['10.25976/a', '10.25976/b', '10.25976/c']) " +
          "(in CharacteristicName ['Temperature, water', 'pH']))",
      },
      {
        name: "parses a list that holds a name (binding refuses it)",
        input: "A in (B)",
        expected: "(in A [B])",
      },
    ] as const;
    for (const c of cases) {
      it(c.name, () => assert.equal(show(parseFilter(c.input)), c.expected));
    }

    it("gives the list's span up to the closing parenthesis", () => {
      assert.deepEqual(parseFilter("Id in (1, 2) ").span, { start: 0, end: 12 });
    });
  });

  describe("logical operators", () => {
    const cases = [
      {
        name: "parses 'not' tighter than 'and'",
        input: "not Flag and B eq 2",
        expected: "(and (not Flag) (eq B 2))",
      },
      {
        name: "parses 'not' tighter than 'eq', as OData's table says",
        input: "not A eq true",
        expected: "(eq (not A) true)",
      },
      {
        name: "parses 'not' of a call tighter than 'and'",
        input: "not contains(A, 'x') and B",
        expected: "(and (not contains(A, 'x')) B)",
      },
      {
        name: "parses 'and' tighter than 'or'",
        input: "A eq 1 or B eq 2 and C eq 3",
        expected: "(or (eq A 1) (and (eq B 2) (eq C 3)))",
      },
      {
        name: "parses 'and' tighter than 'or' on the left too",
        input: "A eq 1 and B eq 2 or C eq 3",
        expected: "(or (and (eq A 1) (eq B 2)) (eq C 3))",
      },
      {
        name: "lets parentheses override precedence",
        input: "(A eq 1 or B eq 2) and C eq 3",
        expected: "(and (or (eq A 1) (eq B 2)) (eq C 3))",
      },
      {
        name: "flattens an 'and' chain",
        input: "A eq 1 and B eq 2 and C eq 3 and D eq 4",
        expected: "(and (eq A 1) (eq B 2) (eq C 3) (eq D 4))",
      },
      {
        name: "flattens an 'or' chain",
        input: "A eq 1 or B eq 2 or C eq 3",
        expected: "(or (eq A 1) (eq B 2) (eq C 3))",
      },
      {
        name: "keeps a parenthesized 'and' as its own operand",
        input: "A and (B and C)",
        expected: "(and A (and B C))",
      },
      {
        name: "parses 'not' of parentheses",
        input: "not (A eq 1 or B eq 2)",
        expected: "(not (or (eq A 1) (eq B 2)))",
      },
      { name: "parses 'not' without a space before '('", input: "not(A)", expected: "(not A)" },
      { name: "parses a double 'not'", input: "not not A", expected: "(not (not A))" },
      { name: "parses redundant parentheses", input: "((A eq 1))", expected: "(eq A 1)" },
      {
        name: "parses a bare member as a condition",
        input: "Flag and not Other",
        expected: "(and Flag (not Other))",
      },
      {
        name: "parses boolean literals as conditions",
        input: "true or false",
        expected: "(or true false)",
      },
      {
        name: "parses a mix of everything",
        input: "not (A in (1, 2)) and (contains(B, 'x') or C ne null) or D ge 2020-03-23",
        expected: "(or (and (not (in A [1, 2])) (or contains(B, 'x') (ne C null))) " +
          "(ge D date:2020-03-23))",
      },
    ] as const;
    for (const c of cases) {
      it(c.name, () => assert.equal(show(parseFilter(c.input)), c.expected));
    }
  });

  describe("literals", () => {
    const cases = [
      {
        name: "reads a string",
        input: "'pH'",
        expected: { kind: "literal", type: "string", value: "pH" },
      },
      {
        name: "reads an empty string",
        input: "''",
        expected: { kind: "literal", type: "string", value: "" },
      },
      {
        name: "unescapes doubled quotes",
        input: "'2,2''-Dichlorobiphenyl'",
        expected: { kind: "literal", type: "string", value: "2,2'-Dichlorobiphenyl" },
      },
      {
        name: "reads a string that is only a quote",
        input: "''''",
        expected: { kind: "literal", type: "string", value: "'" },
      },
      {
        name: "keeps keywords, parentheses and spaces inside strings",
        input: "' and (x) or not '",
        expected: { kind: "literal", type: "string", value: " and (x) or not " },
      },
      {
        name: "reads non-ASCII text in a string",
        input: "'Rivière 🌊'",
        expected: { kind: "literal", type: "string", value: "Rivière 🌊" },
      },
      {
        name: "reads an integer",
        input: "42",
        expected: { kind: "literal", type: "number", value: 42, text: "42" },
      },
      {
        name: "reads leading zeros",
        input: "007",
        expected: { kind: "literal", type: "number", value: 7, text: "007" },
      },
      {
        name: "reads a decimal and keeps its text",
        input: "7.10",
        expected: { kind: "literal", type: "number", value: 7.1, text: "7.10" },
      },
      {
        name: "reads a negative number",
        input: "-102.01",
        expected: { kind: "literal", type: "number", value: -102.01, text: "-102.01" },
      },
      {
        name: "reads an exponent",
        input: "1e5",
        expected: { kind: "literal", type: "number", value: 100000, text: "1e5" },
      },
      {
        name: "reads an upper-case signed exponent",
        input: "1E+5",
        expected: { kind: "literal", type: "number", value: 100000, text: "1E+5" },
      },
      {
        name: "reads a negative exponent",
        input: "-0.5e-3",
        expected: { kind: "literal", type: "number", value: -0.0005, text: "-0.5e-3" },
      },
      {
        name: "reads an unquoted date",
        input: "2020-03-23",
        expected: { kind: "literal", type: "date", value: "2020-03-23" },
      },
      {
        name: "reads a leap day",
        input: "2020-02-29",
        expected: { kind: "literal", type: "date", value: "2020-02-29" },
      },
      {
        name: "reads a leap day of a 400th year",
        input: "2000-02-29",
        expected: { kind: "literal", type: "date", value: "2000-02-29" },
      },
      {
        name: "keeps a quoted date a string (binding converts it)",
        input: "'2020-03-23'",
        expected: { kind: "literal", type: "string", value: "2020-03-23" },
      },
      {
        name: "reads a date-time in UTC",
        input: "2020-03-23T10:00:00Z",
        expected: { kind: "literal", type: "datetime", value: "2020-03-23T10:00:00Z" },
      },
      {
        name: "reads a date-time with an offset and fraction",
        input: "2020-03-23T10:00:00.5+05:30",
        expected: { kind: "literal", type: "datetime", value: "2020-03-23T10:00:00.5+05:30" },
      },
      {
        name: "reads a date-time without seconds and a negative offset",
        input: "2020-03-23T10:00-08:00",
        expected: { kind: "literal", type: "datetime", value: "2020-03-23T10:00-08:00" },
      },
      {
        name: "reads a GUID and lower-cases it",
        input: "0A1B2C3D-0000-4000-8000-00000000000F",
        expected: { kind: "literal", type: "guid", value: "0a1b2c3d-0000-4000-8000-00000000000f" },
      },
      {
        name: "reads a GUID that starts with letters",
        input: "deadbeef-0000-4000-8000-000000000000",
        expected: { kind: "literal", type: "guid", value: "deadbeef-0000-4000-8000-000000000000" },
      },
      {
        name: "reads true",
        input: "true",
        expected: { kind: "literal", type: "boolean", value: true },
      },
      {
        name: "reads false",
        input: "false",
        expected: { kind: "literal", type: "boolean", value: false },
      },
      {
        name: "reads null",
        input: "null",
        expected: { kind: "literal", type: "null", value: null },
      },
      {
        name: "reads an upper-case 'True' as a name",
        input: "True",
        expected: { kind: "member", name: "True" },
      },
    ] as const;
    for (const c of cases) {
      it(c.name, () => assert.deepEqual(withoutSpans(parseFilter(c.input)), c.expected));
    }
  });

  describe("functions", () => {
    const calls = [
      { input: "contains(DOI, 'ab')", expected: "contains(DOI, 'ab')" },
      { input: "startswith(DOI, '10.')", expected: "startswith(DOI, '10.')" },
      { input: "endswith(DOI, 'xxxx-xxxx')", expected: "endswith(DOI, 'xxxx-xxxx')" },
      { input: "tolower(Name)", expected: "tolower(Name)" },
      { input: "toupper(Name)", expected: "toupper(Name)" },
      { input: "trim(Name)", expected: "trim(Name)" },
      { input: "length(Name)", expected: "length(Name)" },
      { input: "indexof(Name, 'x')", expected: "indexof(Name, 'x')" },
      { input: "substring(Name, 1)", expected: "substring(Name, 1)" },
      { input: "substring(Name, 1, 2)", expected: "substring(Name, 1, 2)" },
      { input: "concat(Name, 'x')", expected: "concat(Name, 'x')" },
      { input: "year(ActivityStartDate)", expected: "year(ActivityStartDate)" },
      { input: "month(ActivityStartDate)", expected: "month(ActivityStartDate)" },
      { input: "day(ActivityStartDate)", expected: "day(ActivityStartDate)" },
      { input: "round(ResultValue)", expected: "round(ResultValue)" },
      { input: "floor(ResultValue)", expected: "floor(ResultValue)" },
      { input: "ceiling(ResultValue)", expected: "ceiling(ResultValue)" },
    ] as const;
    for (const c of calls) {
      it(`parses ${c.input}`, () => assert.equal(show(parseFilter(c.input)), c.expected));
    }

    it("has a test above for every function it knows", () => {
      const tested = new Set(calls.map((c) => c.input.slice(0, c.input.indexOf("("))));
      assert.deepEqual([...FILTER_FUNCTIONS.keys()].sort(), [...tested].sort());
    });

    it("parses nested calls", () => {
      assert.equal(
        show(parseFilter("contains(tolower(trim(Name)), 'ph')")),
        "contains(tolower(trim(Name)), 'ph')",
      );
    });

    it("parses a call with spaces before its arguments", () => {
      assert.equal(show(parseFilter("length( Name ) eq 2")), "(eq length(Name) 2)");
    });

    it("reads a function name that is not followed by '(' as a member", () => {
      assert.equal(show(parseFilter("length eq 2")), "(eq length 2)");
    });

    for (const [name, signature] of FILTER_FUNCTIONS) {
      const most = signature.args.length;
      const least = most - signature.optional;
      it(`refuses ${name}() with ${most + 1} arguments at the name`, () => {
        const args = Array.from({ length: most + 1 }, () => "'a'").join(", ");
        assert.throws(() => parseFilter(`X eq 1 and ${name}(${args})`), {
          name: "FilterSyntaxError",
          code: "ERR_ODATA_SYNTAX",
          position: 11,
        });
      });
      it(`refuses ${name}() with ${least - 1} arguments at the name`, () => {
        const args = Array.from({ length: least - 1 }, () => "'a'").join(", ");
        assert.throws(() => parseFilter(`${name}(${args})`), {
          name: "FilterSyntaxError",
          code: "ERR_ODATA_SYNTAX",
          position: 0,
        });
      });
    }
  });

  describe("spans", () => {
    it("gives each node its 0-based, end-exclusive place", () => {
      const ast = parseFilter("Name eq 'a''b'");
      assert.deepEqual(ast, {
        kind: "compare",
        op: "eq",
        left: { kind: "member", name: "Name", span: { start: 0, end: 4 } },
        right: { kind: "literal", type: "string", value: "a'b", span: { start: 8, end: 14 } },
        span: { start: 0, end: 14 },
      });
    });

    it("spans a call from its name to its closing parenthesis", () => {
      assert.deepEqual(parseFilter("  endswith(DOI, 'x')  ").span, { start: 2, end: 20 });
    });

    it("spans an 'and' chain from its first operand to its last", () => {
      const ast = parseFilter("A eq 1 and B eq 2 and C");
      assert.deepEqual(ast.span, { start: 0, end: 23 });
    });

    it("includes parentheses in the spans of the nodes around them", () => {
      const text = "(A eq 1) and not (B eq 2)";
      const ast = parseFilter(text);
      assert.deepEqual(ast.span, { start: 0, end: text.length });
      assert.equal(ast.kind, "and");
      if (ast.kind !== "and") return;
      assert.deepEqual(ast.operands[0]?.span, { start: 0, end: 8 });
      assert.deepEqual(ast.operands[1]?.span, { start: 13, end: text.length });
    });

    it("spans a 'not' from the keyword to its operand's end", () => {
      assert.deepEqual(parseFilter("not Flag").span, { start: 0, end: 8 });
    });
  });

  describe("errors", () => {
    const cases = [
      { name: "refuses an unclosed string at its quote", input: "Name eq 'x", position: 8 },
      {
        name: "refuses an unclosed string after an escaped quote",
        input: "Name eq 'it''s",
        position: 8,
      },
      { name: "refuses a double-quoted string", input: 'Name eq "x"', position: 8 },
      { name: "refuses an unknown character", input: "Name eq 'x' ; ", position: 12 },
      { name: "refuses a non-ASCII letter outside strings", input: "Rivière eq 'x'", position: 4 },
      { name: "refuses a slash (no navigation paths)", input: "Location/Name eq 'x'", position: 8 },
      { name: "refuses trailing garbage", input: "Name eq 'x' foo", position: 12 },
      { name: "refuses a stray closing parenthesis", input: "A eq 1 )", position: 7 },
      { name: "refuses a missing right operand", input: "Name eq", position: 7 },
      { name: "refuses a missing left operand", input: "eq 'x'", position: 0 },
      { name: "refuses a missing operand after 'and'", input: "A eq 1 and", position: 10 },
      { name: "refuses a missing operand after 'or'", input: "A eq 1 or ", position: 10 },
      { name: "refuses a lone 'not'", input: "not", position: 3 },
      { name: "refuses a keyword as a value", input: "A eq and", position: 5 },
      { name: "refuses a comma as a value", input: "A eq ,", position: 5 },
      { name: "refuses a missing ')'", input: "(Name eq 'x'", position: 12 },
      { name: "refuses a missing ')' before other text", input: "(Name eq 'x' 'y')", position: 13 },
      { name: "refuses 'in' without '('", input: "Name in 'x'", position: 8 },
      { name: "refuses an empty 'in' list", input: "A in ()", position: 6 },
      { name: "refuses a trailing comma in an 'in' list", input: "A in ('a',)", position: 10 },
      { name: "refuses an unclosed 'in' list", input: "A in ('a' 'b')", position: 10 },
      { name: "refuses 'not' inside an 'in' list", input: "A in (not B)", position: 6 },
      { name: "refuses empty input", input: "", position: 0 },
      { name: "refuses blank input at its end", input: "   ", position: 3 },
      { name: "refuses empty parentheses", input: "()", position: 1 },
      { name: "refuses an unknown function", input: "Name eq 'x' and foo(Name)", position: 16 },
      { name: "refuses an upper-case function name", input: "Contains(A, 'x')", position: 0 },
      { name: "refuses a trailing comma in a call", input: "contains(A,)", position: 11 },
      { name: "refuses an unclosed call", input: "contains(A, 'x'", position: 15 },
      { name: "refuses upper-case 'AND'", input: "A eq 1 AND B eq 2", position: 7 },
      { name: "refuses upper-case 'OR'", input: "A eq 'x' OR B eq 1", position: 9 },
      { name: "refuses upper-case 'EQ'", input: "A EQ 1", position: 2 },
      { name: "refuses mixed-case 'In'", input: "A In (1)", position: 2 },
      { name: "refuses 'add'", input: "A add 1 eq 2", position: 2 },
      { name: "refuses 'sub'", input: "A sub 1 eq 2", position: 2 },
      { name: "refuses 'has'", input: "A has 'x'", position: 2 },
      { name: "refuses 'mod' after a comparison", input: "A eq 1 mod 2", position: 7 },
      { name: "refuses a minus that is not a sign", input: "A eq - 1", position: 5 },
      { name: "refuses a minus before a name", input: "A eq -B", position: 5 },
      { name: "refuses February 29th of a common year", input: "D eq 2021-02-29", position: 5 },
      { name: "refuses February 29th of 2100", input: "D eq 2100-02-29", position: 5 },
      { name: "refuses month 13", input: "D eq 2020-13-01", position: 5 },
      { name: "refuses month 0", input: "D eq 2020-00-10", position: 5 },
      { name: "refuses day 0", input: "D eq 2020-01-00", position: 5 },
      { name: "refuses April 31st", input: "D eq 2020-04-31", position: 5 },
      {
        name: "refuses a date-time on an invalid date",
        input: "D eq 2020-02-30T10:00:00Z",
        position: 5,
      },
      {
        name: "refuses a date-time with minute 60",
        input: "D eq 2020-03-23T23:60:00Z",
        position: 5,
      },
      {
        name: "refuses a date-time without a zone",
        input: "D eq 2020-03-23T10:00:00",
        position: 5,
      },
      { name: "refuses a date followed by a digit", input: "D eq 2020-03-234", position: 5 },
      {
        name: "refuses a GUID followed by letters",
        input: "G eq 0a1b2c3d-0000-4000-8000-00000000000fx",
        position: 5,
      },
      { name: "refuses a number followed by letters", input: "A eq 12ab", position: 5 },
      { name: "refuses a number with a trailing dot", input: "A eq 1.", position: 5 },
      { name: "refuses a number with two dots", input: "A eq 1.2.3", position: 5 },
      { name: "refuses an exponent without digits", input: "A eq 1e", position: 5 },
      { name: "refuses a number that overflows", input: "A eq 1e400", position: 5 },
    ] as const;
    for (const c of cases) {
      it(c.name, () => {
        assert.throws(() => parseFilter(c.input), {
          name: "FilterSyntaxError",
          code: "ERR_ODATA_SYNTAX",
          position: c.position,
        });
      });
    }

    it("is a SyntaxError with the filter as its target", () => {
      assert.throws(() => parseFilter("A eq"), (error: unknown) => {
        assert.ok(error instanceof SyntaxError);
        assert.equal((error as { target?: unknown }).target, "$filter");
        return true;
      });
    });

    it("says where and what in its message", () => {
      assert.throws(() => parseFilter("(A eq 1 and B"), {
        message: "Cannot parse filter at position 13: " +
          'expected ")" but found the end of the filter',
      });
    });

    it("names the quoted string it found", () => {
      assert.throws(() => parseFilter("A in 'it''s'"), { message: /found 'it''s'$/ });
    });

    it("hints at the lower-case spelling of 'AND'", () => {
      assert.throws(() => parseFilter("A eq 1 AND B eq 2"), {
        message: /operators are lower-case: write "and"/,
      });
    });

    it("hints at the lower-case spelling of a function", () => {
      assert.throws(() => parseFilter("EndsWith(DOI, 'x')"), { message: /write "endswith"/ });
    });

    it("tells that strings take single quotes", () => {
      assert.throws(() => parseFilter('Name eq "pH"'), { message: /single quotes/ });
    });
  });

  describe("limits", () => {
    it("accepts 64 nested parentheses by default", () => {
      const text = `${"(".repeat(64)}A${")".repeat(64)}`;
      assert.equal(show(parseFilter(text)), "A");
    });

    it("refuses 65 nested parentheses at the 65th", () => {
      const text = `${"(".repeat(65)}A${")".repeat(65)}`;
      assert.throws(() => parseFilter(text), {
        name: "FilterSyntaxError",
        code: "ERR_ODATA_SYNTAX",
        position: 64,
      });
    });

    it("refuses 65 nested 'not' at the 65th", () => {
      const text = `${"not ".repeat(65)}A`;
      assert.throws(() => parseFilter(text), { name: "FilterSyntaxError", position: 256 });
    });

    it("counts calls and 'in' lists as nesting", () => {
      assert.doesNotThrow(() => parseFilter("(A in (1))", { maxDepth: 2 }));
      assert.throws(() => parseFilter("((A in (1)))", { maxDepth: 2 }), {
        name: "FilterSyntaxError",
        position: 7,
      });
      assert.doesNotThrow(() => parseFilter("(tolower(A) eq 'x')", { maxDepth: 2 }));
      assert.throws(() => parseFilter("(contains(tolower(A), 'x'))", { maxDepth: 2 }), {
        name: "FilterSyntaxError",
        position: 10,
      });
    });

    it("follows a custom maxDepth", () => {
      assert.doesNotThrow(() => parseFilter("(((A)))", { maxDepth: 3 }));
      assert.throws(() => parseFilter("((((A))))", { maxDepth: 3 }), {
        name: "FilterSyntaxError",
        position: 3,
      });
      assert.throws(() => parseFilter("not not A", { maxDepth: 1 }), {
        name: "FilterSyntaxError",
        position: 4,
      });
    });

    it("refuses 10,000 nested 'not' with FilterSyntaxError, not a stack overflow", () => {
      const text = `${"not ".repeat(10_000)}A`;
      assert.throws(() => parseFilter(text), {
        name: "FilterSyntaxError",
        code: "ERR_ODATA_SYNTAX",
      });
    });

    it("refuses 10,000 nested parentheses with FilterSyntaxError, not a stack overflow", () => {
      const text = `${"(".repeat(10_000)}A${")".repeat(10_000)}`;
      assert.throws(() => parseFilter(text, { maxLength: 100_000 }), {
        name: "FilterSyntaxError",
        position: 64,
      });
    });

    it("refuses 10,000 nested calls with FilterSyntaxError, not a stack overflow", () => {
      const text = `${"trim(".repeat(10_000)}A${")".repeat(10_000)}`;
      assert.throws(() => parseFilter(text, { maxLength: 100_000 }), {
        name: "FilterSyntaxError",
        position: 320,
      });
    });

    it("parses a 5,000-term 'and' chain flat and shallow", () => {
      const text = Array.from({ length: 5000 }, (_, i) => `A eq ${i}`).join(" and ");
      const ast = parseFilter(text, { maxLength: 100_000 });
      assert.equal(ast.kind, "and");
      if (ast.kind !== "and") return;
      assert.equal(ast.operands.length, 5000);
      assert.equal(depthOf(ast), 3);
      assert.equal(show(ast.operands[4999]!), "(eq A 4999)");
    });

    it("accepts a filter exactly maxLength long", () => {
      const text = `A eq '${"x".repeat(93)}'`;
      assert.equal(text.length, 100);
      assert.doesNotThrow(() => parseFilter(text, { maxLength: 100 }));
    });

    it("refuses a filter longer than maxLength at maxLength", () => {
      const text = `A eq '${"x".repeat(94)}'`;
      assert.throws(() => parseFilter(text, { maxLength: 100 }), {
        name: "FilterSyntaxError",
        code: "ERR_ODATA_SYNTAX",
        position: 100,
      });
    });

    it("refuses a filter longer than 16,384 characters by default", () => {
      const ok = `A eq '${"x".repeat(16_384 - 7)}'`;
      assert.doesNotThrow(() => parseFilter(ok));
      assert.throws(() => parseFilter(`${ok} `), { name: "FilterSyntaxError", position: 16_384 });
    });
  });
});

describe("ast.ts", () => {
  it("holds types only, so it loads with no runtime exports", async () => {
    assert.deepEqual(Object.keys(await import("../../lib/odata/ast.ts")), []);
  });
});

describe("isCalendarDate()", () => {
  const cases = [
    { input: "2020-02-29", expected: true },
    { input: "2019-02-28", expected: true },
    { input: "2019-02-29", expected: false },
    { input: "1900-02-29", expected: false },
    { input: "2000-02-29", expected: true },
    { input: "2020-12-31", expected: true },
    { input: "2020-11-31", expected: false },
    { input: "2020-13-01", expected: false },
    { input: "2020-00-01", expected: false },
    { input: "2020-01-00", expected: false },
    { input: "2020-1-01", expected: false },
    { input: " 2020-01-01", expected: false },
    { input: "2020-01-01T00:00:00Z", expected: false },
  ] as const;
  for (const c of cases) {
    const what = c.expected ? "a calendar date" : "not a calendar date";
    it(`tells that ${JSON.stringify(c.input)} is ${what}`, () => {
      assert.equal(isCalendarDate(c.input), c.expected);
    });
  }
});
