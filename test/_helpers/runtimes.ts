// The other runtimes the server and the package are proven on: Node 24 (its
// own type stripping) and Deno. Deno is a dev dependency (pinned, as its
// formatter's output is the project's style), so npm ci brings it; .ci/run
// installs Node 24 from the npm registry and names it in NODE24_BIN. Without
// one a developer's run skips its tests and says so, and REQUIRE_SERVICES=1
// makes that a failure.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";

const required = process.env["REQUIRE_SERVICES"] === "1";

function find(variable: string, command: string, versionPattern: RegExp): string | undefined {
  const candidate = process.env[variable] ?? command;
  const run = spawnSync(candidate, ["--version"], { encoding: "utf8" });
  return run.status === 0 && versionPattern.test(run.stdout) ? candidate : undefined;
}

/** Node 24's binary: `NODE24_BIN`, or a `node24` on PATH. */
export const node24 = find("NODE24_BIN", "node24", /^v24\./);

const projectDeno = join(import.meta.dirname, "..", "..", "node_modules", ".bin", "deno");

/** Deno's binary: `DENO_BIN`, else the project's dev dependency, else `deno` on PATH. */
export const deno = find("DENO_BIN", existsSync(projectDeno) ? projectDeno : "deno", /^deno 2\./);

function skipUnless(found: string | undefined, what: string): false | string {
  return found !== undefined || required
    ? false
    : `${what} is not installed (.ci/run installs it); set REQUIRE_SERVICES=1 to fail instead`;
}

/** For `it(name, { skip: node24Skip }, ...)`. */
export const node24Skip = skipUnless(node24, "Node 24 (NODE24_BIN)");

/** For `it(name, { skip: denoSkip }, ...)`. */
export const denoSkip = skipUnless(deno, "Deno (DENO_BIN)");
