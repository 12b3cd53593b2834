import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  applyResultSteps,
  bindApply,
  evaluateExpr,
  type FilterSchema,
  parseApply,
  type Scalar,
} from "../../lib/odata/mod.ts";

const SCHEMA: FilterSchema = new Map([
  ["Id", { type: "integer" }],
  ["LocationId", { type: "integer" }],
  ["CharacteristicName", { type: "string" }],
  ["ResultValue", { type: "number" }],
  ["ResultUnit", { type: "string" }],
  ["ActivityStartDate", { type: "date" }],
  ["ActivityStartYear", { type: "integer" }],
  ["CreateTimestamp", { type: "datetime" }],
  ["RegionId", { type: "string", multiValued: true }],
]);

const UNGROUPABLE = new Map([["RegionId", "Cannot group by RegionId: filter by region"]]);

function bind(text: string) {
  return bindApply(parseApply(text), SCHEMA, { ungroupable: UNGROUPABLE });
}

describe("bindApply()", () => {
  it("binds groupby with aggregates to a shape of groups then aliases", () => {
    const bound = bind(
      "groupby((LocationId, CharacteristicName), aggregate(ResultValue with average as Mean, $count as N, ResultUnit with countdistinct as Units, ActivityStartDate with max as Last))",
    );
    assert.equal(bound.aggregated, true);
    assert.deepEqual(bound.shape, [
      { name: "LocationId", type: "integer" },
      { name: "CharacteristicName", type: "string" },
      { name: "Mean", type: "number" },
      { name: "N", type: "integer" },
      { name: "Units", type: "integer" },
      { name: "Last", type: "date" },
    ]);
  });

  it("joins the filters before the aggregation into one row condition", () => {
    const bound = bind(
      "filter(ResultValue gt 1)/filter(CharacteristicName eq 'pH')/aggregate($count as N)",
    );
    assert.equal(bound.filter?.kind, "and");
    assert.deepEqual(bound.shape, [{ name: "N", type: "integer" }]);
  });

  it("groups by a computed year, which stands for its expression", () => {
    const bound = bind(
      "compute(year(ActivityStartDate) as Year)/filter(Year ge 2015)/groupby((Year))",
    );
    const group = bound.groups[0]!;
    assert.equal(group.type, "integer");
    assert.equal(group.value.kind, "call");
    // The row filter reads the expression, not the alias.
    const filter = bound.filter!;
    assert.equal(filter.kind, "compare");
    if (filter.kind === "compare") assert.equal(filter.left.kind, "call");
  });

  it("binds an $apply of filters alone as not aggregated", () => {
    const bound = bind("filter(ResultValue gt 1)/identity");
    assert.equal(bound.aggregated, false);
    assert.equal(bound.filter?.kind, "compare");
  });

  it("binds steps over the aggregated rows against the aggregated shape", () => {
    const bound = bind(
      "groupby((LocationId), aggregate(ResultValue with sum as Total, $count as N))/compute(Total div N as Mean)/filter(Mean gt 2)/orderby(Mean desc)/top(3)",
    );
    assert.deepEqual(bound.steps.map((s) => s.kind), ["compute", "filter", "orderby", "top"]);
    assert.deepEqual(bound.shape.at(-1), { name: "Mean", type: "number" });
  });

  const refusals = [
    {
      name: "averaging text",
      input: "aggregate(CharacteristicName with average as A)",
      code: "ERR_ODATA_TYPE",
      position: 10,
      target: "CharacteristicName",
    },
    {
      name: "summing a date",
      input: "aggregate(ActivityStartDate with sum as S)",
      code: "ERR_ODATA_TYPE",
      position: 10,
      target: "ActivityStartDate",
    },
    {
      name: "grouping by a multi-valued field",
      input: "groupby((RegionId))",
      code: "ERR_ODATA_UNSUPPORTED",
      position: 9,
      target: "RegionId",
    },
    {
      name: "an unknown property",
      input: "groupby((Colour))",
      code: "ERR_ODATA_UNKNOWN_FIELD",
      position: 9,
      target: "Colour",
    },
    {
      name: "a property the aggregation dropped",
      input: "groupby((LocationId))/filter(ResultValue gt 1)",
      code: "ERR_ODATA_UNKNOWN_FIELD",
      position: 29,
      target: "ResultValue",
    },
    {
      name: "an alias that names a property",
      input: "aggregate($count as ResultValue)",
      code: "ERR_ODATA_QUERY_OPTION",
      position: 10,
      target: "ResultValue",
    },
    {
      name: "a repeated alias",
      input: "aggregate($count as N, ResultValue with sum as N)",
      code: "ERR_ODATA_QUERY_OPTION",
      position: 23,
      target: "N",
    },
    {
      name: "a second aggregation",
      input: "groupby((LocationId), aggregate($count as N))/aggregate(N with average as M)",
      code: "ERR_ODATA_UNSUPPORTED",
      position: 46,
      target: "$apply",
    },
    {
      name: "top before the aggregation",
      input: "top(5)/aggregate($count as N)",
      code: "ERR_ODATA_UNSUPPORTED",
      position: 0,
      target: "$apply",
    },
    {
      name: "a compute without aggregation",
      input: "compute(ResultValue mul 2 as Twice)",
      code: "ERR_ODATA_UNSUPPORTED",
      position: undefined,
      target: "$apply",
    },
    {
      name: "a row filter on an arithmetic alias",
      input: "compute(ResultValue mul 2 as Twice)/filter(Twice gt 1)/aggregate($count as N)",
      code: "ERR_ODATA_UNSUPPORTED",
      position: 43,
      target: "Twice",
    },
    {
      name: "year() of a number",
      input: "compute(year(ResultValue) as Y)/groupby((Y))",
      code: "ERR_ODATA_TYPE",
      position: 13,
      target: "ResultValue",
    },
    {
      name: "arithmetic on text",
      input: "compute(CharacteristicName add 1 as X)/groupby((X))",
      code: "ERR_ODATA_TYPE",
      position: 8,
      target: "CharacteristicName",
    },
    {
      name: "a filter comparing text with a number, inside $apply",
      input: "filter(CharacteristicName gt 1)/aggregate($count as N)",
      code: "ERR_ODATA_TYPE",
      position: 29,
      target: "CharacteristicName",
    },
  ] as const;
  for (const c of refusals) {
    it(`refuses ${c.name}`, () => {
      assert.throws(() => bind(c.input), {
        name: "ODataError",
        code: c.code,
        target: c.target,
        position: c.position,
      });
    });
  }
});

