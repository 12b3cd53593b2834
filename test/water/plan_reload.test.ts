import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  type FoundDataset,
  planReload,
  readDatasetMetadata,
  type ServedDataset,
} from "../../lib/water/mod.ts";

/** A folder found with good metadata: its DOI from its name unless given. */
function found(
  folder: string,
  fingerprint: string,
  options: { created?: number; doi?: string } = {},
): FoundDataset {
  const input = readDatasetMetadata(
    JSON.stringify({ DOI: options.doi ?? `10.25976/${folder}`, DatasetName: folder }),
    folder,
  );
  return {
    folder,
    dataFile: `${folder}/data.csv`,
    fingerprint,
    created: options.created ?? Infinity,
    metadata: { input },
  };
}

/** A folder found broken. */
function broken(folder: string): FoundDataset {
  return {
    folder,
    dataFile: `${folder}/data.csv`,
    fingerprint: "x",
    created: Infinity,
    metadata: {
      failure: { file: `${folder}/data.csv`, line: 1, column: 3, message: "bad header" },
    },
  };
}

/** A dataset served, with ids after `base`. */
function served(
  folder: string,
  fingerprint: string,
  base: number,
  doi = `10.25976/${folder}`,
): ServedDataset {
  const input = readDatasetMetadata(JSON.stringify({ DOI: doi, DatasetName: folder }), folder);
  return {
    folder,
    fingerprint,
    id: input.id,
    doi,
    ids: { locationBase: base, rowBase: base * 10 },
    report: { folder, doi, rows: 10, locations: 1, skippedRows: 0, issues: [], ignoredColumns: [] },
  };
}

/** The plan's steps, short: `copy:<folder>:<change>` or `load:<folder>:<change>`. */
function steps(plan: ReturnType<typeof planReload>, before: readonly ServedDataset[]): string[] {
  return plan.steps.map((step) =>
    step.kind === "copy"
      ? `copy:${before[step.served]!.folder}:${step.change}`
      : `load:${step.found.folder}:${step.change}`
  );
}

describe("planReload()", () => {
  it("reads every folder of a first load, in CreateTimestamp then folder order", () => {
    const plan = planReload([], [
      found("b", "1", { created: 5 }),
      found("a", "2"),
      found("c", "3", { created: 5 }),
      found("d", "4", { created: 1 }),
    ]);
    assert.deepEqual(steps(plan, []), [
      "load:d:added",
      "load:b:added",
      "load:c:added",
      "load:a:added",
    ]);
    assert.deepEqual(plan.removed, []);
  });

  it("keeps unchanged datasets in their order, then reads new and changed ones after them", () => {
    const before = [served("b", "b1", 0), served("a", "a1", 1), served("c", "c1", 2)];
    const plan = planReload(before, [
      found("a", "a1"),
      found("b", "b2", { created: 1 }),
      found("c", "c1"),
      found("0-new", "n1", { created: 9 }),
    ]);
    assert.deepEqual(steps(plan, before), [
      "copy:a:unchanged",
      "copy:c:unchanged",
      "load:b:replaced",
      "load:0-new:added",
    ]);
    const replaced = plan.steps[2]!;
    assert.equal(replaced.kind === "load" ? replaced.replaces : undefined, 0);
    assert.deepEqual(plan.failures, []);
  });

  it("removes the datasets whose folder is gone", () => {
    const before = [served("a", "a1", 0), served("b", "b1", 1), served("c", "c1", 2)];
    const plan = planReload(before, [found("b", "b1")]);
    assert.deepEqual(steps(plan, before), ["copy:b:unchanged"]);
    assert.deepEqual(plan.removed, [0, 2]);
  });

  it("keeps the version served of a folder that is broken now, and reports it as kept", () => {
    const before = [served("a", "a1", 0), served("b", "b1", 1)];
    const plan = planReload(before, [broken("a"), found("b", "b1"), broken("z")]);
    assert.deepEqual(steps(plan, before), ["copy:a:kept", "copy:b:unchanged"]);
    assert.deepEqual(plan.failures.map((f) => [f.folder, f.kept, f.line, f.message]), [[
      "a",
      true,
      1,
      "bad header",
    ], ["z", false, 1, "bad header"]]);
  });

  it("refuses a new version whose DOI another dataset has, keeping its version served", () => {
    const before = [served("a", "a1", 0), served("b", "b1", 1)];
    const plan = planReload(before, [found("a", "a1"), found("b", "b2", { doi: "10.25976/a" })]);
    assert.deepEqual(steps(plan, before), ["copy:a:unchanged", "copy:b:kept"]);
    assert.equal(plan.failures.length, 1);
    assert.deepEqual([plan.failures[0]!.folder, plan.failures[0]!.kept, plan.failures[0]!.file], [
      "b",
      true,
      "b/data.csv",
    ]);
    assert.match(plan.failures[0]!.message, /DOI or Id is already used/);
  });

  it("refuses, in turn, a read that clashes with a version kept because of an earlier refusal", () => {
    // b's new version takes a's DOI and is refused, so b keeps "10.25976/b", which c's new version took: c is refused too.
    const before = [served("a", "a1", 0), served("b", "b1", 1), served("c", "c1", 2)];
    const plan = planReload(before, [
      found("a", "a1"),
      found("b", "b2", { doi: "10.25976/a", created: 1 }),
      found("c", "c2", { doi: "10.25976/b", created: 2 }),
    ]);
    assert.deepEqual(steps(plan, before), ["copy:a:unchanged", "copy:b:kept", "copy:c:kept"]);
    assert.deepEqual(plan.failures.map((f) => f.folder).sort(), ["b", "c"]);
  });

  it("refuses the later of two new datasets with one DOI", () => {
    const plan = planReload([], [
      found("x", "1", { doi: "10.25976/same", created: 2 }),
      found("y", "2", { doi: "10.25976/same", created: 1 }),
    ]);
    assert.deepEqual(steps(plan, []), ["load:y:added"]);
    assert.deepEqual(plan.failures.map((f) => [f.folder, f.kept]), [["x", false]]);
  });
});
