// Load: reading DataStream CSV files into the store, against csv-parse merely
// parsing the same files into arrays. Target: at least 2x faster.
// Needs: 260 MB of disk (benchmark data part 0, generated once into .bench-data/), about 1 minute.
import { createReadStream } from "node:fs";
import { parse } from "csv-parse";
import { loadDatasets } from "../lib/water/mod.ts";
import { best, dataFiles, ensureLinked, report } from "./_data.ts";

const dir = await ensureLinked("one", 1);
const files = dataFiles(dir);

async function csvParse(): Promise<number> {
  let rows = 0;
  for (const file of files) {
    const parser = createReadStream(file, { highWaterMark: 1 << 20 }).pipe(
      parse({ relax_column_count: false }),
    );
    for await (const record of parser) rows += (record as string[]).length > 0 ? 1 : 0;
  }
  return rows - files.length;
}

async function ours(): Promise<number> {
  const { store } = await loadDatasets(dir);
  return store.observationCount;
}

const counted = { csvParse: await csvParse(), ours: await ours() };
if (counted.csvParse !== counted.ours) {
  throw new Error(`row counts differ: ${JSON.stringify(counted)}`);
}
let peer = Infinity;
let mine = Infinity;
for (let round = 0; round < 3; round++) {
  global.gc?.();
  peer = Math.min(peer, await best(1, csvParse));
  global.gc?.();
  mine = Math.min(mine, await best(1, ours));
}
console.log(`rows: ${counted.ours} in ${files.length} files`);
console.log(
  `csv-parse, parse only: ${peer.toFixed(0)} ms (${
    (counted.ours / peer * 1000 / 1e6).toFixed(2)
  } M rows/s)`,
);
console.log(
  `tributary loadDatasets: ${mine.toFixed(0)} ms (${
    (counted.ours / mine * 1000 / 1e6).toFixed(2)
  } M rows/s)`,
);
report([{
  name: "load (1M rows)",
  measure: "our load time / csv-parse parse time",
  ratio: mine / peer,
  target: "<= 0.5",
  pass: mine / peer <= 0.5,
}]);