describe("evaluateExpr()", () => {
  const cases = [
    { name: "Fahrenheit", input: "ResultValue mul 1.8 add 32", value: 20, expected: 68 },
    { name: "integer div truncates", input: "ActivityStartYear div 10", value: 0, expected: 201 },
    { name: "divby does not", input: "ActivityStartYear divby 10", value: 0, expected: 201.5 },
    { name: "division by zero is null", input: "ResultValue div 0", value: 3, expected: null },
    { name: "null in, null out", input: "ResultValue add 1", value: null, expected: null },
    { name: "month of a date", input: "month(ActivityStartDate)", value: 0, expected: 7 },
  ] as const;
  for (const c of cases) {
    it(`computes ${c.name}`, () => {
      const bound = bind(`compute(${c.input} as X)/groupby((X))`);
      const row: Record<string, Scalar> = {
        ResultValue: c.value,
        ActivityStartYear: 2015,
        ActivityStartDate: "2015-07-04",
      };
      assert.equal(evaluateExpr(bound.groups[0]!.value, (name) => row[name] ?? null), c.expected);
    });
  }
});

describe("applyResultSteps()", () => {
  it("orders by the groups (null first), then filters, computes, orders and cuts", () => {
    const bound = bind(
      "groupby((CharacteristicName), aggregate(ResultValue with sum as Total, $count as N))/compute(Total divby N as Mean)/filter(N gt 1)/orderby(Mean desc)/skip(1)",
    );
    const rows: Scalar[][] = [
      ["pH", 21, 3],
      [null, 5, 2],
      ["DO", 40, 4],
      ["Temp", 1, 1],
    ];
    assert.deepEqual(applyResultSteps(rows, bound), [
      ["pH", 21, 3, 7],
      [null, 5, 2, 2.5],
    ]);
    const ordered = applyResultSteps(rows, bind("groupby((CharacteristicName))"));
    assert.deepEqual(ordered.map((row) => row[0]), [null, "DO", "Temp", "pH"]);
  });

  it("keeps the highest N with topcount and the lowest with bottomcount, without nulls", () => {
    const rows: Scalar[][] = [[1, 5], [2, null], [3, 9], [4, 1]];
    const top = bind("groupby((LocationId), aggregate(ResultValue with max as M))/topcount(2, M)");
    assert.deepEqual(applyResultSteps(rows, top).map((row) => row[0]), [3, 1]);
    const bottom = bind(
      "groupby((LocationId), aggregate(ResultValue with max as M))/bottomcount(5, M)",
    );
    assert.deepEqual(applyResultSteps(rows, bottom).map((row) => row[0]), [4, 1, 3]);
  });
});
