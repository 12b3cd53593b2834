import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  type AggregateItem,
  type ApplyNode,
  type ApplyTransformation,
  parseApply,
  type ValueNode,
} from "../../lib/odata/mod.ts";

/** Writes a value expression compactly, e.g. `(mul ResultValue 1.8)`. */
function showValue(node: ValueNode): string {
  switch (node.kind) {
    case "literal":
      return node.type === "number"
        ? node.text
        : node.type === "string"
        ? `'${node.value}'`
        : String(node.value);
    case "member":
      return node.name;
    case "call":
      return `${node.name}(${node.args.map(showValue).join(",")})`;
    case "arithmetic":
      return `(${node.op} ${showValue(node.left)} ${showValue(node.right)})`;
  }
}

function showItem(item: AggregateItem): string {
  return item.kind === "count"
    ? `$count:${item.alias}`
    : `${showValue(item.value)} ${item.method}:${item.alias}`;
}

/** Writes a transformation compactly, without spans and without the filter's tree. */
function show(t: ApplyTransformation): string {
  switch (t.kind) {
    case "identity":
      return "identity";
    case "filter":
      return `filter[${t.filter.kind}]`;
    case "compute":
      return `compute[${t.items.map((i) => `${showValue(i.value)}:${i.alias}`).join("; ")}]`;
    case "aggregate":
      return `aggregate[${t.items.map(showItem).join("; ")}]`;
    case "groupby":
      return `groupby[${t.properties.map((p) => p.name).join(",")}|${
        t.items.map(showItem).join("; ")
      }]`;
    case "orderby":
      return `orderby[${t.keys.map((k) => `${k.name.name}${k.descending ? "-" : "+"}`).join(",")}]`;
    case "top":
    case "skip":
      return `${t.kind}[${t.count}]`;
    case "topcount":
    case "bottomcount":
      return `${t.kind}[${t.count},${showValue(t.value)}]`;
  }
}

function showAll(apply: ApplyNode): string {
  return apply.map(show).join(" / ");
}

