// The test command (`npm test`): every suite in test/<domain>/, three files at
// a time, the longest first. `node --test` sorts the files it is given by name,
// so a suite of minutes whose name sorts late (test/relay/kafka_queue.test.ts)
// started late and ran nearly alone at the end; node:test's run() keeps the
// order it is given. The longest are the multi-process suites (test/e2e/) and
// those on a real Kafka, Redis or PostgreSQL (named after it), then the rest.
// Arguments: the files to run instead of all, e.g.
//   npm test -- test/sync/revision_log.test.ts
// Reports as `node --test` does (spec on a terminal, TAP otherwise); exits 1
// when a test fails.
import { readdirSync } from "node:fs";
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

/** How early a file starts: the multi-process suites, then those on a real backend, then the rest. */
function rank(file: string): number {
  if (file.startsWith(join("test", "e2e"))) return 0;
  if (/kafka|redis|postgres/.test(file)) return 1;
  return 2;
}

const given = process.argv.slice(2);
// A stable sort: within a rank, files keep their order (by name, or as given).
const files = (given.length > 0 ? given.map((file) => relative(ROOT, resolve(file))) : allFiles())
  .sort((a, b) => rank(a) - rank(b))
  .map((file) => join(ROOT, file));
const stream = run({ files, concurrency: CONCURRENCY });
stream.on("test:fail", () => {
  process.exitCode = 1;
});
(process.stdout.isTTY === true ? stream.compose(new spec()) : stream.compose(tap)).pipe(process.stdout);
