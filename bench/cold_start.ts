// Cold start: how long a fresh Node process takes to import one domain of the
// built package (tributary/odata) against the whole root (tributary), each in
// its own process, alternating, median of the runs. Target: the odata entry
// point at most 0.3x the root. Also printed: the root as it had to be
// imported before there was a build (lib/mod.ts through tsx).
// Needs: npm run build (dist/, done by the benchmark), about 1 minute.
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { report, ROOT } from "./_data.ts";
import { median } from "./_processes.ts";

const RUNS = Number(process.env["BENCH_COLD_RUNS"] ?? 21);

const build = spawnSync(process.execPath, ["--import", "tsx", join(ROOT, "scripts", "build.ts")], {
  cwd: ROOT,
  encoding: "utf8",
});
if (build.status !== 0) throw new Error(`build failed: ${build.stderr}`);

/** Milliseconds one fresh process spends in `import(specifier)`. */
function importTime(specifier: string, loader: readonly string[] = []): number {
  const script = `const t = performance.now(); await import(${
    JSON.stringify(specifier)
  }); process.stdout.write(String(performance.now() - t));`;
  const run = spawnSync(process.execPath, [...loader, "--input-type=module", "-e", script], {
    cwd: ROOT,
    encoding: "utf8",
  });
  if (run.status !== 0) throw new Error(`import ${specifier} failed: ${run.stderr}`);
  return Number(run.stdout);
}

// The package imports itself by name from its own folder, through its exports.
const times = { odata: [] as number[], root: [] as number[], source: [] as number[] };
for (let i = 0; i < RUNS; i++) {
  times.odata.push(importTime("tributary/odata"));
  times.root.push(importTime("tributary"));
  if (i % 3 === 0) times.source.push(importTime(join(ROOT, "lib", "mod.ts"), ["--import", "tsx"]));
}
const odata = median(times.odata);
const root = median(times.root);
const source = median(times.source);
console.log(
  `import("tributary/odata") ${odata.toFixed(1)} ms, import("tributary") ${
    root.toFixed(1)
  } ms (built, median of ${RUNS} processes each)`,
);
console.log(
  `lib/mod.ts through tsx, as before the build: ${
    source.toFixed(1)
  } ms (median of ${times.source.length})`,
);
const ratio = odata / root;
report([
  {
    name: "cold start tributary/odata",
    measure: "import time of tributary/odata / of the whole root, built",
    ratio,
    target: "<= 0.3",
    pass: ratio <= 0.3,
  },
  {
    name: "cold start vs tsx source",
    measure: "import time of tributary/odata / lib/mod.ts through tsx (informational)",
    ratio: odata / source,
    target: "none",
    pass: true,
  },
]);
