import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  type Column,
  type ColumnTable,
  compileFilter,
  MatchCursor,
} from "../../lib/columnar/mod.ts";
import {
  applyResultSteps,
  bindApply,
  type BoundApply,
  evaluateExpr,
  evaluateFilter,
  type FilterSchema,
  parseApply,
  type Scalar,
} from "../../lib/odata/mod.ts";
import { COLLECTIONS } from "../../lib/water/fields.ts";
import { aggregateRows } from "../../lib/water/query/aggregate_rows.ts";
import type { GroupedColumns } from "../../lib/water/query/grouped_columns.ts";
import { AggregateCache, aggregateQuery, prepareApply } from "../../lib/water/query/query_apply.ts";
import { createPrng, type Prng } from "../_helpers/prng.ts";
import { buildStore, FIXTURE_HEADER, fixtureRow } from "../_helpers/water.ts";
import { formatCsvRow } from "../../lib/water/mod.ts";

const EPSILON = Number.EPSILON / 2;

/** A table of plain number and text columns, for the engine alone. */
function table(
  columns: Record<string, readonly Scalar[]>,
): { table: ColumnTable; schema: FilterSchema } {
  const length = Object.values(columns)[0]!.length;
  const built = new Map<string, Column>();
  const schema = new Map<string, { type: "number" | "string" }>();
  for (const [name, values] of Object.entries(columns)) {
    if (values.every((v) => typeof v === "number" || v === null)) {
      built.set(name, {
        kind: "number",
        values: Float64Array.from(values, (v) => (v === null ? Number.NaN : Number(v))),
      });
      schema.set(name, { type: "number" });
    } else {
      const dictionary: Scalar[] = [null, ...new Set(values.filter((v) => v !== null))];
      built.set(name, {
        kind: "dict",
        values: dictionary,
        codes: Uint8Array.from(values, (v) => dictionary.indexOf(v)),
      });
      schema.set(name, { type: "string" });
    }
  }
  return { table: { length, column: (name) => built.get(name) }, schema };
}

function run(
  t: { table: ColumnTable; schema: FilterSchema },
  apply: string,
  maxGroups?: number,
  maxDistinct?: number,
) {
  const bound = bindApply(parseApply(apply), t.schema);
  const cursor = new MatchCursor(compileFilter(bound.filter, t.table));
  const rows = aggregateRows(t.table, cursor, bound, {
    ...(maxGroups === undefined ? {} : { maxGroups }),
    ...(maxDistinct === undefined ? {} : { maxDistinct }),
  });
  return applyResultSteps(rows, bound);
}

