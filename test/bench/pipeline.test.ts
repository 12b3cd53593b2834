import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { formatStageTable, includes, stageOrder, STAGES } from "../../bench/_pipeline.ts";

describe("formatStageTable()", () => {
  const table = formatStageTable([
    { label: "bare node:http", rate: 20_000.4, cpuMicros: 31 },
    { label: "adapter alone", rate: 15_000, cpuMicros: 42.25 },
    { label: "+ router", rate: 15_500, cpuMicros: 41.96 },
  ]);

  it("prints a header, a rule and a row per stage, bare first", () => {
    assert.equal(table.length, 5);
    assert.match(
      table[0]!,
      /^\| stage +\| +req\/s \| server CPU µs\/request \| \+ µs over the previous stage \| rate \/ bare \|$/,
    );
    assert.match(table[1]!, /^\| -+ \| -+: \| -+: \| -+: \| -+: \|$/);
    assert.deepEqual(
      table.slice(2).map((line) => line.split("|").slice(1, -1).map((cell) => cell.trim())),
      [
        ["bare node:http", "20,000", "31.0", "", "1.000"],
        ["adapter alone", "15,000", "42.3", "+11.3", "0.750"],
        ["+ router", "15,500", "42.0", "-0.3", "0.775"],
      ],
    );
  });

  it("aligns every column: the lines are of one length", () => {
    assert.equal(new Set(table.map((line) => line.length)).size, 1);
  });

  it("gives a difference that rounds to zero as +0.0", () => {
    const [, , , row] = formatStageTable([
      { label: "a", rate: 1, cpuMicros: 10 },
      { label: "b", rate: 1, cpuMicros: 9.99 },
    ]);
    assert.equal(row!.split("|")[4]!.trim(), "+0.0");
  });

  it("prints nothing without stages", () => {
    assert.deepEqual(formatStageTable([]), []);
  });
});

describe("stageOrder()", () => {
  it("gives every stage once a round, starting and ending with another in each of 5 rounds", () => {
    const rounds = [0, 1, 2, 3, 4].map(stageOrder);
    for (const order of rounds) {
      assert.deepEqual([...order].sort(), STAGES.map((stage) => stage.name).sort());
    }
    assert.equal(new Set(rounds.map((order) => order[0])).size, 5);
    assert.equal(new Set(rounds.map((order) => order.at(-1))).size, 5);
  });
});

describe("includes()", () => {
  it("holds a stage's own piece and those of the stages before it, not the later ones", () => {
    assert.equal(includes("metrics", "router"), true);
    assert.equal(includes("metrics", "metrics"), true);
    assert.equal(includes("metrics", "request-id"), false);
    assert.equal(includes("compression", "adapter"), true);
  });
});
