import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { openStateDir } from "../../lib/storage/mod.ts";

function folder(): string {
  return join(mkdtempSync(join(tmpdir(), "tributary-state-")), "var");
}

describe("openStateDir()", () => {
  it("creates the folder, holds its lock while open and releases it at close", async () => {
    const dir = folder();
    const state = await openStateDir(dir);
    assert.ok(existsSync(join(dir, "LOCK")));
    const { journal } = await state.journal("auth");
    await journal.append({ a: 1 });
    await journal.close();
    await state.close();
    assert.equal(existsSync(join(dir, "LOCK")), false);
  });

  it("refuses a folder a live process holds, naming STATE_DIR and the process", async () => {
    const dir = folder();
    const first = await openStateDir(dir, { pid: 1001, alive: () => true });
    await assert.rejects(openStateDir(dir, { pid: 1002, alive: (pid) => pid === 1001 }), {
      name: "ConfigError",
      variable: "STATE_DIR",
      message: /in use by process 1001/,
    });
    await first.close();
    const second = await openStateDir(dir, { pid: 1002, alive: () => true });
    await second.close();
  });

  it("takes over the lock of a process that is gone", async () => {
    const dir = folder();
    await openStateDir(dir, { pid: 1001, alive: () => true });
    const next = await openStateDir(dir, { pid: 1002, alive: (pid) => pid !== 1001 });
    await next.close();
  });

  it("takes over a lock it holds itself (a restart that got the same process id) and an unreadable one", async () => {
    const dir = folder();
    await openStateDir(dir, { pid: 7, alive: () => true });
    const same = await openStateDir(dir, { pid: 7, alive: () => true });
    await same.close();
    const bare = folder();
    await openStateDir(bare);
    writeFileSync(join(bare, "LOCK"), "not json");
    const taken = await openStateDir(bare, { pid: 9, alive: () => true });
    await taken.close();
    assert.equal(hostname().length > 0, true);
  });

  it("names STATE_DIR when the folder cannot be created", async () => {
    const file = join(mkdtempSync(join(tmpdir(), "tributary-state-")), "file");
    writeFileSync(file, "");
    await assert.rejects(openStateDir(join(file, "var")), { name: "ConfigError", variable: "STATE_DIR" });
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
    assert.deepEqual(readdirSync(dir).sort(), ["LOCK", "auth.00000001.log", "auth.snapshot"]);
    assert.equal(JSON.parse(readFileSync(join(dir, "LOCK"), "utf8")).pid, 1001);
    await journal.close();
    await state.close();
    assert.equal(existsSync(join(dir, "LOCK")), false);
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
    assert.deepEqual(readdirSync(dir), ["LOCK"]);
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
    const state = await openStateDir(dir, { lazily: true, pid: 1001, alive: () => true });
    assert.ok(existsSync(join(dir, "LOCK")));
    await assert.rejects(openStateDir(dir, { lazily: true, pid: 1002, alive: (pid) => pid === 1001 }), { name: "ConfigError", variable: "STATE_DIR" });
    await state.close();
  });

  it("refuses at hold() a folder a live process took meanwhile, and the journals' writes with it", async () => {
    const dir = folder();
    const state = await openStateDir(dir, { lazily: true, pid: 1001, alive: () => true });
    const { journal } = await state.journal("auth");
    const other = await openStateDir(dir, { pid: 1002, alive: () => true });
    await assert.rejects(state.hold(), { name: "ConfigError", variable: "STATE_DIR", message: /in use by process 1002/ });
    await assert.rejects(journal.append("x"), { name: "StorageError", code: "ERR_STORAGE_UNAVAILABLE", message: /in use by process 1002/ });
    await journal.close();
    await state.close();
    assert.ok(existsSync(join(dir, "LOCK")), "the other process's lock is left alone");
    await other.close();
  });

  it("refuses a folder another process made and journaled in meanwhile, whose records it never read", async () => {
    const dir = folder();
    const state = await openStateDir(dir, { lazily: true, pid: 1001, alive: () => true });
    const { journal } = await state.journal("auth");
    const other = await openStateDir(dir, { pid: 1002, alive: () => true });
    const written = await other.journal("auth");
    await written.journal.append("theirs");
    await written.journal.close();
    await other.close();
    await assert.rejects(journal.append("mine"), { code: "ERR_STORAGE_UNAVAILABLE", message: /made after this process started, with journals it did not read \(auth\.00000001\.log, auth\.snapshot\)/ });
    await journal.close();
    await state.close();
    assert.deepEqual(readdirSync(dir).sort(), ["auth.00000001.log", "auth.snapshot"], "unlocked again, its journal as the other process left it");
    const check = await openStateDir(dir);
    const reread = await check.journal("auth");
    assert.deepEqual(reread.replay.records, ["theirs"]);
    await reread.journal.close();
    await check.close();
  });
});
