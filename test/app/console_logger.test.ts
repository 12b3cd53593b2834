import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, it } from "node:test";
import { createConsoleLogger } from "../../lib/app/mod.ts";

const ROOT = join(import.meta.dirname, "..", "..");
const decoder = new TextDecoder();

describe("createConsoleLogger", () => {
  it("writes the lines of one turn together at its end, info to out and warnings and errors to err, JSON off a terminal", async () => {
    const out: string[] = [];
    const err: string[] = [];
    const log = createConsoleLogger({ level: "info", format: "auto" }, {
      out: { write: (bytes) => out.push(decoder.decode(bytes)) },
      err: { write: (bytes) => err.push(decoder.decode(bytes)) },
    });
    log.info("one");
    log.info("two", { n: 2 });
    log.warn("careful");
    log.error("broken", new Error("disk full"));
    log.debug("not written");
    assert.deepEqual([out, err], [[], []], "nothing before the turn ends");
    await new Promise<void>((resolve) => setImmediate(resolve));
    assert.equal(out.length, 1, "one write for the turn's lines");
    assert.deepEqual(
      out[0]!.split("\n").filter((line) => line !== "").map((line) => JSON.parse(line).msg),
      ["one", "two"],
    );
    assert.deepEqual(
      err[0]!.split("\n").filter((line) => line !== "").map((line) => JSON.parse(line).level),
      ["warn", "error"],
    );
  });

  it("writes the lines that come within writeIntervalMs of a write together at its end, and a line after a quiet spell at the end of its turn", async () => {
    const out: string[] = [];
    const timers: { task: () => void; ms: number }[] = [];
    const setTimer = (task: () => void, ms: number) => {
      timers.push({ task, ms });
      return () => {};
    };
    const log = createConsoleLogger({ level: "info", format: "json" }, {
      out: { write: (bytes) => out.push(decoder.decode(bytes)) },
      err: { write: () => {} },
    }, { writeIntervalMs: 10, setTimer });
    const turn = () => new Promise<void>((resolve) => setImmediate(resolve));
    const messages = () =>
      out.map((text) =>
        text.split("\n").filter((line) => line !== "").map((line) => JSON.parse(line).msg)
      );
    log.info("first");
    await turn();
    assert.deepEqual(messages(), [["first"]]);
    assert.deepEqual(timers.map((timer) => timer.ms), [10]);
    log.info("second");
    await turn();
    log.info("third");
    await turn();
    assert.deepEqual(messages(), [["first"]], "the next turns' lines wait for the interval's end");
    timers.shift()!.task();
    assert.deepEqual(messages(), [["first"], ["second", "third"]]);
    assert.equal(timers.length, 1, "and that write starts another interval");
    timers.shift()!.task();
    assert.equal(out.length, 2, "an interval without lines writes nothing");
    log.info("later");
    await turn();
    assert.deepEqual(messages(), [["first"], ["second", "third"], ["later"]]);
  });

  it("writes at the end of every turn with writeIntervalMs 0", async () => {
    const out: string[] = [];
    const log = createConsoleLogger({ level: "info", format: "json" }, {
      out: { write: (bytes) => out.push(decoder.decode(bytes)) },
      err: { write: () => {} },
    }, { writeIntervalMs: 0, setTimer: () => assert.fail("no timer") });
    for (const msg of ["one", "two", "three"]) {
      log.info(msg);
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    assert.equal(out.length, 3);
    assert.throws(
      () =>
        createConsoleLogger({ level: "info", format: "json" }, undefined, { writeIntervalMs: -1 }),
      RangeError,
    );
  });

  it("writes readable lines when both streams are terminals", async () => {
    const out: string[] = [];
    const log = createConsoleLogger({ level: "info", format: "auto" }, {
      out: { write: (bytes) => out.push(decoder.decode(bytes)), isTTY: true },
      err: { write: () => {}, isTTY: true },
    });
    log.info("hello", { who: "you" });
    await new Promise<void>((resolve) => setImmediate(resolve));
    assert.match(out[0]!, /^\d{4}-\d\d-\d\dT[\d:.]+Z INFO {2}hello who=you\n$/);
  });

  it("writes what waits when the process exits in the same turn", () => {
    const script =
      `import { createConsoleLogger } from "./lib/app/mod.ts"; const log = createConsoleLogger({ level: "info", format: "json" }); log.info("last words"); process.exit(0);`;
    const run = spawnSync(process.execPath, [
      "--import",
      "tsx",
      "--input-type=module",
      "-e",
      script,
    ], { cwd: ROOT, encoding: "utf8", env: { ...process.env, NODE_V8_COVERAGE: "" } });
    assert.equal(run.status, 0, run.stderr);
    assert.equal(JSON.parse(run.stdout).msg, "last words");
  });

  it("writes what waits for the end of the interval when the process exits or ends first", () => {
    for (const end of ["process.exit(0);", ""]) {
      const script =
        `import { createConsoleLogger } from "./lib/app/mod.ts"; const log = createConsoleLogger({ level: "info", format: "json" }); log.info("written"); setImmediate(() => { log.info("waiting"); ${end} });`;
      const run = spawnSync(process.execPath, [
        "--import",
        "tsx",
        "--input-type=module",
        "-e",
        script,
      ], { cwd: ROOT, encoding: "utf8", env: { ...process.env, NODE_V8_COVERAGE: "" } });
      assert.equal(run.status, 0, run.stderr);
      assert.deepEqual(
        run.stdout.split("\n").filter((line) => line !== "").map((line) => JSON.parse(line).msg),
        ["written", "waiting"],
        end || "the end of the event loop",
      );
    }
  });
});
