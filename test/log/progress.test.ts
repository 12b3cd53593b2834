import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createLogger, Progress } from "../../lib/log/mod.ts";

describe("Progress", () => {
  it("logs at most once an interval: items, their rate and the percent of bytes, then the end", () => {
    const lines: string[] = [];
    let time = 0;
    const log = createLogger({ write: (line) => lines.push(line), now: () => 0 });
    const progress = new Progress({
      label: "Loading datasets",
      now: () => time,
      log,
      unit: "rows",
    });
    for (let ms = 0; ms <= 2500; ms += 10) {
      time = ms;
      progress.update({ done: ms * 400, bytes: ms * 40_000, totalBytes: 200_000_000 });
    }
    assert.equal(lines.length, 2, "at 1 s and 2 s");
    const first = JSON.parse(lines[0]!);
    assert.equal(first.msg, "Loading datasets: 400,000 rows, 400,000 rows/s, 20% of 200.0 MB");
    assert.deepEqual([first.rows, first.rowsPerSecond, first.percent], [400_000, 400_000, 20]);
    progress.finish({ done: 1_000_000 });
    const end = JSON.parse(lines[2]!);
    assert.equal(end.msg, "Loading datasets: 1,000,000 rows, 400,000 rows/s in 2.5 s");
    assert.equal(end.seconds, 2.5);
  });

  it("gives the percent of items when there is no byte count", () => {
    const lines: string[] = [];
    let time = 0;
    const progress = new Progress({
      label: "Writing",
      now: () => time,
      log: createLogger({ write: (line) => lines.push(line), now: () => 0 }),
      unit: "rows",
    });
    time = 1000;
    progress.update({ done: 250, total: 1000 });
    assert.equal(JSON.parse(lines[0]!).msg, "Writing: 250 rows, 250 rows/s, 25% of 1,000 rows");
  });

  it("redraws one line on a terminal, and leaves the last one standing", () => {
    const drawn: string[] = [];
    let time = 0;
    const log = createLogger({
      write: () => assert.fail("no log lines on a terminal"),
      now: () => 0,
    });
    const progress = new Progress({
      label: "Generating",
      now: () => time,
      log,
      terminal: { write: (text) => drawn.push(text) },
      interval: 500,
    });
    time = 500;
    assert.equal(progress.update({ done: 10 }), true);
    assert.equal(progress.update({ done: 11 }), false, "not again within the interval");
    assert.equal(progress.drawing, true);
    time = 1000;
    progress.finish({ done: 20 });
    assert.deepEqual(drawn, [
      "\r\x1b[2KGenerating: 10 items, 20 items/s",
      "\r\x1b[2KGenerating: 20 items, 20 items/s in 1.0 s\n",
    ]);
    assert.equal(progress.drawing, false);
  });
});
