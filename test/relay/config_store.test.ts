import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { type ConfigRecord, type ConfigStore, MemoryConfigStore } from "../../lib/relay/mod.ts";
import { configStoreContract } from "../_contracts/config_store.ts";
import { type Journaled, openJournaled } from "../_helpers/storage.ts";

/** One store in memory: a "restart" keeps the same store (there is nothing else to read). */
configStoreContract("MemoryConfigStore", { shared: false, compares: true }, () => {
  const store = new MemoryConfigStore();
  return Promise.resolve({ open: () => Promise.resolve(store), close: () => store.close() });
});

function onJournal(compactAboveBytes?: number) {
  return async () => {
    let current: Journaled<MemoryConfigStore> | undefined;
    let dir: string | undefined;
    return {
      async open(): Promise<ConfigStore> {
        await current?.store.close();
        await current?.close();
        current = await openJournaled<MemoryConfigStore, ConfigRecord>(
          (snapshot, records, sink) => MemoryConfigStore.restore(snapshot, records, sink),
          (store) => store.exportState(),
          dir,
          compactAboveBytes,
        );
        dir = current.dir;
        return current.store;
      },
      close: async () => {
        await current?.close();
      },
    };
  };
}

configStoreContract(
  "MemoryConfigStore on a journal",
  { shared: false, compares: true },
  onJournal(),
);
configStoreContract("MemoryConfigStore on a journal that compacts after every few changes", {
  shared: false,
  compares: true,
}, onJournal(300));

describe("MemoryConfigStore.restore()", () => {
  it("refuses a snapshot or a record it did not write, naming the relay's configuration", () => {
    assert.throws(
      () => MemoryConfigStore.restore({ version: 2, records: [] }, []),
      /relay's configuration: the snapshot/,
    );
    assert.throws(
      () => MemoryConfigStore.restore(undefined, [{ key: "a", revision: 0, value: "x" }]),
      /a record is not one/,
    );
    assert.throws(
      () => MemoryConfigStore.restore(undefined, [{ key: "a", revision: 1 }]),
      /a record is not one/,
    );
  });

  it("answers put only once the change is durable, and fails with the sink", async () => {
    let release: () => void = () => {};
    const store = new MemoryConfigStore({
      record: () => new Promise<void>((resolve) => (release = resolve)),
    });
    let answered = false;
    const put = store.put("acme/a", "x", 0).then((result) => {
      answered = true;
      return result;
    });
    await Promise.resolve();
    assert.equal(answered, false, "not before the sink");
    release();
    assert.deepEqual(await put, { stored: true, revision: 1 });
    const failing = new MemoryConfigStore({ record: () => Promise.reject(new Error("disk full")) });
    await assert.rejects(failing.put("acme/a", "x", 0), /disk full/);
  });
});
