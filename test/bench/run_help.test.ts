import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";

const ROOT = join(import.meta.dirname, "..", "..");
const run = (...args: string[]) =>
  spawnSync(process.execPath, ["--import", "tsx", "bench/run.ts", ...args], {
    cwd: ROOT,
    encoding: "utf8",
    timeout: 60_000,
  });

describe("npm run bench -- --help", () => {
  it("lists every benchmark with what it measures and what it needs, running none", () => {
    const result = run("--help");
    assert.equal(result.status, 0, result.stderr);
    const benchmarks = readdirSync(join(ROOT, "bench")).filter((file) =>
      file.endsWith(".ts") && !file.startsWith("_") && file !== "run.ts"
    ).map((file) => file.slice(0, -3));
    assert.ok(benchmarks.length >= 10);
    for (const name of benchmarks) {
      const entry = new RegExp(`^${name}\\n  (\\S.*)\\n  Needs: (.+)$`, "m").exec(result.stdout);
      assert.ok(entry !== null, `${name} is listed with a description and a Needs line`);
      assert.match(entry[2]!, /minute/, `${name} says how long it takes`);
    }
    assert.doesNotMatch(result.stdout, /^(PASS|FAIL) {2}|^== /m, "nothing was run");
  });

  it("refuses an unknown benchmark before running any, naming the choices", () => {
    const result = run("load", "nope");
    assert.equal(result.status, 2);
    assert.match(result.stderr, /Cannot run benchmark "nope": choose from load, filter/);
    assert.doesNotMatch(result.stdout, /== load ==/);
  });
});
