// Progress of a large load: the loader tells how far it has come after each
// chunk, and the server logs it, ending with the rows and the time in all.
import assert from "node:assert/strict";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { generateDatasets } from "../../data/generate.ts";
import { createLogger, Progress } from "../../lib/log/mod.ts";
import { loadDatasets, type LoadProgress } from "../../lib/water/mod.ts";
import { listeningUrl, startServer } from "../_helpers/server.ts";

const ROWS = 1_000_000;

describe("progress of a 1,000,000-row load", () => {
  let dir = "";
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "tributary-progress-"));
    await generateDatasets({ out: dir, seed: 11, observations: ROWS, locations: 2_000 });
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("tells rows and bytes after each chunk, up to every row and every byte, and a Progress made of it reports once a second", async () => {
    const states: LoadProgress[] = [];
    const lines: string[] = [];
    let clock = 0;
    // Each report a tenth of a (made-up) second after the one before: a line every tenth report.
    const progress = new Progress({
      label: "Loading datasets",
      now: () => (clock += 100),
      unit: "rows",
      log: createLogger({ write: (line) => lines.push(line), now: () => 0 }),
    });
    const { store } = await loadDatasets(dir, {
      onProgress: (state) => {
        states.push(state);
        progress.update({ done: state.rows, bytes: state.bytes, totalBytes: state.totalBytes });
      },
    });
    assert.ok(states.length > 100, `${states.length} reports for about 250 MB in 1 MiB chunks`);
    for (let i = 1; i < states.length; i++) {
      assert.ok(
        states[i]!.rows >= states[i - 1]!.rows && states[i]!.bytes > states[i - 1]!.bytes,
        "never backwards",
      );
    }
    const last = states.at(-1)!;
    assert.equal(last.bytes, last.totalBytes, "every byte of the data files");
    assert.ok(last.rows > 0.99 * ROWS, `${last.rows} rows by the last chunk`);
    assert.equal(store.observationCount, ROWS);
    assert.ok(
      lines.length >= Math.floor(states.length / 10) - 1 &&
        lines.length <= Math.ceil(states.length / 10),
    );
    assert.match(
      JSON.parse(lines[0]!).msg,
      /^Loading datasets: [\d,]+ rows, [\d,]+ rows\/s, \d+% of 25\d\.\d MB$/,
    );
  });

  it("is logged by the server while it loads, ending with the rows in all", async () => {
    const started = startServer({ SERVICES: "water", DATA_DIR: dir });
    await listeningUrl(started);
    started.child.kill("SIGTERM");
    await once(started.child, "exit");
    assert.match(
      started.output(),
      /^Loading datasets: 1,000,000 rows, [\d,]+ rows\/s in \d+\.\d s$/m,
    );
    const records = started.raw().out.split("\n").filter((line) =>
      line.includes("Loading datasets")
    ).map((line) => JSON.parse(line) as { rows: number });
    assert.equal(records.at(-1)!.rows, ROWS);
  });
});
