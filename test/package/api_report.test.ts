// The public API report (api/tributary.api.md) is the one the code gives:
// a change to the exported names or their declarations must come with the
// report regenerated (npm run api), so that review sees it.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, it } from "node:test";

const ROOT = join(import.meta.dirname, "..", "..");

describe("api/tributary.api.md", () => {
  it("is the surface the built declarations export (npm run api regenerates it)", () => {
    const check = spawnSync(process.execPath, [
      "--import",
      "tsx",
      join(ROOT, "scripts", "api_report.ts"),
      "--check",
    ], { cwd: ROOT, encoding: "utf8", env: { ...process.env, NODE_V8_COVERAGE: "" } });
    assert.equal(check.status, 0, check.stderr);
    assert.match(check.stdout, /is up to date/);
  });
});
