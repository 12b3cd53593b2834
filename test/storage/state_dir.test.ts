import assert from "node:assert/strict";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  statSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { openStateDir, type StateDirOptions } from "../../lib/storage/mod.ts";

function folder(): string {
  return join(mkdtempSync(join(tmpdir(), "tributary-state-")), "var");
}

/** The lock files of a folder. */
function locks(dir: string): string[] {
  return readdirSync(dir).filter((entry) => entry.startsWith("LOCK")).sort();
}

/** Writes a lock as another process would have left it, its time `ageMs` in the past. */
function leftLock(dir: string, generation: number, holder: unknown, ageMs: number): string {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `LOCK.${String(generation).padStart(8, "0")}`);
  writeFileSync(file, typeof holder === "string" ? holder : JSON.stringify(holder));
  const at = new Date(Date.now() - ageMs);
  utimesSync(file, at, at);
  return file;
}

const HERE = "host-a boot-1 ns-1";
const ELSEWHERE = "host-b boot-2 ns-2";
/** A process of this host (its identity injected) whose other processes are all gone. */
const here = (pid: number, options: Partial<StateDirOptions> = {}): StateDirOptions => ({
  pid,
  identity: HERE,
  alive: (other) => other === pid,
  ...options,
});

/** A clock whose waits pass at once, each calling `during` (another process renewing its lock, or not). */
function watched(
  during: () => void = () => {},
): Pick<StateDirOptions, "now" | "sleep"> & { waited: () => number } {
  let t = 0;
  return {
    now: () => t,
    sleep: (ms) => {
      t += ms;
      during();
      return Promise.resolve();
    },
    waited: () => t,
  };
}

