// npm run lint: the house rules a tool checks. Deno's formatter (`deno fmt
// --check`, 100 columns as .editorconfig says) and linter (`deno lint`), both
// from the pinned dev dependency so every machine formats alike, and commit
// subjects of at most 72 characters (the detail goes in the body) for every
// commit made since the rule began. The linter's `require-await` is off:
// memory adapters implement asynchronous ports with `async` functions that
// need no `await`, on purpose (one contract for every adapter).
// `npm run lint -- --fix` formats the files instead of checking them.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";

const ROOT = join(import.meta.dirname, "..");

/**
 * When the subject rule began (the commit time of the last commit made
 * before it): commits made later are checked. A time rather than a hash, so
 * that a shallow clone, which lacks the older history, checks what it has.
 */
export const SUBJECT_RULE_SINCE = "2026-11-28T05:44:37Z";

/** The longest commit subject allowed, in characters. */
export const MAX_SUBJECT = 72;

/**
 * The commits whose subject breaks the rule.
 * @param commits each commit's hash and subject, as `git log` gives them
 * @returns a line per breach, naming the commit and the subject's length
 */
export function longSubjects(
  commits: readonly { readonly hash: string; readonly subject: string }[],
): string[] {
  return commits
    .filter(({ subject }) => [...subject].length > MAX_SUBJECT)
    .map(({ hash, subject }) =>
      `${hash.slice(0, 8)}: its subject has ${
        [...subject].length
      } characters (at most ${MAX_SUBJECT}): ${subject}`
    );
}

/**
 * The commits of the history made at or after `since` (their commit time).
 * @throws {Error} when git cannot read the history
 */
export function commitsSince(
  since: string,
  cwd: string = ROOT,
): { hash: string; subject: string }[] {
  const log = spawnSync("git", ["log", "--format=%H%x09%cI%x09%s", "HEAD"], {
    cwd,
    encoding: "utf8",
    maxBuffer: 1 << 26,
  });
  if (log.status !== 0) throw new Error(`Cannot read the history: ${log.stderr}`);
  const from = Date.parse(since);
  if (Number.isNaN(from)) {
    throw new RangeError(`Cannot check commit subjects: ${since} is not a time`);
  }
  return log.stdout.split("\n").filter((line) => line !== "").map((line) => {
    const [hash, time, ...subject] = line.split("\t");
    return { hash: hash!, time: Date.parse(time!), subject: subject.join("\t") };
  }).filter(({ time }) => time >= from).map(({ hash, subject }) => ({ hash, subject }));
}

/** The pinned Deno of the dev dependencies, else `DENO_BIN`, else `deno` on PATH. */
export function denoBinary(): string {
  const local = join(ROOT, "node_modules", ".bin", "deno");
  return existsSync(local) ? local : process.env["DENO_BIN"] ?? "deno";
}

if (process.argv[1] === import.meta.filename) {
  const fix = process.argv.includes("--fix");
  const deno = denoBinary();
  let failed = false;
  for (const args of [fix ? ["fmt"] : ["fmt", "--check"], ["lint"]]) {
    const run = spawnSync(deno, args, {
      cwd: ROOT,
      stdio: "inherit",
      env: { ...process.env, NO_COLOR: "1", RUST_BACKTRACE: "0" },
    });
    if (run.error !== undefined) {
      throw new Error(
        `Cannot run ${deno}: ${run.error.message} (npm ci installs Deno as a dev dependency)`,
      );
    }
    if (run.status !== 0) failed = true;
  }
  const breaches = longSubjects(commitsSince(SUBJECT_RULE_SINCE));
  for (const line of breaches) console.error(line);
  if (breaches.length > 0) failed = true;
  else {console.log(
      `Commit subjects since ${SUBJECT_RULE_SINCE}: each at most ${MAX_SUBJECT} characters`,
    );}
  process.exit(failed ? 1 : 0);
}