describe("aggregateRows()", () => {
  it("sums with compensation where a plain loop loses the small terms", () => {
    const t = table({ X: [1, 1e100, 1, -1e100], G: ["a", "a", "a", "a"] });
    assert.deepEqual(run(t, "aggregate(X with sum as S, X with average as A)"), [[2, 0.5]]);
    let naive = 0;
    for (const x of [1, 1e100, 1, -1e100]) naive += x;
    assert.equal(naive, 0);
  });

  it("sums past the largest double to Infinity, not NaN, through the error term", () => {
    const t = table({ X: [1.7e308, 1.7e308, 1], G: ["a", "a", "b"] });
    assert.deepEqual(run(t, "groupby((G), aggregate(X with sum as S, X with average as A))"), [
      ["a", Infinity, Infinity],
      ["b", 1, 1],
    ]);
  });

  it("leaves nulls out of every aggregate but $count", () => {
    const t = table({ X: [null, 3, null, 5], G: ["a", null, "a", "b"] });
    assert.deepEqual(
      run(
        t,
        "groupby((G), aggregate($count as N, X with sum as S, X with min as Lo, G with countdistinct as D))",
      ),
      [
        [null, 1, 3, 3, 0],
        ["a", 2, null, null, 1],
        ["b", 1, 5, 5, 1],
      ],
    );
  });

  it("answers one row for aggregate() over no rows, and none for groupby", () => {
    const t = table({ X: [1, 2], G: ["a", "b"] });
    assert.deepEqual(
      run(t, "filter(X gt 5)/aggregate($count as N, X with sum as S, X with max as M)"),
      [[0, null, null]],
    );
    assert.deepEqual(run(t, "filter(X gt 5)/groupby((G), aggregate($count as N))"), []);
  });

  it("stops with ERR_WATER_TOO_MANY_GROUPS above maxGroups, through a dense table or a hash", () => {
    const t = table({ X: [1, 2, 3, 4], G: ["a", "b", "c", "d"] });
    assert.equal(run(t, "groupby((G))", 4).length, 4);
    assert.throws(() => run(t, "groupby((G))", 3), {
      name: "WaterError",
      code: "ERR_WATER_TOO_MANY_GROUPS",
    });
    assert.throws(() => run(t, "groupby((X))", 3), { code: "ERR_WATER_TOO_MANY_GROUPS" });
  });

  it("stops with ERR_WATER_TOO_MANY_GROUPS past maxDistinct (value, group) pairs of a countdistinct", () => {
    // Pairs: (1,a) (2,a) (2,b) (3,b); a repeated pair (2,a) is not counted again.
    const t = table({ X: [1, 2, 2, 2, 3], G: ["a", "a", "a", "b", "b"] });
    const apply = "groupby((G), aggregate(X with countdistinct as D))";
    assert.deepEqual(run(t, apply, undefined, 4), [["a", 2], ["b", 2]]);
    assert.throws(() => run(t, apply, undefined, 3), {
      name: "WaterError",
      code: "ERR_WATER_TOO_MANY_GROUPS",
      message: /more than 3 distinct values/,
    });
  });

  it("groups by numbers and expressions through a hash", () => {
    const t = table({ X: [1.5, 2.5, 1.5, null], Y: [1, 1, 2, 2] });
    assert.deepEqual(run(t, "compute(X mul Y as P)/groupby((P), aggregate($count as N))"), [
      [null, 1],
      [1.5, 1],
      [2.5, 1],
      [3, 1],
    ]);
  });
});

// Property test: random datasets, filters, groupings and aggregates, against plain rows.

const CHARACTERISTICS = [
  "pH",
  "Temperature, water",
  "Dissolved oxygen (DO)",
  "Specific conductance",
];
const UNITS = ["None", "deg C", "mg/L", ""];

interface PlainRow {
  readonly values: Readonly<Record<string, Scalar>>;
}

function randomValue(prng: Prng): string {
  if (prng.next() < 0.1) return "";
  const scale = prng.pick([1, 100, 1e6, 1e12]);
  const sign = prng.next() < 0.3 ? -1 : 1;
  return (sign * prng.next() * scale).toFixed(2);
}

function randomDate(prng: Prng): string {
  const month = 1 + prng.int(12);
  const day = 1 + prng.int(28);
  return `${2010 + prng.int(14)}-${String(month).padStart(2, "0")}-${String(day).padStart(2, "0")}`;
}

/** A store of 1 to 3 random datasets, and the same rows as plain records. */
function randomData(prng: Prng) {
  const datasets = [];
  const plain: PlainRow[] = [];
  const count = 1 + prng.int(3);
  for (let d = 0; d < count; d++) {
    const doi = `10.25976/prop-${d}`;
    const name = `Set ${d}`;
    let csv = formatCsvRow(FIXTURE_HEADER);
    const rows = prng.int(400);
    for (let r = 0; r < rows; r++) {
      const l = prng.int(12);
      const value = randomValue(prng);
      const depth = prng.next() < 0.5 ? "" : String(prng.int(30));
      const record = {
        MonitoringLocationID: `L${l}`,
        MonitoringLocationName: `Location ${l}`,
        MonitoringLocationType: ["Lake/Pond", "River/Stream", "Estuary"][l % 3]!,
        MonitoringLocationLatitude: String(44 + l / 10),
        CharacteristicName: prng.pick(CHARACTERISTICS),
        ResultValue: value,
        ResultUnit: prng.pick(UNITS),
        ActivityStartDate: randomDate(prng),
        ActivityDepthHeightMeasure: depth,
      };
      csv += fixtureRow(record);
      plain.push({
        values: {
          DOI: doi,
          DatasetName: name,
          MonitoringLocationID: record.MonitoringLocationID,
          MonitoringLocationType: record.MonitoringLocationType,
          MonitoringLocationLatitude: Number(record.MonitoringLocationLatitude),
          CharacteristicName: record.CharacteristicName,
          ResultValue: value === "" ? null : Number(value),
          ResultUnit: record.ResultUnit === "" ? null : record.ResultUnit,
          ActivityStartDate: record.ActivityStartDate,
          ActivityStartYear: Number(record.ActivityStartDate.slice(0, 4)),
          ActivityDepthHeightMeasure: depth === "" ? null : Number(depth),
        },
      });
    }
    datasets.push({
      folder: `set${d}`,
      metadata: { DOI: doi, DatasetName: name, RegionIds: ["hub.atlantic"] },
      csv,
    });
  }
  return { store: buildStore(datasets).store, plain };
}