describe("openStateDir()", () => {
  it("creates the folder, holds its lock while open and releases it at close", async () => {
    const dir = folder();
    const state = await openStateDir(dir);
    assert.deepEqual(locks(dir), ["LOCK.00000001"]);
    assert.equal(JSON.parse(readFileSync(join(dir, "LOCK.00000001"), "utf8")).pid, process.pid);
    const { journal } = await state.journal("auth");
    await journal.append({ a: 1 });
    await journal.close();
    await state.close();
    assert.deepEqual(locks(dir), []);
  });

  it("refuses a folder a live process holds, naming STATE_DIR and the process", async () => {
    const dir = folder();
    const first = await openStateDir(dir, { pid: 1001, identity: HERE, alive: () => true });
    await assert.rejects(
      openStateDir(dir, { pid: 1002, identity: HERE, alive: (pid) => pid === 1001 }),
      {
        name: "ConfigError",
        variable: "STATE_DIR",
        message: /is in use by process 1001 on .*give each process its own STATE_DIR/,
      },
    );
    await first.close();
    const second = await openStateDir(dir, here(1002));
    await second.close();
  });

  it("takes over at once the lock of a process of this host that is gone, or of this very process", async () => {
    const dir = folder();
    leftLock(dir, 3, { pid: 1001, host: "host-a", identity: HERE }, 0);
    const next = await openStateDir(dir, here(1002));
    assert.deepEqual(locks(dir), ["LOCK.00000004"], "the next generation, the old one removed");
    await next.close();
    leftLock(dir, 7, { pid: 1002, host: "host-a", identity: HERE }, 0);
    const same = await openStateDir(dir, { pid: 1002, identity: HERE, alive: () => true });
    await same.close();
  });

  it("refuses the lock of another host while it is renewed, whatever its process ids, and a half-written one being finished", async () => {
    const dir = folder();
    const lock = leftLock(dir, 1, { pid: 1, host: "host-b", identity: ELSEWHERE }, 0);
    // Another host's pid 1 may be running there: this host cannot tell, the lock's time moving can.
    const renewing = watched(() => utimesSync(lock, new Date(), new Date(Date.now() + 1000)));
    await assert.rejects(openStateDir(dir, here(1, renewing)), {
      variable: "STATE_DIR",
      message: /in use by process 1 on host-b/,
    });
    assert.ok(
      renewing.waited() <= 20_000 / 4,
      `refused at the first renewal seen (${renewing.waited()} ms)`,
    );
    const empty = folder();
    const half = leftLock(empty, 1, "", 0);
    const finishing = watched(() =>
      writeFileSync(
        half,
        JSON.stringify({ pid: 3, host: "host-c", identity: "host-c boot-3 ns-3" }),
      )
    );
    await assert.rejects(openStateDir(empty, here(5, finishing)), {
      variable: "STATE_DIR",
      message: /in use by process 3 on host-c/,
    });
  });

  it("takes over a lock another host stopped renewing, once seen unchanged for a lease, and not one still renewed", async () => {
    const dir = folder();
    const stale = leftLock(dir, 2, { pid: 1, host: "host-b", identity: ELSEWHERE }, 60_000);
    const clock = watched();
    const taken = await openStateDir(dir, here(9, { leaseMs: 20_000, ...clock }));
    assert.ok(clock.waited() >= 20_000, `watched for a whole lease first (${clock.waited()} ms)`);
    assert.equal(existsSync(stale), false);
    assert.deepEqual(locks(dir), ["LOCK.00000003"]);
    await taken.close();
    // A lock of another host whose clock is behind (its time old by this one) but which renews: live.
    const renewed = leftLock(dir, 5, { pid: 1, host: "host-b", identity: ELSEWHERE }, 60_000);
    let touches = 0;
    const renewing = watched(() => {
      const at = new Date(Date.now() - 60_000 + ++touches * 1000);
      utimesSync(renewed, at, at);
    });
    await assert.rejects(openStateDir(dir, here(9, { leaseMs: 20_000, ...renewing })), {
      variable: "STATE_DIR",
      message: /in use by process 1 on host-b/,
    });
    assert.ok(renewing.waited() < 20_000, "refused as soon as its time moved");
  });

  it("renews its lock every quarter lease, and stops its journals' writes once another process has taken it over", async () => {
    const dir = folder();
    let renewal: (() => Promise<void>) | undefined;
    let period = 0;
    const state = await openStateDir(
      dir,
      here(1, {
        leaseMs: 20_000,
        every: (task, ms) => {
          renewal = task;
          period = ms;
          return () => (renewal = undefined);
        },
      }),
    );
    assert.equal(period, 5000);
    const { journal } = await state.journal("auth");
    await journal.append("before");
    const lock = join(dir, "LOCK.00000001");
    const old = new Date(Date.now() - 10_000);
    utimesSync(lock, old, old);
    await renewal!();
    assert.ok(Date.now() - statSync(lock).mtimeMs < 5000, "the holder touched its lock again");
    // Another process takes the folder over (as after this one froze past its lease): at the next renewal this one knows.
    leftLock(dir, 2, { pid: 2, host: "host-b", identity: ELSEWHERE }, 0);
    await renewal!();
    await assert.rejects(journal.append("after"), {
      code: "ERR_STORAGE_UNAVAILABLE",
      message: /taken over by another process/,
    });
    await journal.close();
    await state.close();
    assert.equal(renewal, undefined, "no renewal after close");
    assert.deepEqual(locks(dir), ["LOCK.00000002"], "the other process's lock is left alone");
  });

  it("confirms its lock before a write after a long pause, and writes once confirmed", async () => {
    const dir = folder();
    let t = 0;
    const state = await openStateDir(
      dir,
      here(1, { leaseMs: 20_000, now: () => t, every: () => () => {} }),
    );
    const { journal } = await state.journal("auth");
    await journal.append("one");
    t = 15_000; // Unconfirmed for more than half a lease (no renewal ran): the write confirms first.
    const lock = join(dir, "LOCK.00000001");
    const old = new Date(Date.now() - 15_000);
    utimesSync(lock, old, old);
    await journal.append("two");
    assert.ok(Date.now() - statSync(lock).mtimeMs < 5000, "the write renewed the lock first");
    await journal.close();
    await state.close();
  });

  it("takes no clock reading after a check for a confirmation: frozen at any reading while taking or renewing its lock, and taken over meanwhile, it writes nothing more", async () => {
    for (const phase of ["taking", "renewing"] as const) {
      for (let reading = 1; reading <= 3; reading++) {
        const dir = folder();
        let t = 0;
        let armed = phase === "taking";
        let readings = 0;
        let takenOver = false;
        let renewal: (() => Promise<void>) | undefined;
        // At this reading of the clock the process had been frozen two leases, and another took its lock over.
        const now = (): number => {
          if (armed && ++readings === reading) {
            const newest = Math.max(0, ...locks(dir).map((name) => Number(name.slice(5))));
            if (newest > 0) {
              leftLock(dir, newest + 1, { pid: 2, host: "host-b", identity: ELSEWHERE }, 0);
              takenOver = true;
            }
            t += 40_000;
          }
          return t;
        };
        const state = await openStateDir(
          dir,
          here(1, {
            leaseMs: 20_000,
            now,
            every: (task) => {
              renewal = task;
              return () => {};
            },
          }),
        );
        armed = false;
        if (phase === "renewing") {
          [armed, readings] = [true, 0];
          await renewal!();
          armed = false;
        }
        const { journal } = await state.journal("auth");
        const context = `frozen at reading ${reading} of the clock while ${phase}`;
        if (takenOver) {
          await assert.rejects(
            journal.append("after"),
            { code: "ERR_STORAGE_UNAVAILABLE" },
            context,
          );
        } else await journal.append("after");
        await journal.close();
        await state.close();
      }
    }
  });

  it("refuses no write for a pause alone: paused at any clock reading while a write confirms its lock, nobody taking it over, it writes", async () => {
    for (let reading = 1; reading <= 4; reading++) {
      const dir = folder();
      let t = 0;
      let readings: number | undefined;
      const now = (): number => {
        if (readings !== undefined && ++readings === reading) t += 40_000;
        return t;
      };
      const state = await openStateDir(
        dir,
        here(1, { leaseMs: 20_000, now, every: () => () => {} }),
      );
      const { journal } = await state.journal("auth");
      t = 15_000; // Unconfirmed for more than half a lease: the write confirms first.
      readings = 0;
      await journal.append("after");
      await journal.close();
      await state.close();
    }
  });

  it("names STATE_DIR when the folder cannot be created", async () => {
    const file = join(mkdtempSync(join(tmpdir(), "tributary-state-")), "file");
    writeFileSync(file, "");
    await assert.rejects(openStateDir(join(file, "var")), {
      name: "ConfigError",
      variable: "STATE_DIR",
    });
  });
});