describe("parseApply()", () => {
  // The Data Aggregation Extension 4.0 document's examples, on these entities.
  const examples = [
    {
      name: "aggregate with sum (§3.1.3.1)",
      input: "aggregate(ResultValue with sum as Total)",
      expected: "aggregate[ResultValue sum:Total]",
    },
    {
      name: "several aggregates in one aggregate (§3.1.3)",
      input: "aggregate(ResultValue with min as Low, ResultValue with max as High)",
      expected: "aggregate[ResultValue min:Low; ResultValue max:High]",
    },
    {
      name: "countdistinct (§3.1.3.5)",
      input: "aggregate(LocationId with countdistinct as Locations)",
      expected: "aggregate[LocationId countdistinct:Locations]",
    },
    {
      name: "$count as an alias (§3.1.4)",
      input: "aggregate($count as Readings)",
      expected: "aggregate[$count:Readings]",
    },
    {
      name: "groupby without aggregate: the distinct values (§3.1.5)",
      input: "groupby((CharacteristicName))",
      expected: "groupby[CharacteristicName|]",
    },
    {
      name: "groupby with two properties and aggregate (§3.1.5.1)",
      input:
        "groupby((CharacteristicName, ResultUnit), aggregate(ResultValue with sum as Total, $count as N))",
      expected: "groupby[CharacteristicName,ResultUnit|ResultValue sum:Total; $count:N]",
    },
    {
      name: "filter then groupby (§3.2.1)",
      input:
        "filter(CharacteristicName eq 'pH')/groupby((LocationId), aggregate(ResultValue with average as Mean))",
      expected: "filter[compare] / groupby[LocationId|ResultValue average:Mean]",
    },
    {
      name: "groupby then filter on an alias (§3.3)",
      input: "groupby((LocationId), aggregate(ResultValue with average as Mean))/filter(Mean gt 7)",
      expected: "groupby[LocationId|ResultValue average:Mean] / filter[compare]",
    },
    {
      name: "compute with arithmetic (§3.2.2)",
      input: "compute(ResultValue mul 1.8 add 32 as Fahrenheit)",
      expected: "compute[(add (mul ResultValue 1.8) 32):Fahrenheit]",
    },
    {
      name: "compute with date parts, then groupby on the alias",
      input:
        "compute(year(ActivityStartDate) as Year, month(ActivityStartDate) as Month)/groupby((Year,Month))",
      expected:
        "compute[year(ActivityStartDate):Year; month(ActivityStartDate):Month] / groupby[Year,Month|]",
    },
    {
      name: "topcount (§3.1.2.1)",
      input: "groupby((LocationId), aggregate(ResultValue with sum as Total))/topcount(2, Total)",
      expected: "groupby[LocationId|ResultValue sum:Total] / topcount[2,Total]",
    },
    {
      name: "bottomcount",
      input: "bottomcount(3, ResultValue)",
      expected: "bottomcount[3,ResultValue]",
    },
    {
      name: "orderby, skip and top (§3.2.4)",
      input: "groupby((DOI), aggregate($count as N))/orderby(N desc, DOI)/skip(1)/top(2)",
      expected: "groupby[DOI|$count:N] / orderby[N-,DOI+] / skip[1] / top[2]",
    },
    {
      name: "identity (§3.1.1)",
      input: "identity",
      expected: "identity",
    },
    {
      name: "an aggregate of an expression",
      input: "aggregate(ResultValue mul 2 with max as Twice)",
      expected: "aggregate[(mul ResultValue 2) max:Twice]",
    },
    {
      name: "arithmetic precedence and parentheses",
      input: "compute((ResultValue sub 32) div 1.8 as C, ResultValue add 1 mod 2 as M)",
      expected: "compute[(div (sub ResultValue 32) 1.8):C; (add ResultValue (mod 1 2)):M]",
    },
  ] as const;
  for (const c of examples) {
    it(`parses ${c.name}`, () => assert.equal(showAll(parseApply(c.input)), c.expected));
  }

  it("keeps positions of the whole text, inside filter(...) too", () => {
    const apply = parseApply("filter(ResultValue gt 7)/aggregate($count as N)");
    const filter = apply[0]!;
    assert.equal(filter.kind, "filter");
    assert.deepEqual(filter.span, { start: 0, end: 24 });
    if (filter.kind === "filter") assert.deepEqual(filter.filter.span, { start: 7, end: 23 });
    assert.deepEqual(apply[1]!.span, { start: 25, end: 47 });
  });

  const unsupported = [
    { name: "concat", input: "concat(identity, aggregate($count as N))", position: 0 },
    { name: "expand", input: "expand(Location, filter(Id gt 1))", position: 0 },
    { name: "rollup", input: "groupby((rollup(DOI, LocationId)))", position: 9 },
    {
      name: "a navigation path",
      input: "groupby((Customer/Country), aggregate(Amount with sum as Total))",
      position: 17,
    },
    { name: "a custom aggregate", input: "aggregate(Amount)", position: 16 },
    { name: "an unknown method", input: "aggregate(ResultValue with median as M)", position: 27 },
    {
      name: "from",
      input: "aggregate(ResultValue with sum from LocationId with average as A)",
      position: 31,
    },
    { name: "a topcount inside groupby", input: "groupby((DOI), topcount(1, N))", position: 15 },
    {
      name: "a chain inside groupby",
      input: "groupby((DOI), aggregate($count as N)/filter(N gt 1))",
      position: 37,
    },
    { name: "a string function in compute", input: "compute(tolower(DOI) as D)", position: 8 },
    { name: "topsum", input: "topsum(10, ResultValue)", position: 0 },
  ] as const;
  for (const c of unsupported) {
    it(`refuses ${c.name} as unsupported, naming the position`, () => {
      assert.throws(() => parseApply(c.input), {
        name: "ODataError",
        code: "ERR_ODATA_UNSUPPORTED",
        target: "$apply",
        position: c.position,
      });
    });
  }

  const syntax = [
    { name: "an unknown transformation", input: "summarize(ResultValue)", position: 0 },
    { name: "a missing alias", input: "aggregate(ResultValue with sum)", position: 30 },
    { name: "a keyword as alias", input: "aggregate($count as and)", position: 20 },
    { name: "a missing slash", input: "identity identity", position: 9 },
    { name: "a trailing slash", input: "identity/", position: 9 },
    { name: "a bad filter, at its position", input: "filter(ResultValue gt)", position: 21 },
    { name: "a groupby without its list", input: "groupby(DOI)", position: 8 },
    { name: "a negative top", input: "top(-1)", position: 4 },
    { name: "a fractional skip", input: "skip(1.5)", position: 5 },
    { name: "an unclosed call", input: "compute(year(ActivityStartDate as Y)", position: 31 },
    { name: "an empty $apply", input: "", position: 0 },
    { name: "a wrong arity", input: "compute(round(ResultValue, 2) as R)", position: 8 },
  ] as const;
  for (const c of syntax) {
    it(`refuses ${c.name} with ERR_ODATA_SYNTAX at its position`, () => {
      assert.throws(() => parseApply(c.input), {
        name: "ApplySyntaxError",
        code: "ERR_ODATA_SYNTAX",
        target: "$apply",
        position: c.position,
      });
    });
  }

  it("refuses nesting deeper than maxDepth without overflowing the stack", () => {
    const deep = `filter(${"(".repeat(5000)}ResultValue gt 1${")".repeat(5000)})`;
    assert.throws(() => parseApply(deep, { maxLength: 100_000 }), {
      code: "ERR_ODATA_SYNTAX",
      target: "$apply",
    });
    const nots = `filter(${"not ".repeat(5000)}true)`;
    assert.throws(() => parseApply(nots, { maxLength: 100_000 }), { code: "ERR_ODATA_SYNTAX" });
    const parens = `compute(${"(".repeat(100)}ResultValue${")".repeat(100)} as X)`;
    assert.throws(() => parseApply(parens), { code: "ERR_ODATA_SYNTAX", position: 71 });
  });

  it("refuses an expression with more operators than maxDepth", () => {
    const long = `compute(ResultValue${" add 1".repeat(65)} as X)`;
    assert.throws(() => parseApply(long), { code: "ERR_ODATA_SYNTAX" });
    const ok = `compute(ResultValue${" add 1".repeat(64)} as X)`;
    assert.equal(parseApply(ok).length, 1);
  });

  it("refuses text longer than maxLength and sequences longer than maxTransformations", () => {
    assert.throws(() => parseApply("identity/".repeat(2000) + "identity"), {
      code: "ERR_ODATA_SYNTAX",
      position: 16_384,
    });
    assert.throws(() => parseApply("identity/".repeat(32) + "identity"), {
      code: "ERR_ODATA_SYNTAX",
      position: 9 * 32,
    });
    assert.equal(parseApply("identity/".repeat(31) + "identity").length, 32);
  });
});