const FILTERS = [
  "CharacteristicName eq 'pH'",
  "ResultValue gt 0",
  "ResultValue ge 100 or ResultUnit eq null",
  "MonitoringLocationType ne 'Estuary' and ActivityStartYear ge 2015",
  "DOI eq '10.25976/prop-1'",
  "month(ActivityStartDate) le 6",
  "MonitoringLocationLatitude lt 44.5",
];
const GROUPS = [
  "CharacteristicName",
  "ResultUnit",
  "MonitoringLocationID",
  "MonitoringLocationType",
  "DOI",
  "DatasetName",
  "ActivityStartYear",
  "Year",
  "Month",
  "ActivityDepthHeightMeasure",
  "MonitoringLocationLatitude",
];
const AGGREGATES = [
  "ResultValue with sum as {}",
  "ResultValue with average as {}",
  "ResultValue with min as {}",
  "ResultValue with max as {}",
  "$count as {}",
  "ResultValue with countdistinct as {}",
  "MonitoringLocationID with countdistinct as {}",
  "ActivityStartDate with min as {}",
  "ActivityStartDate with max as {}",
  "CharacteristicName with max as {}",
  "ResultValue mul 2 add 1 with sum as {}",
  "MonitoringLocationLatitude with average as {}",
  "year(ActivityStartDate) with max as {}",
  "ActivityDepthHeightMeasure with average as {}",
  "ResultValue mul ActivityDepthHeightMeasure with sum as {}",
];

function randomApply(prng: Prng): string {
  const parts: string[] = [];
  if (prng.next() < 0.6) parts.push(`filter(${prng.pick(FILTERS)})`);
  parts.push("compute(year(ActivityStartDate) as Year, month(ActivityStartDate) as Month)");
  const groups = [...new Set(Array.from({ length: prng.int(4) }, () => prng.pick(GROUPS)))];
  const aggregates = Array.from(
    { length: 1 + prng.int(4) },
    (_, i) => prng.pick(AGGREGATES).replace("{}", `A${i}`),
  );
  parts.push(
    groups.length === 0 && prng.next() < 0.8
      ? `aggregate(${aggregates.join(", ")})`
      : `groupby((${groups.length === 0 ? "CharacteristicName" : groups.join(",")})${
        prng.next() < 0.2 ? "" : `, aggregate(${aggregates.join(", ")})`
      })`,
  );
  return parts.join("/");
}

/** Sums exactly, then rounds once (Shewchuk's partials, as Python's `math.fsum`). */
function exactSum(values: readonly number[]): number {
  const partials: number[] = [];
  for (let x of values) {
    let i = 0;
    for (let y of partials) {
      if (Math.abs(x) < Math.abs(y)) [x, y] = [y, x];
      const hi = x + y;
      const lo = y - (hi - x);
      if (lo !== 0) partials[i++] = lo;
      x = hi;
    }
    partials.length = i;
    partials.push(x);
  }
  return partials.reduce((a, b) => a + b, 0);
}

