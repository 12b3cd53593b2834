// Runs the benchmarks, each in its own process, and prints their ratios.
// Usage: npm run bench [-- memory load filter index http]; npm run bench -- --help
// lists them, from each benchmark's own opening comment (what it measures, and
// its "Needs:" line: disk, tools, time).
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { BenchResult } from "./_data.ts";

const ALL = [
  "load",
  "filter",
  "index",
  "memory",
  "http",
  "http2",
  "pipeline",
  "odata",
  "apply",
  "token",
  "sync_diff",
  "sync_push",
  "storage",
  "intake",
  "deliver",
  "backends",
  "cold_start",
  "warm_start",
] as const;

/** A benchmark's opening comment: what it measures, and what it needs. */
function describeBenchmark(name: string): { about: string; needs: string } {
  const lines = readFileSync(join(import.meta.dirname, `${name}.ts`), "utf8").split("\n");
  const comment: string[] = [];
  for (const line of lines) {
    if (!line.startsWith("//")) break;
    comment.push(line.replace(/^\/\/ ?/, ""));
  }
  const needs = comment.find((line) => line.startsWith("Needs: "));
  if (needs === undefined) {
    throw new Error(`bench/${name}.ts: its opening comment lacks a "Needs:" line`);
  }
  const about = comment.slice(0, comment.indexOf(needs)).join(" ").split(/\s*\n\s*|\s{2,}/).join(
    " ",
  ).trim();
  return { about, needs: needs.slice("Needs: ".length) };
}

const args = process.argv.slice(2);
if (args.includes("--help") || args.includes("-h")) {
  console.log(
    "Usage: npm run bench [-- <name> ...]   (all of them without names; about 30 minutes and 3 GB of disk in all)\n",
  );
  console.log(
    "Each prints its figures and PASS or FAIL against its target, as a ratio against a baseline in the same run.\n",
  );
  for (const name of ALL) {
    const { about, needs } = describeBenchmark(name);
    console.log(`${name}\n  ${about}\n  Needs: ${needs}\n`);
  }
  process.exit(0);
}
const chosen = args.length > 0 ? args : [...ALL];
for (const name of chosen) {
  if (!(ALL as readonly string[]).includes(name)) {
    console.error(
      `Cannot run benchmark "${name}": choose from ${
        ALL.join(", ")
      } (npm run bench -- --help describes them)`,
    );
    process.exit(2);
  }
}
const results: BenchResult[] = [];
for (const name of chosen) {
  console.log(`\n== ${name} ==`);
  const run = spawnSync(process.execPath, [
    "--expose-gc",
    "--max-old-space-size=16384",
    "--import",
    "tsx",
    join(import.meta.dirname, `${name}.ts`),
  ], {
    stdio: ["ignore", "pipe", "inherit"],
    encoding: "utf8",
    maxBuffer: 1 << 26,
  });
  process.stdout.write(
    run.stdout.split("\n").filter((line) => !line.startsWith("RESULTS ")).join("\n"),
  );
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
  console.log(
    `${r.pass ? "PASS" : "FAIL"}  ${r.name.padEnd(34)} ${r.ratio.toFixed(3).padStart(9)}  target ${
      r.target.padEnd(8)
    } ${r.measure}`,
  );
}
if (results.some((r) => !r.pass)) process.exitCode = 1;
