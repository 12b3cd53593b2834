import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { count } from "../../lib/log/mod.ts";

describe("count()", () => {
  const cases = [
    { n: 0, noun: "command", plural: undefined, expected: "0 commands" },
    { n: 1, noun: "command", plural: undefined, expected: "1 command" },
    { n: 2, noun: "dataset", plural: undefined, expected: "2 datasets" },
    { n: 1, noun: "entry", plural: "entries", expected: "1 entry" },
    { n: 3, noun: "entry", plural: "entries", expected: "3 entries" },
  ] as const;
  for (const c of cases) {
    it(`gives "${c.expected}"`, () => assert.equal(count(c.n, c.noun, c.plural), c.expected));
  }
});