/** The reference: the same `$apply` computed from plain records, one object per row. */
function reference(plain: readonly PlainRow[], apply: BoundApply) {
  const rows = plain.filter((row) =>
    apply.filter === undefined || evaluateFilter(apply.filter, (name) => row.values[name] ?? null)
  );
  const groups = new Map<string, { keys: Scalar[]; rows: PlainRow[] }>();
  if (apply.groups.length === 0) groups.set("[]", { keys: [], rows: [] });
  for (const row of rows) {
    const get = (name: string): Scalar => row.values[name] ?? null;
    const keys = apply.groups.map((g) => evaluateExpr(g.value, get));
    const id = JSON.stringify(keys);
    let group = groups.get(id);
    if (group === undefined) groups.set(id, group = { keys, rows: [] });
    group.rows.push(row);
  }
  return [...groups.values()].map((group) => {
    const out: { value: Scalar; inputs: number[] }[] = group.keys.map((value) => ({
      value,
      inputs: [],
    }));
    for (const aggregate of apply.aggregates) {
      if (aggregate.kind === "count") {
        out.push({ value: group.rows.length, inputs: [] });
        continue;
      }
      const values = group.rows
        .map((row) => evaluateExpr(aggregate.value, (name) => row.values[name] ?? null))
        .filter((v): v is Exclude<Scalar, null> => v !== null);
      const sorted = [...values].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
      const numbers = values as number[];
      switch (aggregate.method) {
        case "sum":
          out.push({ value: values.length === 0 ? null : exactSum(numbers), inputs: numbers });
          break;
        case "average":
          out.push({
            value: values.length === 0 ? null : exactSum(numbers) / values.length,
            inputs: numbers,
          });
          break;
        case "min":
          out.push({ value: sorted[0] ?? null, inputs: [] });
          break;
        case "max":
          out.push({ value: sorted.at(-1) ?? null, inputs: [] });
          break;
        case "countdistinct":
          out.push({ value: new Set(values).size, inputs: [] });
          break;
      }
    }
    return out;
  });
}

describe("aggregateRows() on random data", () => {
  it("equals the plain-rows reference: counts, min, max exactly; sums and averages within the bound", () => {
    const seed = 20261128;
    const prng = createPrng(seed);
    const records = COLLECTIONS.get("Records")!;
    let checked = 0;
    for (let round = 0; round < 12; round++) {
      const { store, plain } = randomData(prng);
      for (let q = 0; q < 25; q++) {
        const text = randomApply(prng);
        const apply = prepareApply(records, text);
        const got = applyResultSteps(aggregateQuery(store, { collection: records, apply }), apply);
        const expected = reference(plain, apply);
        const sortedExpected = applyResultSteps(
          expected.map((row) => row.map((c) => c.value)),
          apply,
        );
        const context = `seed ${seed}, round ${round}, $apply=${text}`;
        assert.equal(got.length, expected.length, context);
        const byKey = new Map(
          expected.map((
            row,
          ) => [JSON.stringify(row.slice(0, apply.groups.length).map((c) => c.value)), row]),
        );
        assert.deepEqual(
          got.map((row) => row.slice(0, apply.groups.length)),
          sortedExpected.map((row) => row.slice(0, apply.groups.length)),
          context,
        );
        for (const row of got) {
          const want = byKey.get(JSON.stringify(row.slice(0, apply.groups.length)))!;
          apply.aggregates.forEach((aggregate, a) => {
            const i = apply.groups.length + a;
            const value = row[i]!;
            const cell = want[i]!;
            const approximate = aggregate.kind === "with" &&
              (aggregate.method === "sum" || aggregate.method === "average");
            if (!approximate || cell.value === null || value === null) {
              assert.equal(value, cell.value, `${context}: ${aggregate.alias}`);
              return;
            }
            // Neumaier: |error| <= 2ε|S| + O(nε²)Σ|x|; an average adds a rounding; the reference one more.
            const n = cell.inputs.length;
            const magnitude = exactSum(cell.inputs.map(Math.abs)) /
              (aggregate.kind === "with" && aggregate.method === "average" ? n : 1);
            const bound = 4 * EPSILON * Math.abs(cell.value as number) +
              4 * n * EPSILON * EPSILON * magnitude + Number.MIN_VALUE;
            const error = Math.abs((value as number) - (cell.value as number));
            assert.ok(
              error <= bound,
              `${context}: ${aggregate.alias} = ${value}, want ${cell.value} ± ${bound}`,
            );
          });
          checked++;
        }
      }
    }
    assert.ok(checked > 200, `only ${checked} groups checked`);
  });
});

