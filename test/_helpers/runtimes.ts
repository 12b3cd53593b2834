// The other runtimes the server and the package are proven on: Node 24 (its
// own type stripping) and Deno. .ci/run installs both from the npm registry
// and names them in NODE24_BIN and DENO_BIN; without them a developer's run
// skips their tests and says so, and REQUIRE_SERVICES=1 makes that a failure.
import { spawnSync } from "node:child_process";

const required = process.env["REQUIRE_SERVICES"] === "1";

function find(variable: string, command: string, versionPattern: RegExp): string | undefined {
  const candidate = process.env[variable] ?? command;
  const run = spawnSync(candidate, ["--version"], { encoding: "utf8" });
  return run.status === 0 && versionPattern.test(run.stdout) ? candidate : undefined;
}

/** Node 24's binary: `NODE24_BIN`, or a `node24` on PATH. */
export const node24 = find("NODE24_BIN", "node24", /^v24\./);

/** Deno's binary: `DENO_BIN`, or `deno` on PATH. */
export const deno = find("DENO_BIN", "deno", /^deno 2\./);

function skipUnless(found: string | undefined, what: string): false | string {
  return found !== undefined || required ? false : `${what} is not installed (.ci/run installs it); set REQUIRE_SERVICES=1 to fail instead`;
}

/** For `it(name, { skip: node24Skip }, ...)`. */
export const node24Skip = skipUnless(node24, "Node 24 (NODE24_BIN)");

/** For `it(name, { skip: denoSkip }, ...)`. */
export const denoSkip = skipUnless(deno, "Deno (DENO_BIN)");