describe("openStateDir() lazily", () => {
  it("makes nothing for a folder that is not there until a journal's first write, then locks it", async () => {
    const dir = folder();
    const state = await openStateDir(dir, { lazily: true, pid: 1001, alive: () => true });
    const { journal, replay } = await state.journal("auth");
    assert.deepEqual(replay.records, []);
    assert.equal(existsSync(dir), false, "nothing made at open");
    await journal.append({ a: 1 });
    // The log, and the snapshot that names it (so that losing the log is noticed).
    assert.deepEqual(readdirSync(dir).sort(), [
      "LOCK.00000001",
      "auth.00000001.log",
      "auth.snapshot",
    ]);
    assert.equal(JSON.parse(readFileSync(join(dir, "LOCK.00000001"), "utf8")).pid, 1001);
    await journal.close();
    await state.close();
    assert.deepEqual(locks(dir), []);
    const again = await openStateDir(dir, { lazily: true });
    const reopened = await again.journal("auth");
    assert.deepEqual(reopened.replay.records, [{ a: 1 }]);
    await reopened.journal.close();
    await again.close();
  });

  it("makes and locks the folder at hold(), before any write", async () => {
    const dir = folder();
    const state = await openStateDir(dir, { lazily: true });
    const { journal } = await state.journal("sync");
    await state.hold();
    assert.deepEqual(readdirSync(dir), ["LOCK.00000001"]);
    await journal.append("x");
    await journal.close();
    await state.close();
    assert.deepEqual(readdirSync(dir).sort(), ["sync.00000001.log", "sync.snapshot"]);
  });

  it("leaves nothing behind when closed unwritten and unheld", async () => {
    const dir = folder();
    const state = await openStateDir(dir, { lazily: true });
    const journals = await Promise.all([state.journal("auth"), state.journal("sync")]);
    for (const { journal } of journals) await journal.close();
    await state.close();
    assert.equal(existsSync(dir), false);
  });

  it("locks a folder that is there at once, as without lazily", async () => {
    const dir = folder();
    mkdirSync(dir);
    const state = await openStateDir(dir, {
      lazily: true,
      pid: 1001,
      identity: HERE,
      alive: () => true,
    });
    assert.deepEqual(locks(dir), ["LOCK.00000001"]);
    await assert.rejects(
      openStateDir(dir, { lazily: true, pid: 1002, identity: HERE, alive: (pid) => pid === 1001 }),
      { name: "ConfigError", variable: "STATE_DIR" },
    );
    await state.close();
  });

  it("refuses at hold() a folder a live process took meanwhile, and the journals' writes with it", async () => {
    const dir = folder();
    const state = await openStateDir(dir, {
      lazily: true,
      pid: 1001,
      identity: HERE,
      alive: () => true,
    });
    const { journal } = await state.journal("auth");
    const other = await openStateDir(dir, { pid: 1002, identity: HERE, alive: () => true });
    await assert.rejects(state.hold(), {
      name: "ConfigError",
      variable: "STATE_DIR",
      message: /in use by process 1002/,
    });
    await assert.rejects(journal.append("x"), {
      name: "StorageError",
      code: "ERR_STORAGE_UNAVAILABLE",
      message: /in use by process 1002/,
    });
    await journal.close();
    await state.close();
    assert.deepEqual(locks(dir), ["LOCK.00000001"], "the other process's lock is left alone");
    await other.close();
  });

  it("refuses a folder another process made and journaled in meanwhile, whose records it never read", async () => {
    const dir = folder();
    const state = await openStateDir(dir, {
      lazily: true,
      pid: 1001,
      identity: HERE,
      alive: () => true,
    });
    const { journal } = await state.journal("auth");
    const other = await openStateDir(dir, { pid: 1002, identity: HERE, alive: () => true });
    const written = await other.journal("auth");
    await written.journal.append("theirs");
    await written.journal.close();
    await other.close();
    await assert.rejects(journal.append("mine"), {
      code: "ERR_STORAGE_UNAVAILABLE",
      message:
        /made after this process started, with journals it did not read \(auth\.00000001\.log, auth\.snapshot\)/,
    });
    await journal.close();
    await state.close();
    assert.deepEqual(
      readdirSync(dir).sort(),
      ["auth.00000001.log", "auth.snapshot"],
      "unlocked again, its journal as the other process left it",
    );
    const check = await openStateDir(dir);
    const reread = await check.journal("auth");
    assert.deepEqual(reread.replay.records, ["theirs"]);
    await reread.journal.close();
    await check.close();
  });
});
