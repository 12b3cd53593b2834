import assert from "node:assert/strict";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
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
