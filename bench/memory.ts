// Memory: 10,000,000 observations in the store cost at most 150 bytes each
// (heap + external, which already counts array buffers), indexes included.
// Side by side: a naive store of one JS object per row, measured on 1,000,000 rows.
// Needs: 2.6 GB of disk (parts 0 to 9), 8 GB of memory, about 5 minutes.
import { spawnSync } from "node:child_process";
import { createReadStream } from "node:fs";
import { parse } from "csv-parse";
import { loadDatasets } from "../lib/water/mod.ts";
import { dataFiles, ensureLinked, report } from "./_data.ts";

const NUMERIC = new Set([
  "MonitoringLocationLatitude",
  "MonitoringLocationLongitude",
  "ResultValue",
  "ActivityDepthHeightMeasure",
  "ResultDetectionQuantitationLimitMeasure",
  "MonitoringLocationHorizontalAccuracyMeasure",
  "MonitoringLocationVerticalMeasure",
]);

function settle(): NodeJS.MemoryUsage {
  for (let i = 0; i < 4; i++) global.gc!();
  return process.memoryUsage();
}

function used(m: NodeJS.MemoryUsage): number {
  // `external` includes `arrayBuffers` (Node docs), so heap + external counts everything once.
  return m.heapUsed + m.external;
}

if (process.argv[2] === "objects") {
  const dir = await ensureLinked("one", 1);
  const before = settle();
  const rows: Record<string, string | number | null>[] = [];
  for (const file of dataFiles(dir)) {
    let header: string[] | undefined;
    for await (const record of createReadStream(file).pipe(parse())) {
      const fields = record as string[];
      if (header === undefined) {
        header = fields;
        continue;
      }
      const row: Record<string, string | number | null> = {};
      header.forEach((name, i) => {
        const text = fields[i]!;
        row[name] = text === "" ? null : NUMERIC.has(name) ? Number(text) : text;
      });
      rows.push(row);
    }
  }
  const after = settle();
  console.log(
    JSON.stringify({ rows: rows.length, perRow: (used(after) - used(before)) / rows.length }),
  );
  process.exit(0);
}

const baseline = spawnSync(process.execPath, [
  "--expose-gc",
  "--max-old-space-size=16384",
  "--import",
  "tsx",
  import.meta.filename,
  "objects",
], {
  encoding: "utf8",
  stdio: ["ignore", "pipe", "inherit"],
});
const objects = JSON.parse(baseline.stdout.trim().split("\n").at(-1)!) as {
  rows: number;
  perRow: number;
};
console.log(
  `one JS object per row (${objects.rows} rows): ${objects.perRow.toFixed(0)} bytes per row`,
);

const dir = await ensureLinked("ten", 10);
const before = settle();
const started = performance.now();
const { store, report: loaded } = await loadDatasets(dir);
const seconds = (performance.now() - started) / 1000;
const after = settle();
const rows = store.observationCount;
const perRow = (used(after) - used(before)) / rows;
console.log(
  `loaded ${rows} observations, ${store.locationCount} locations, ${store.datasetCount} datasets in ${
    seconds.toFixed(1)
  } s (${loaded.failures.length} failures)`,
);
console.log(
  `heap ${(after.heapUsed - before.heapUsed) / 1e6 | 0} MB, external ${
    (after.external - before.external) / 1e6 | 0
  } MB (array buffers ${(after.arrayBuffers - before.arrayBuffers) / 1e6 | 0} MB), rss ${
    after.rss / 1e6 | 0
  } MB`,
);
console.log(
  `tributary store: ${perRow.toFixed(1)} bytes per row (${
    (objects.perRow / perRow).toFixed(1)
  }x less than one object per row)`,
);
report([
  {
    name: "memory (10M rows)",
    measure: "bytes per row / 150",
    ratio: perRow / 150,
    target: "<= 1",
    pass: perRow <= 150 && rows >= 10_000_000,
  },
  {
    name: "memory vs object per row",
    measure: "our bytes per row / object-per-row bytes",
    ratio: perRow / objects.perRow,
    target: "< 1",
    pass: perRow < objects.perRow,
  },
]);
