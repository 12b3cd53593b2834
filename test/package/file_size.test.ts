// The house rule on file size: no file in lib over 600 lines unless it is one
// cohesive structure, and says so in its first line, with why.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";

const LIB = join(import.meta.dirname, "..", "..", "lib");
const MAX_LINES = 600;
const SAID = /^\/\/ One cohesive structure, over 600 lines on purpose: \S/;

describe("the files of lib/", () => {
  it(`are at most ${MAX_LINES} lines, or say at their top why one is one cohesive structure`, () => {
    const files = readdirSync(LIB, { recursive: true, encoding: "utf8" }).filter((file) =>
      file.endsWith(".ts")
    );
    assert.ok(files.length > 100, `${files.length} files`);
    const unsaid = files.flatMap((file) => {
      const text = readFileSync(join(LIB, file), "utf8");
      const lines = text.split("\n").length - 1;
      return lines > MAX_LINES && !SAID.test(text) ? [`${file}: ${lines} lines`] : [];
    });
    assert.deepEqual(unsaid, []);
  });
});
