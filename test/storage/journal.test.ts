import assert from "node:assert/strict";
import {
  constants,
  copyFileSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  truncateSync,
  writeFileSync,
} from "node:fs";
import { open } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { droppedTailNote } from "../../lib/storage/journal.ts";
import { Journal, type JournalOptions, type LogHandle } from "../../lib/storage/mod.ts";

function folder(): string {
  return mkdtempSync(join(tmpdir(), "tributary-journal-"));
}

/** Commits run when the test says, so that it decides what a turn of the event loop holds. */
class ManualTurns {
  #runs: (() => void)[] = [];
  readonly defer = (run: () => void): void => {
    this.#runs.push(run);
  };
  end(): void {
    for (const run of this.#runs.splice(0)) run();
  }
}

function logsOf(dir: string): string[] {
  return readdirSync(dir).filter((name) => name.endsWith(".log")).sort();
}

async function reopen(
  dir: string,
  options: Partial<JournalOptions> = {},
): Promise<Awaited<ReturnType<typeof Journal.open>>> {
  return Journal.open({ dir, name: "test", ...options });
}

describe("Journal", () => {
  it("reads back the records appended, in order, after a reopen", async () => {
    const dir = folder();
    const { journal, replay } = await reopen(dir);
    assert.deepEqual(replay, { snapshot: undefined, records: [], dropped: undefined });
    for (let i = 0; i < 5; i++) await journal.append({ n: i, text: `record ${i} ✓` });
    await journal.close();
    const again = await reopen(dir);
    assert.deepEqual(
      again.replay.records,
      [0, 1, 2, 3, 4].map((n) => ({ n, text: `record ${n} ✓` })),
    );
    await again.journal.close();
  });

  it("commits the appends of one turn together, with one write and one sync, and resolves them only then", async () => {
    const dir = folder();
    const turns = new ManualTurns();
    const commits: [number, number][] = [];
    const { journal } = await reopen(dir, {
      defer: turns.defer,
      onCommit: (records, bytes) => commits.push([records, bytes]),
    });
    let resolved = 0;
    const appends = Array.from(
      { length: 100 },
      (_, i) => journal.append({ i }).then(() => resolved++),
    );
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(resolved, 0, "nothing is acknowledged before its commit");
    assert.equal(commits.length, 0);
    turns.end();
    await Promise.all(appends);
    assert.equal(resolved, 100);
    assert.equal(commits.length, 1);
    assert.equal(commits[0]![0], 100);
    assert.equal(commits[0]![1], statSync(join(dir, logsOf(dir)[0]!)).size);
    await journal.close();
  });

  it("cuts a log that ends mid-record at its last whole record, says so, and appends after it", async () => {
    const dir = folder();
    const { journal } = await reopen(dir);
    for (let i = 0; i < 3; i++) await journal.append({ i });
    await journal.close();
    const log = join(dir, logsOf(dir)[0]!);
    const size = statSync(log).size;
    truncateSync(log, size - 5);
    const torn = await reopen(dir);
    assert.deepEqual(torn.replay.records, [{ i: 0 }, { i: 1 }]);
    assert.equal(torn.replay.dropped?.file, log);
    assert.equal(torn.replay.dropped?.reason, "a record is cut short");
    assert.equal(
      torn.replay.dropped?.offset,
      torn.replay.dropped === undefined ? -1 : size - 5 - torn.replay.dropped.bytes,
    );
    assert.equal(
      statSync(log).size,
      torn.replay.dropped?.offset,
      "the torn bytes are gone from the file",
    );
    await torn.journal.append({ i: 3 });
    await torn.journal.close();
    const after = await reopen(dir);
    assert.deepEqual(after.replay.records, [{ i: 0 }, { i: 1 }, { i: 3 }]);
    assert.equal(after.replay.dropped, undefined);
    await after.journal.close();
  });

  const damaged = [
    {
      name: "a header cut short",
      damage: (bytes: Buffer) => bytes.subarray(0, bytes.length - (bytes.length - 3)),
      reason: "a record header is cut short",
      keep: 0,
    },
    {
      name: "a flipped byte in the last record",
      damage: (bytes: Buffer) => flip(bytes, bytes.length - 2),
      reason: "a record's checksum does not match",
      keep: 1,
    },
  ] as const;
  for (const c of damaged) {
    it(`drops the tail at ${c.name}`, async () => {
      const dir = folder();
      const { journal } = await reopen(dir);
      await journal.append({ a: 1 });
      await journal.append({ b: 2 });
      await journal.close();
      const log = join(dir, logsOf(dir)[0]!);
      writeFileSync(log, c.damage(readFileSync(log)));
      const { journal: again, replay } = await reopen(dir);
      assert.equal(replay.records.length, c.keep);
      assert.equal(replay.dropped?.reason, c.reason);
      await again.close();
    });
  }

  it("keeps the cut bytes of a torn tail beside the log, in a file named after the time", async () => {
    const dir = folder();
    const { journal } = await reopen(dir);
    await journal.append({ a: 1 });
    await journal.close();
    const log = join(dir, logsOf(dir)[0]!);
    const tail = Buffer.from([200, 0, 0, 0, 1, 2, 3, 4, 123]);
    writeFileSync(log, tail, { flag: "a" });
    const { journal: again, replay } = await reopen(dir, {
      now: () => Date.UTC(2026, 10, 28, 1, 45, 30),
    });
    assert.equal(replay.dropped?.keptAt, `${log}.torn-20261128T014530Z`);
    assert.deepEqual(readFileSync(replay.dropped!.keptAt), tail);
    assert.match(
      droppedTailNote("test", replay.dropped!),
      /ended mid-record \(a record is cut short\), as a crash while writing leaves it: cut at byte \d+, the 9 bytes after it kept in .*torn-20261128T014530Z/,
    );
    await again.close();
  });

  it("ignores a damaged log older than the one the snapshot names: the snapshot holds its records", async () => {
    const dir = folder();
    const { journal } = await reopen(dir);
    await journal.append({ a: 1 });
    await journal.compact(() => ({ total: 1 }));
    await journal.append({ b: 2 });
    await journal.close();
    // An older generation damaged and left behind, as if its removal had failed.
    writeFileSync(join(dir, "test.00000001.log"), Buffer.from([1, 2, 3, 4, 5, 6, 7, 8, 9]));
    const { journal: again, replay } = await reopen(dir);
    assert.deepEqual([replay.snapshot, replay.records, replay.dropped], [
      { total: 1 },
      [{ b: 2 }],
      undefined,
    ]);
    await again.close();
  });

  /** A journal of `count` records `{n}` in one log, closed; its folder and log. */
  async function written(count: number): Promise<{ dir: string; log: string }> {
    const dir = folder();
    const { journal } = await reopen(dir);
    for (let n = 0; n < count; n++) {
      journal.append({ n, text: "a water-quality reading" }).catch(() => {});
    }
    await journal.close();
    return { dir, log: join(dir, logsOf(dir)[0]!) };
  }

  it("refuses a flipped bit in the middle of the last log, naming the file, the byte and the records after it, and changes nothing", async () => {
    const { dir, log } = await written(100);
    const before = flip(readFileSync(log), 20);
    writeFileSync(log, before);
    const files = readdirSync(dir).sort();
    await assert.rejects(reopen(dir), {
      name: "StorageError",
      code: "ERR_STORAGE_CORRUPT",
      message: new RegExp(
        `${
          log.replaceAll(".", "\\.")
        } at byte 0 is damaged \\(a record's checksum does not match\\); cutting there would lose the 99 whole records after it.*nothing was changed.*state repair`,
      ),
    });
    assert.deepEqual(readFileSync(log), before, "the log as it was");
    assert.deepEqual(readdirSync(dir).sort(), files, "no file added or removed");
  });

  it("refuses a zeroed block in the middle of the log", async () => {
    const { dir, log } = await written(100);
    const bytes = readFileSync(log);
    bytes.fill(0, 1000, 1400);
    writeFileSync(log, bytes);
    await assert.rejects(reopen(dir), { code: "ERR_STORAGE_CORRUPT", message: /is damaged/ });
  });

  it("refuses a deleted log: the one the snapshot names, and the only one of a new journal", async () => {
    const { dir, log } = await written(10);
    rmSync(log);
    await assert.rejects(reopen(dir), {
      code: "ERR_STORAGE_CORRUPT",
      message: /test\.00000001\.log is damaged \(the log the snapshot names is missing\)/,
    });
    const compacted = folder();
    const { journal } = await reopen(compacted);
    await journal.append(1);
    await journal.compact(() => [1]);
    await journal.append(2);
    await journal.close();
    rmSync(join(compacted, "test.00000002.log"));
    await assert.rejects(reopen(compacted), {
      code: "ERR_STORAGE_CORRUPT",
      message: /test\.00000002\.log/,
    });
  });

  it("refuses logs out of sequence: a generation missing between two, records swapped between files", async () => {
    const dir = folder();
    const { journal } = await reopen(dir, { compactAboveBytes: 0 });
    await journal.append({ first: true });
    // A compaction whose snapshot fails leaves its logs: three generations, the snapshot naming the first.
    const failing = journal.compact(() => {
      throw new Error("no snapshot");
    });
    await assert.rejects(failing);
    await journal.append({ second: true });
    await assert.rejects(journal.compact(() => {
      throw new Error("no snapshot");
    }));
    await journal.append({ third: true });
    await journal.close();
    assert.deepEqual(logsOf(dir), ["test.00000001.log", "test.00000002.log", "test.00000003.log"]);
    const middle = readFileSync(join(dir, "test.00000002.log"));
    rmSync(join(dir, "test.00000002.log"));
    await assert.rejects(reopen(dir), {
      code: "ERR_STORAGE_CORRUPT",
      message:
        /test\.00000002\.log is damaged \(the log that .*test\.00000001\.log goes on in is missing\) \(and 2 more damaged places\)/,
    });
    // Put back, then the first and last logs swapped.
    writeFileSync(join(dir, "test.00000002.log"), middle);
    const first = readFileSync(join(dir, "test.00000001.log"));
    writeFileSync(join(dir, "test.00000001.log"), readFileSync(join(dir, "test.00000003.log")));
    writeFileSync(join(dir, "test.00000003.log"), first);
    await assert.rejects(reopen(dir), {
      code: "ERR_STORAGE_CORRUPT",
      message: /out of order|missing before it/,
    });
  });

  it("compacts into a snapshot and a new log, keeping the appends made meanwhile", async () => {
    const dir = folder();
    const { journal } = await reopen(dir);
    const state = { items: [] as number[] };
    for (let i = 0; i < 10; i++) {
      state.items.push(i);
      await journal.append(i);
    }
    const compacting = journal.compact(() => structuredClone(state));
    state.items.push(10);
    const during = journal.append(10);
    await Promise.all([compacting, during]);
    state.items.push(11);
    await journal.append(11);
    assert.deepEqual(logsOf(dir), ["test.00000002.log"], "the old log is removed");
    await journal.close();
    const { journal: again, replay } = await reopen(dir);
    // The snapshot holds what was appended before its capture; the records, only what came after: each once.
    const items = (replay.snapshot as { items: number[] }).items;
    assert.ok(items.length >= 10, `${items.length} in the snapshot`);
    assert.deepEqual([...items, ...(replay.records as number[])], [
      0,
      1,
      2,
      3,
      4,
      5,
      6,
      7,
      8,
      9,
      10,
      11,
    ]);
    await again.close();
  });

  it("skips the records a snapshot holds when a compaction stopped before removing the old log", async () => {
    const dir = folder();
    const { journal } = await reopen(dir);
    await journal.append("a");
    await journal.append("b");
    copyFileSync(join(dir, "test.00000001.log"), join(dir, "kept"));
    await journal.compact(() => ["a", "b"]);
    await journal.append("c");
    await journal.close();
    copyFileSync(join(dir, "kept"), join(dir, "test.00000001.log"));
    const { journal: again, replay } = await reopen(dir);
    assert.deepEqual([replay.snapshot, replay.records], [["a", "b"], ["c"]]);
    await again.close();
  });

  it("says when the logs have outgrown compactAboveBytes", async () => {
    const dir = folder();
    const { journal } = await reopen(dir, { compactAboveBytes: 100 });
    await journal.append("x".repeat(50));
    assert.equal(journal.shouldCompact(), false);
    await journal.append("y".repeat(50));
    assert.equal(journal.shouldCompact(), true);
    await journal.compact(() => "state");
    assert.equal(journal.shouldCompact(), false);
    assert.equal(journal.logBytes, 0);
    await journal.close();
  });

  it("compacts a state larger than compactAboveBytes only once the logs hold twice its snapshot, before and after a restart", async () => {
    const dir = folder();
    const { journal } = await reopen(dir, { compactAboveBytes: 100 });
    await journal.append("x".repeat(150));
    assert.equal(journal.shouldCompact(), true);
    await journal.compact(() => "s".repeat(1000));
    await journal.append("y".repeat(1500));
    assert.equal(journal.shouldCompact(), false, "1.5 KB of log beside a 1 KB snapshot");
    await journal.close();
    const { journal: again } = await reopen(dir, { compactAboveBytes: 100 });
    assert.equal(again.shouldCompact(), false, "the snapshot's size is read back");
    await again.append("z".repeat(600));
    assert.equal(again.shouldCompact(), true, "past twice the snapshot");
    await again.close();
  });

  it("writes its log with O_DSYNC, so that a commit is durable when its write returns", {
    skip: !existsSync("/proc/self/fdinfo") && "no /proc",
  }, async () => {
    const dir = folder();
    const { journal } = await reopen(dir);
    await journal.append("x");
    const log = join(dir, "test.00000001.log");
    const fd = readdirSync("/proc/self/fd").find((entry) => {
      try {
        return readlinkSync(`/proc/self/fd/${entry}`) === log;
      } catch {
        return false;
      }
    });
    assert.ok(fd !== undefined, "the log is open");
    const flags = Number.parseInt(
      /flags:\s+(\d+)/.exec(readFileSync(`/proc/self/fdinfo/${fd}`, "utf8"))![1]!,
      8,
    );
    assert.equal(flags & constants.O_DSYNC, constants.O_DSYNC);
    assert.equal(flags & constants.O_APPEND, constants.O_APPEND);
    await journal.close();
  });

  it("with beforeFirstWrite, opens a folder that is not there empty, makes nothing until its first commit, and awaits the hook before it", async () => {
    const dir = join(folder(), "state");
    const calls: string[] = [];
    const beforeFirstWrite = async (): Promise<void> => {
      calls.push(existsSync(dir) ? "after the folder" : "before the folder");
    };
    const { journal, replay } = await reopen(dir, { beforeFirstWrite });
    assert.deepEqual(replay, { snapshot: undefined, records: [], dropped: undefined });
    assert.equal(existsSync(dir), false, "nothing made at open");
    await Promise.all([journal.append("a"), journal.append("b")]);
    await journal.append("c");
    assert.deepEqual(calls, ["before the folder"], "asked once, before the folder was made");
    assert.deepEqual(logsOf(dir), ["test.00000001.log"]);
    await journal.close();
    const again = await reopen(dir);
    assert.deepEqual(again.replay.records, ["a", "b", "c"]);
    await again.journal.close();
  });

  it("with beforeFirstWrite, leaves nothing behind when closed unwritten", async () => {
    const parent = folder();
    const { journal } = await reopen(join(parent, "state"), {
      beforeFirstWrite: () => Promise.resolve(),
    });
    await journal.close();
    assert.deepEqual(readdirSync(parent), []);
  });

  it("with beforeFirstWrite, refuses the first append, and every later one, when the hook fails, making nothing", async () => {
    const parent = folder();
    const dir = join(parent, "state");
    const { journal } = await reopen(dir, {
      beforeFirstWrite: () => Promise.reject(new Error("the folder is taken")),
    });
    await assert.rejects(journal.append("a"), {
      name: "StorageError",
      code: "ERR_STORAGE_UNAVAILABLE",
      message: /the folder is taken/,
    });
    await assert.rejects(journal.append("b"), { code: "ERR_STORAGE_UNAVAILABLE" });
    await journal.close();
    assert.deepEqual(readdirSync(parent), []);
  });

  it("with beforeFirstWrite, opens a folder that is there as usual, without the hook", async () => {
    const dir = folder();
    const { journal: first } = await reopen(dir);
    await first.append("kept");
    await first.close();
    const { journal, replay } = await reopen(dir, {
      beforeFirstWrite: () => Promise.reject(new Error("not asked")),
    });
    assert.deepEqual(replay.records, ["kept"]);
    await journal.append("more");
    await journal.close();
    const again = await reopen(dir);
    assert.deepEqual(again.replay.records, ["kept", "more"]);
    await again.journal.close();
  });

  it("refuses every append once a write has failed, as unavailable, without resolving the failed ones", async () => {
    const dir = folder();
    let fail = false;
    const openLog = async (path: string): Promise<LogHandle> => {
      const handle = await open(path, "a+");
      return {
        write: (
          bytes,
          offset,
        ) => (fail
          ? Promise.reject(Object.assign(new Error("no space left on device"), { code: "ENOSPC" }))
          : handle.write(bytes, offset)),
        datasync: () => handle.datasync(),
        sync: () => handle.sync(),
        truncate: (length) => handle.truncate(length),
        close: () => handle.close(),
      };
    };
    const { journal } = await reopen(dir, { openLog });
    await journal.append("kept");
    fail = true;
    await assert.rejects(journal.append("lost"), {
      name: "StorageError",
      code: "ERR_STORAGE_UNAVAILABLE",
      message: /no space left/,
    });
    fail = false;
    await assert.rejects(
      journal.append("after"),
      { code: "ERR_STORAGE_UNAVAILABLE" },
      "the journal stays broken",
    );
    await journal.close();
    const { journal: again, replay } = await reopen(dir);
    assert.deepEqual(replay.records, ["kept"]);
    await again.close();
  });

  it("refuses an append after close", async () => {
    const { journal } = await reopen(folder());
    await journal.close();
    await assert.rejects(journal.append(1), { code: "ERR_STORAGE_UNAVAILABLE", message: /closed/ });
  });

  it("refuses a damaged snapshot", async () => {
    const dir = folder();
    const { journal } = await reopen(dir);
    await journal.compact(() => ({ a: 1 }));
    await journal.close();
    const snapshot = join(dir, "test.snapshot");
    writeFileSync(snapshot, flip(readFileSync(snapshot), 12));
    await assert.rejects(reopen(dir), { code: "ERR_STORAGE_CORRUPT", message: /test\.snapshot/ });
  });
});

function flip(bytes: Buffer, at: number): Buffer {
  const copy = Buffer.from(bytes);
  copy[at] = copy[at]! ^ 0xff;
  return copy;
}
