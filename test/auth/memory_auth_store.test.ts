import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { type AuthChange, MemoryAuthStore } from "../../lib/auth/mod.ts";
import { authStoreContract } from "../_contracts/auth_store.ts";
import { journaledStores } from "../_helpers/storage.ts";

authStoreContract("MemoryAuthStore", () => new MemoryAuthStore());

const { open, reopen } = journaledStores<MemoryAuthStore, AuthChange>();

function journaled(compactAboveBytes?: number): Promise<MemoryAuthStore> {
  return open(
    (snapshot, records, sink) => MemoryAuthStore.restore(snapshot, records, { sink }),
    compactAboveBytes,
  );
}

authStoreContract("MemoryAuthStore on a journal", () => journaled(), reopen);
authStoreContract(
  "MemoryAuthStore on a journal that compacts after every few changes",
  () => journaled(300),
  reopen,
);

describe("MemoryAuthStore.restore()", () => {
  it("refuses a snapshot or a change it did not write", () => {
    assert.throws(() => MemoryAuthStore.restore({ users: "x" }, []), TypeError);
    assert.throws(() => MemoryAuthStore.restore(undefined, [{ op: "drop table" }]), TypeError);
  });

  it("does not record what changes nothing", async () => {
    const recorded: AuthChange[] = [];
    const store = new MemoryAuthStore({
      sink: { record: (change) => (recorded.push(change), Promise.resolve()) },
    });
    await store.deleteToken("none");
    await store.revokeFamily("f");
    await store.revokeFamily("f");
    assert.deepEqual(recorded, [{ op: "revoke", family: "f" }]);
  });
});