describe("prepareApply()", () => {
  it("refuses grouping by RegionId, saying to filter by region", () => {
    assert.throws(() => prepareApply(COLLECTIONS.get("Observations")!, "groupby((RegionId))"), {
      code: "ERR_ODATA_UNSUPPORTED",
      target: "RegionId",
      position: 9,
      message: /filter by region/,
    });
  });

  it("accepts a region filter before grouping", () => {
    const apply = prepareApply(
      COLLECTIONS.get("Observations")!,
      "filter(RegionId eq 'hub.atlantic')/groupby((LocationId), aggregate($count as N))",
    );
    assert.equal(apply.aggregated, true);
  });

  it("refuses $apply on /Metadata", () => {
    assert.throws(() => prepareApply(COLLECTIONS.get("Metadata")!, "aggregate($count as N)"), {
      code: "ERR_ODATA_UNSUPPORTED",
      target: "$apply",
    });
  });

  it("groups /Locations by location and dataset fields, never by an observation's", () => {
    const locations = COLLECTIONS.get("Locations")!;
    const apply = prepareApply(
      locations,
      "filter(CharacteristicName eq 'pH')/groupby((DOI,MonitoringLocationType), aggregate(Latitude with average as L))",
    );
    assert.deepEqual(apply.shape.map((p) => p.name), ["DOI", "MonitoringLocationType", "L"]);
    assert.throws(() => prepareApply(locations, "groupby((ActivityStartYear))"), {
      code: "ERR_ODATA_UNSUPPORTED",
      target: "ActivityStartYear",
      position: 9,
    });
    assert.throws(
      () =>
        prepareApply(locations, "filter(ResultValue gt 1)/filter(Latitude gt 2)/groupby((DOI))"),
      { code: "ERR_ODATA_UNSUPPORTED", target: "$apply", position: 25 },
    );
  });
});

describe("AggregateCache", () => {
  it("gives the groups kept under a key without computing them again, and lets the oldest go", () => {
    const cache = new AggregateCache(40);
    let computed = 0;
    const rows = (n: number) => (): GroupedColumns => {
      computed++;
      const values = Float64Array.from({ length: n }, (_, i) => i);
      const column = { kind: "numbers", values } as const;
      return { count: n, keys: 0, columns: [column, column], order: new Uint32Array(n) };
    };
    const first = cache.get("a", rows(5));
    assert.equal(cache.get("a", rows(5)), first);
    assert.equal(computed, 1);
    cache.get("b", rows(5));
    cache.get("c", rows(5));
    cache.get("d", rows(5));
    // 4 × 10 values fill it; a fifth result lets the least recently used ("a") go.
    cache.get("e", rows(5));
    computed = 0;
    cache.get("a", rows(5));
    assert.equal(computed, 1);
    // A result over a quarter of the budget is not kept.
    cache.get("big", rows(6));
    cache.get("big", rows(6));
    assert.equal(computed, 3);
  });

  it("counts a column of any values (boxed, a kept ordered result) as four cells a value", () => {
    const cache = new AggregateCache(40);
    let computed = 0;
    const column = (kind: "numbers" | "values", n: number) => (): GroupedColumns => {
      computed++;
      const order = new Uint32Array(n);
      return kind === "numbers"
        ? { count: n, keys: 0, columns: [{ kind, values: new Float64Array(n) }], order }
        : { count: n, keys: 0, columns: [{ kind, values: new Array(n).fill(1) }], order };
    };
    // 3 numbers are 3 cells, kept; 3 values are 12, over a quarter of 40, not kept.
    cache.get("numbers", column("numbers", 3));
    cache.get("numbers", column("numbers", 3));
    assert.equal(computed, 1);
    cache.get("values", column("values", 3));
    cache.get("values", column("values", 3));
    assert.equal(computed, 3);
  });
});
