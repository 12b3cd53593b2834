// promtool (Debian package prometheus) for the tests that check /metrics text:
// without it a developer's run skips them and says so; with REQUIRE_SERVICES=1
// (as .ci/run sets) a missing promtool fails them.
import { spawn, spawnSync } from "node:child_process";

const found = spawnSync("promtool", ["--version"], { stdio: "ignore" }).status === 0;
const required = process.env["REQUIRE_SERVICES"] === "1";

/** For `it(name, { skip: promtoolSkip }, ...)`. */
export const promtoolSkip: false | string = found || required
  ? false
  : "promtool is not installed (Debian package prometheus); set REQUIRE_SERVICES=1 to fail instead";

/** Whether promtool is on PATH. */
export const promtoolFound = found;

/**
 * Runs `promtool check metrics` on exposition text.
 * @param text the text
 * @returns promtool's exit code and what it printed
 */
export function promtoolCheck(text: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn("promtool", ["check", "metrics"], { stdio: ["pipe", "pipe", "pipe"] });
    let output = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, output }));
    child.stdin.end(text);
  });
}
