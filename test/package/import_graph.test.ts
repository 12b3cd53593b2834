// The import graph of lib/ keeps its layers (each domain imports only from
// those below it, through their mod.ts or _internal.ts) and has no cycle: npm run graph.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { checkGraph, LAYERS } from "../../scripts/import_graph.ts";

describe("the import graph of lib/", () => {
  it("keeps its layers and has no cycle", () => {
    assert.deepEqual(checkGraph(), []);
  });

  it("names every domain in one layer", () => {
    const named = LAYERS.flat();
    assert.equal(new Set(named).size, named.length, "a domain in two layers");
  });
});
