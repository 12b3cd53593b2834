// Runs the benchmarks, each in its own process, and prints their ratios.
// Usage: npm run bench [-- memory load filter index http]
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import type { BenchResult } from "./_data.ts";

const ALL = ["load", "filter", "index", "memory", "http", "http2", "odata", "token", "sync_diff", "storage", "intake", "deliver", "backends", "cold_start"] as const;
const chosen = process.argv.slice(2).length > 0 ? process.argv.slice(2) : [...ALL];
const results: BenchResult[] = [];
for (const name of chosen) {
  if (!(ALL as readonly string[]).includes(name)) {
    console.error(`Cannot run benchmark "${name}": choose from ${ALL.join(", ")}`);
    process.exit(2);
  }
  console.log(`\n== ${name} ==`);
  const run = spawnSync(process.execPath, ["--expose-gc", "--max-old-space-size=16384", "--import", "tsx", join(import.meta.dirname, `${name}.ts`)], {
    stdio: ["ignore", "pipe", "inherit"],
    encoding: "utf8",
    maxBuffer: 1 << 26,
  });
  process.stdout.write(run.stdout.split("\n").filter((line) => !line.startsWith("RESULTS ")).join("\n"));
  const line = run.stdout.split("\n").find((l) => l.startsWith("RESULTS "));
  if (run.status !== 0 || line === undefined) {
    console.error(`benchmark ${name} failed (exit ${run.status})`);
    process.exitCode = 1;
    continue;
  }
  results.push(...(JSON.parse(line.slice("RESULTS ".length)) as BenchResult[]));
}
console.log("\n== summary ==");
for (const r of results) {
  console.log(`${r.pass ? "PASS" : "FAIL"}  ${r.name.padEnd(34)} ${r.ratio.toFixed(3).padStart(9)}  target ${r.target.padEnd(8)} ${r.measure}`);
}
if (results.some((r) => !r.pass)) process.exitCode = 1;
