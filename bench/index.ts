// Index: selective queries take no more than 1.5x as long at 10,000,000 rows
// as at 1,000,000 rows for the same result. The 10M store holds the 1M
// store's datasets plus nine more, so each query has the same answer in both.
// Needs: 2.6 GB of disk (parts 0 to 9, generated once, about 30 s), 8 GB of memory, about 5 minutes.
import { compileFilter, countMatches } from "../lib/columnar/mod.ts";
import {
  COLLECTIONS,
  loadDatasets,
  prepareFilter,
  queryPage,
  type WaterStore,
} from "../lib/water/mod.ts";
import { type BenchResult, ensureLinked, report } from "./_data.ts";

const observations = COLLECTIONS.get("Observations")!;
const one = (await loadDatasets(await ensureLinked("one", 1))).store;
const ten = (await loadDatasets(await ensureLinked("ten", 10))).store;
console.log(`stores: ${one.observationCount} and ${ten.observationCount} observations`);

// A dataset of part 0 and a location of it with many rows, located in both stores.
const doi = one.datasets[3]!.doi;
function locationIdOf(store: WaterStore): number {
  const d = store.datasets.findIndex((dataset) => dataset.doi === doi);
  let best = store.datasetLocationStarts[d]!;
  for (let l = best; l < store.datasetLocationStarts[d + 1]!; l++) {
    const rows = store.locationRowStarts[l + 1]! - store.locationRowStarts[l]!;
    if (rows > store.locationRowStarts[best + 1]! - store.locationRowStarts[best]!) best = l;
  }
  return best + 1;
}

interface Query {
  readonly name: string;
  readonly filter: (store: WaterStore) => string;
}
const QUERIES: readonly Query[] = [
  { name: "LocationId eq N", filter: (store) => `LocationId eq ${locationIdOf(store)}` },
  {
    name: "DOI and CharacteristicName",
    filter: () => `DOI eq '${doi}' and CharacteristicName eq 'pH'`,
  },
];

/** Runs a query the way the service does: parse, bind, plan, collect a page of up to 10,000 rows, count all. */
function run(store: WaterStore, text: string): { rows: number; total: number } {
  const filter = prepareFilter(observations, text);
  const page = queryPage(store, { collection: observations, filter }, undefined, 10_000);
  const total = countMatches(compileFilter(filter, store.view("observation", observations.filter)));
  return { rows: page.rows.length, total };
}

const results: BenchResult[] = [];
for (const query of QUERIES) {
  const a = run(one, query.filter(one));
  const b = run(ten, query.filter(ten));
  if (a.rows !== b.rows || a.total !== b.total) {
    throw new Error(`${query.name}: results differ ${JSON.stringify({ a, b })}`);
  }
  let small = Infinity;
  let large = Infinity;
  for (let round = 0; round < 200; round++) {
    let t = performance.now();
    run(one, query.filter(one));
    small = Math.min(small, performance.now() - t);
    t = performance.now();
    run(ten, query.filter(ten));
    large = Math.min(large, performance.now() - t);
  }
  console.log(
    `${query.name}: ${a.total} matching rows (page of ${a.rows}); 1M store ${
      (small * 1000).toFixed(0)
    } µs, 10M store ${(large * 1000).toFixed(0)} µs`,
  );
  results.push({
    name: `index ${query.name}`,
    measure: "time at 10M rows / time at 1M rows",
    ratio: large / small,
    target: "<= 1.5",
    pass: large / small <= 1.5,
  });
}
report(results);
