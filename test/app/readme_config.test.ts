import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { appSettings } from "../../lib/app/read_config.ts";
import { withConfigTable } from "../../scripts/readme_config.ts";

const README = readFileSync(join(import.meta.dirname, "..", "..", "README.md"), "utf8");

describe("the README's configuration table", () => {
  it("is the one the settings tables render (run `npm run docs` after changing a setting)", () => {
    assert.equal(README, withConfigTable(README));
  });

  it("lists every variable the app reads", () => {
    for (const setting of appSettings()) {
      for (const variable of setting.variables) {
        assert.ok(README.includes(`\`${variable}\``), variable);
      }
    }
  });

  it("fails when a row is edited by hand", () => {
    const edited = README.replace("| `HOST` | `127.0.0.1` |", "| `HOST` | `0.0.0.0` |");
    assert.notEqual(edited, README);
    assert.notEqual(edited, withConfigTable(edited));
  });
});
