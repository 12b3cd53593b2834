// The test command (`npm test`): every suite in test/<domain>/, three files at
// a time, the longest first. `node --test` sorts the files it is given by name,
// so a suite of minutes whose name sorts late (test/relay/kafka_queue.test.ts)
// started late and ran nearly alone at the end; node:test's run() keeps the
// order it is given. How long each file took is kept in test/durations.json,
// which a run of the whole suite rewrites, and files start longest first; a
// file not in it yet starts before them, as if it were long (the
// multi-process suites of test/e2e/ first, then those on a real Kafka, Redis
// or PostgreSQL, then the rest).
// Arguments: the files to run instead of all, e.g.
//   npm test -- test/sync/revision_log.test.ts
// Reports as `node --test` does (spec on a terminal, TAP otherwise); exits 1
// when a test fails.
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { run } from "node:test";
import { spec, tap } from "node:test/reporters";

const ROOT = join(import.meta.dirname, "..");
const CONCURRENCY = 3;

/** Every test file in test/<domain>/, relative to the root. */
function allFiles(): string[] {
  const files: string[] = [];
  for (const domain of readdirSync(join(ROOT, "test"), { withFileTypes: true })) {
    if (!domain.isDirectory()) continue;
    for (const name of readdirSync(join(ROOT, "test", domain.name))) {
      if (name.endsWith(".test.ts")) files.push(join("test", domain.name, name));
    }
  }
  return files.sort();
}

/** How early a file of unknown length starts: the multi-process suites, then those on a real backend, then the rest. */
function kind(file: string): number {
  if (file.startsWith(join("test", "e2e"))) return 0;
  if (/kafka|redis|postgres/.test(file)) return 1;
  return 2;
}

const DURATIONS = join(ROOT, "test", "durations.json");

/** Seconds each file took in the last run of the whole suite, by path relative to the root. */
function durations(): Map<string, number> {
  try {
    return new Map(
      Object.entries(JSON.parse(readFileSync(DURATIONS, "utf8")) as Record<string, number>),
    );
  } catch {
    return new Map();
  }
}

const given = process.argv.slice(2);
const measured = durations();
// Unmeasured files first, by kind (as if long); then the measured ones, longest first; ties by name.
const order = (file: string): readonly [number, number] => {
  const seconds = measured.get(file);
  return seconds === undefined ? [0, kind(file)] : [1, -seconds];
};
const files = (given.length > 0 ? given.map((file) => relative(ROOT, resolve(file))) : allFiles())
  .sort((a, b) => order(a)[0] - order(b)[0] || order(a)[1] - order(b)[1])
  .map((file) => join(ROOT, file));
// forceExit: a file whose tests have all ended exits even if a handle it
// forgot keeps its event loop alive, so a leak there (a test helper's socket
// left half-open) cannot hold the whole run until CI's limit.
const stream = run({ files, concurrency: CONCURRENCY, forceExit: true });
const took = new Map<string, number>();
// Every failed test, named with its file, listed again once the run has ended:
// TAP puts a failure among thousands of lines, and CI shows only the tail.
const failed: string[] = [];
stream.on(
  "test:fail",
  (data: { name: string; nesting: number; file?: string; details: { error?: unknown } }) => {
    process.exitCode = 1;
    const where = data.file === undefined ? "" : `${relative(ROOT, data.file)}: `;
    const error = data.details.error;
    const cause = error instanceof Error && error.cause instanceof Error ? error.cause : error;
    const message = cause instanceof Error ? cause.message : String(cause);
    const short = message.replace(/\s+/g, " ").slice(0, 300);
    failed.push(`${where}${data.name} (nesting ${data.nesting}): ${short}`);
  },
);
// A file's time: the sum of its top-level tests' (they run one after another).
for (const event of ["test:pass", "test:fail"] as const) {
  stream.on(event, (data: { nesting: number; file?: string; details: { duration_ms: number } }) => {
    if (data.nesting !== 0 || data.file === undefined) return;
    const file = relative(ROOT, data.file);
    took.set(file, (took.get(file) ?? 0) + data.details.duration_ms / 1000);
  });
}
// After the report's last line: stderr is written synchronously at exit.
process.on("exit", () => {
  if (failed.length === 0) return;
  process.stderr.write(
    `\n${failed.length} failed:\n${failed.map((line) => `  ${line}\n`).join("")}`,
  );
});
stream.on("end", () => {
  // Only a run of the whole suite says how long every file takes.
  if (given.length > 0) return;
  const sorted = [...took].sort(([a], [b]) => (a < b ? -1 : 1)).map((
    [file, seconds],
  ) => [file, Math.round(seconds * 10) / 10]);
  writeFileSync(DURATIONS, `${JSON.stringify(Object.fromEntries(sorted), null, 2)}\n`);
});
(process.stdout.isTTY === true ? stream.compose(new spec()) : stream.compose(tap)).pipe(
  process.stdout,
);
