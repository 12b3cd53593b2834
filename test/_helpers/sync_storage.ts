// The contract every sync client storage passes (hono's common-case
// pattern): what is written is loaded back, in a new instance too; a write
// of several keys lands whole; deletions; values are plain JSON copies.
import assert from "node:assert/strict";
import { it } from "node:test";
import type { SyncStorage } from "../../lib/sync_client/mod.ts";

/**
 * Runs the contract.
 * @param open a storage; the same `name` gives the same place, a new name a new one
 * @param durable whether a new instance of a name sees what an earlier one wrote
 */
export function runSyncStorageContract(
  open: (name: string) => SyncStorage,
  durable: boolean,
): void {
  let n = 0;
  const fresh = () => `contract-${++n}`;

  it("loads nothing at first", async () => {
    const storage = open(fresh());
    assert.deepEqual(await storage.load(), new Map());
    await storage.close();
  });

  it("loads back what was written, as a copy, and forgets what was deleted", async () => {
    const storage = open(fresh());
    const value = { a: 1, list: [{ uuid: "x", ok: true, none: null }] };
    await storage.write(new Map<string, unknown>([["one", value], ["two", "text"], ["three", 3]]));
    value.a = 2;
    await storage.write(new Map<string, unknown>([["two", undefined], ["three", 4]]));
    assert.deepEqual(
      await storage.load(),
      new Map<string, unknown>([["one", { a: 1, list: [{ uuid: "x", ok: true, none: null }] }], [
        "three",
        4,
      ]]),
    );
    await storage.close();
  });

  if (durable) {
    it("keeps what was written for the next instance", async () => {
      const name = fresh();
      const first = open(name);
      await first.load();
      await first.write(new Map<string, unknown>([["intent/1", { seq: 1 }], ["session", "s"]]));
      await first.write(new Map<string, unknown>([["session", undefined]]));
      await first.close();
      const second = open(name);
      assert.deepEqual(await second.load(), new Map([["intent/1", { seq: 1 }]]));
      await second.close();
    });
  }
}
