import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  MemorySyncStore,
  type MemorySyncStoreOptions,
  parsePatch,
  type SyncChange,
} from "../../lib/sync/mod.ts";
import { type StoreSetup, syncStoreContract } from "../_contracts/sync_store.ts";
import { journaledStores } from "../_helpers/storage.ts";

syncStoreContract("MemorySyncStore", (setup) => new MemorySyncStore(setup));

const { open, reopen } = journaledStores<MemorySyncStore, SyncChange>();

function journaled(compactAboveBytes?: number): (setup: StoreSetup) => Promise<MemorySyncStore> {
  return (setup) =>
    open(
      (snapshot, records, sink) => MemorySyncStore.restore(snapshot, records, { ...setup, sink }),
      compactAboveBytes,
    );
}

syncStoreContract("MemorySyncStore on a journal", journaled(), reopen);
syncStoreContract(
  "MemorySyncStore on a journal that compacts after every few changes",
  journaled(600),
  reopen,
);

const ALICE = {
  uuid: "a11ce000-0000-4000-8000-000000000001",
  username: "alice",
  notifyLanguage: null,
};

/** A store's options; `from` starts the ids elsewhere, as the random ids of a restarted process would. */
function options(sink?: MemorySyncStoreOptions["sink"], from = 0): MemorySyncStoreOptions {
  let n = from;
  return {
    now: () => Date.UTC(2026, 0, 5),
    uuid: () => `00000000-0000-4000-8000-${(++n).toString(16).padStart(12, "0")}`,
    ...(sink === undefined ? {} : { sink }),
  };
}

describe("MemorySyncStore", () => {
  it("records each change with the ids and times it drew, and a queued patch's revision with its ticket's end", async () => {
    const recorded: SyncChange[] = [];
    const store = new MemorySyncStore(
      options({ record: (change) => (recorded.push(change), Promise.resolve()) }),
    );
    await store.createContext(ALICE);
    await store.enqueue(ALICE.uuid, 1, {
      kind: "patch",
      patch: parsePatch({
        objects: { teams: [{ uuid: "20000000-0000-4000-8000-000000000001", name: "A" }] },
      }),
    }, 4);
    await store.runWork(ALICE.uuid);
    // The ticket's time at work is shown, not journaled: its end is.
    assert.deepEqual(recorded.map((change) => change.op), ["context", "ticket", "commit"]);
    const commit = recorded[2] as Extract<SyncChange, { op: "commit" }>;
    assert.equal(
      commit.ticket,
      recorded[1]!.uuids[0],
      "the commit ends the ticket the work was queued under",
    );
    assert.equal(commit.uuids.length, 1);
    const replayed = MemorySyncStore.restore(undefined, recorded, options());
    assert.deepEqual(await replayed.snapshot(ALICE.uuid), await store.snapshot(ALICE.uuid));
  });

  it("reports a change that could not be made durable, and a restart finds its work still queued", async () => {
    const recorded: SyncChange[] = [];
    let fail = false;
    const store = new MemorySyncStore(options({
      record: (change) => {
        if (fail && change.op === "commit") return Promise.reject(new Error("disk full"));
        recorded.push(change);
        return Promise.resolve();
      },
    }));
    await store.createContext(ALICE);
    const ticket = await store.enqueue(ALICE.uuid, 1, {
      kind: "patch",
      patch: parsePatch({
        objects: { teams: [{ uuid: "20000000-0000-4000-8000-000000000001", name: "A" }] },
      }),
    }, 4);
    fail = true;
    await assert.rejects(store.runWork(ALICE.uuid), /disk full/);
    const restarted = MemorySyncStore.restore(undefined, recorded, options(undefined, 100));
    assert.deepEqual(await restarted.waitingOwners(), [ALICE.uuid]);
    await restarted.runWork(ALICE.uuid);
    const found = await restarted.ticket(ALICE.uuid, ticket.uuid);
    assert.ok(found !== undefined && found !== "expired");
    assert.equal(found.ticket.status, "done");
    assert.equal((await restarted.head(ALICE.uuid))?.serial, 2);
  });

  it("refuses a snapshot or a change it did not write", () => {
    assert.throws(() => MemorySyncStore.restore({ contexts: "x" }, [], options()), TypeError);
    assert.throws(
      () => MemorySyncStore.restore(undefined, [{ op: "drop", uuids: [], times: [] }], options()),
      TypeError,
    );
    assert.throws(
      () =>
        MemorySyncStore.restore(
          undefined,
          [{ op: "context", user: ALICE, uuids: [], times: [] }],
          options(),
        ),
      /lacks/,
    );
  });
});
