// The sync client's storages: the contract for memory, for a folder and for
// a model of IndexedDB (the real one is tested in Chromium),
// and the folder's journal read back after a crash cut a line short, and
// compacted into state.json.
import assert from "node:assert/strict";
import { appendFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { fileStorage, indexedDbStorage, memoryStorage } from "../../lib/sync_client/mod.ts";
import { FakeIndexedDb } from "../_helpers/fake_indexed_db.ts";
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

describe("indexedDbStorage() on a model of IndexedDB", () => {
  const factory = new FakeIndexedDb();
  runSyncStorageContract((name) => indexedDbStorage(name, { indexedDB: factory }), true);

  it("rejects a write whose transaction aborts, and keeps what was there", async () => {
    const failing = new FakeIndexedDb();
    const storage = indexedDbStorage("aborts", { indexedDB: failing });
    await storage.write(new Map([["a", 1]]));
    failing.failWrites = true;
    await assert.rejects(storage.write(new Map([["a", 2], ["b", 3]])), /QuotaExceeded/);
    assert.deepEqual(await storage.load(), new Map([["a", 1]]));
    await storage.close();
  });

  it("refuses an empty name, and a platform without IndexedDB", async () => {
    assert.throws(() => indexedDbStorage(""), TypeError);
    await assert.rejects(indexedDbStorage("none").load(), TypeError);
  });
});
