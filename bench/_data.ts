// Benchmark data: seeded DataStream data sets written by the demo-data
// generator into .bench-data/ (ignored by git) and reused across runs.
import { existsSync, mkdirSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { generateDatasets } from "../data/generate.ts";
import { createLogger, Progress } from "../lib/log/mod.ts";

export const ROOT = join(import.meta.dirname, "..");
export const BENCH_DIR = join(ROOT, ".bench-data");
/** Rows in each generated part; the "ten" set holds ten parts. */
export const PART_ROWS = 1_000_000;
const PART_LOCATIONS = 2_000;

/** Writes (once) the seeded part `k`: 1,000,000 observations in 8 datasets. */
export async function ensurePart(k: number): Promise<string> {
  const dir = join(BENCH_DIR, `part-${k}`);
  const marker = join(dir, "done.json");
  if (existsSync(marker)) return dir;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  // About 260 MB a part, written once and kept: said before it starts, and followed while it runs.
  console.error(
    `generating benchmark data part ${k} (${
      PART_ROWS.toLocaleString("en-US")
    } rows, about 260 MB) in ${dir}; later runs reuse it`,
  );
  const progress = new Progress({
    label: `part ${k}`,
    now: () => performance.now(),
    unit: "rows",
    log: createLogger({
      write: (line) => process.stderr.write(`${line}\n`),
      now: Date.now,
      format: "pretty",
    }),
    terminal: process.stderr.isTTY ? process.stderr : undefined,
  });
  const summary = await generateDatasets({
    out: dir,
    seed: 7_000 + k,
    observations: PART_ROWS,
    locations: PART_LOCATIONS,
    onProgress: (state) => void progress.update({ done: state.rows, total: state.totalRows }),
  });
  progress.finish({ done: summary.observations });
  writeFileSync(marker, JSON.stringify(summary));
  return dir;
}

/**
 * A datasets folder made of links to the datasets of parts `0 .. parts - 1`,
 * so that the same data can be loaded alone or together with more.
 */
export async function ensureLinked(name: string, parts: number): Promise<string> {
  const dir = join(BENCH_DIR, name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  for (let k = 0; k < parts; k++) {
    const part = await ensurePart(k);
    for (const folder of readdirSync(part, { withFileTypes: true })) {
      if (folder.isDirectory()) {
        symlinkSync(join(part, folder.name), join(dir, `p${k}-${folder.name}`));
      }
    }
  }
  return dir;
}

/** The data files of a linked folder. */
export function dataFiles(dir: string): string[] {
  return readdirSync(dir).sort().map((folder) => join(dir, folder, "data.csv"));
}

/** The best (smallest) of several timings, in milliseconds. */
export async function best(runs: number, fn: () => unknown): Promise<number> {
  let fastest = Infinity;
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    await fn();
    fastest = Math.min(fastest, performance.now() - start);
  }
  return fastest;
}

/** One benchmark's outcome, printed as the last line of its output for bench/run.ts. */
export interface BenchResult {
  readonly name: string;
  /** What the ratio means, e.g. "our load / csv-parse parse". */
  readonly measure: string;
  readonly ratio: number;
  /** The target, e.g. "<= 0.5". */
  readonly target: string;
  readonly pass: boolean;
}

/** Prints results for the runner and a human. */
export function report(results: readonly BenchResult[]): void {
  for (const result of results) {
    console.log(
      `${result.pass ? "PASS" : "FAIL"}  ${result.name}: ${result.measure} = ${
        result.ratio.toFixed(3)
      } (target ${result.target})`,
    );
  }
  console.log(`RESULTS ${JSON.stringify(results)}`);
}
