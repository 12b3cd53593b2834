// The sync client's storages: the contract for memory and for a folder,
// and the folder's journal read back after a crash cut a line short, and
// compacted into state.json.
import assert from "node:assert/strict";
import { appendFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { fileStorage, memoryStorage } from "../../lib/sync_client/mod.ts";
import { runSyncStorageContract } from "../_helpers/sync_storage.ts";

const temporary = mkdtempSync(join(tmpdir(), "tributary-sync-storage-"));
after(() => rmSync(temporary, { recursive: true, force: true }));

describe("memoryStorage()", () => {
  runSyncStorageContract(() => memoryStorage(), false);
});

describe("fileStorage()", () => {
  runSyncStorageContract((name) => fileStorage(join(temporary, name)), true);

  it("loads every whole write of the journal and none of a line a crash cut short", async () => {
    const folder = join(temporary, "torn");
    const storage = fileStorage(folder);
    await storage.load();
    await storage.write(new Map([["a", 1]]));
    await storage.write(new Map([["b", 2]]));
    await storage.close();
    appendFileSync(join(folder, "journal.jsonl"), '{"set":{"c":3},"dele');
    const again = fileStorage(folder);
    assert.deepEqual(await again.load(), new Map([["a", 1], ["b", 2]]));
    await again.close();
  });

  it("compacts the journal into state.json when it grows, and at each load", async () => {
    const folder = join(temporary, "compact");
    const storage = fileStorage(folder, { compactAbove: 100 });
    await storage.load();
    for (let i = 0; i < 10; i++) await storage.write(new Map([[`k${i}`, "x".repeat(20)]]));
    assert.ok(readFileSync(join(folder, "journal.jsonl"), "utf8").length <= 100);
    assert.equal(
      Object.keys(JSON.parse(readFileSync(join(folder, "state.json"), "utf8"))).length >= 3,
      true,
    );
    await storage.close();
    const again = fileStorage(folder);
    assert.equal((await again.load()).size, 10);
    assert.equal(readFileSync(join(folder, "journal.jsonl"), "utf8"), "");
    await again.close();
  });

  it("refuses an empty path", () => {
    assert.throws(() => fileStorage(""), TypeError);
  });
});
