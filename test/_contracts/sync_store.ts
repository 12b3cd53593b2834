// The contract every SyncStore implementation passes: the in-memory store
// now, a shared database later. Each implementation's test file calls
// syncStoreContract with a factory.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parsePatch, type SyncStore } from "../../lib/sync/mod.ts";

/** What a factory gets: a hand-driven clock and a counting UUID source. */
export interface StoreSetup {
  readonly now: () => number;
  readonly uuid: () => string;
  /** Revision retention, milliseconds. */
  readonly revisionRetention: number;
  /** Ticket retention, milliseconds. */
  readonly ticketRetention: number;
}

const T0 = Date.UTC(2026, 0, 5);
const ALICE = { uuid: "a11ce000-0000-4000-8000-000000000001", username: "alice", notifyLanguage: null };
const BOB = { uuid: "b0b00000-0000-4000-8000-000000000002", username: "bob", notifyLanguage: "de" };

function message(n: number, subject = `Subject ${n}`) {
  return { uuid: `10000000-0000-4000-8000-${String(n).padStart(12, "0")}`, subject, body: "", read: false, sent_at: "2026-01-01T00:00:00Z" };
}

function rejectsWith(promise: Promise<unknown>, code: string): Promise<void> {
  return assert.rejects(promise, (error: unknown) => (error as { code?: string }).code === code);
}

/**
 * Runs the SyncStore contract.
 * @param name the implementation's name
 * @param make builds an empty store
 */
export function syncStoreContract(name: string, make: (setup: StoreSetup) => Promise<SyncStore> | SyncStore): void {
  async function fresh() {
    const clock = { time: T0 };
    let n = 0;
    const store = await make({
      now: () => clock.time,
      uuid: () => `00000000-0000-4000-8000-${(++n).toString(16).padStart(12, "0")}`,
      revisionRetention: 1000,
      ticketRetention: 100,
    });
    await store.createContext(ALICE);
    return { store, clock };
  }

  describe(`SyncStore contract: ${name}`, () => {
    it("creates a context once, its first revision holding me", async () => {
      const { store } = await fresh();
      assert.equal(await store.createContext(ALICE), false);
      const head = await store.head(ALICE.uuid);
      assert.equal(head?.serial, 1);
      const data = await store.snapshot(ALICE.uuid);
      assert.deepEqual(data.objects, { me: { uuid: ALICE.uuid, username: "alice", notify_language: null }, messages: [], teams: [] });
      assert.equal(await store.size(ALICE.uuid), 1);
      assert.equal(await store.head(BOB.uuid), undefined);
      await rejectsWith(store.snapshot(BOB.uuid), "ERR_SYNC_NO_CONTEXT");
    });

    it("applies a valid patch as one revision and refuses a rule violation whole", async () => {
      const { store } = await fresh();
      const applied = await store.submit(ALICE.uuid, parsePatch({ objects: { messages: [message(1), message(2)] } }));
      assert.deepEqual(applied.errors, []);
      assert.equal(applied.revision?.serial, 2);
      assert.equal(await store.size(ALICE.uuid), 3);
      const refused = await store.submit(ALICE.uuid, parsePatch({ objects: { messages: [message(3)] }, deleted_objects: { messages: [message(9).uuid] } }));
      assert.equal(refused.revision, undefined);
      assert.equal(refused.errors[0]?.messages[0]?.code, "object_not_found");
      assert.equal((await store.head(ALICE.uuid))?.serial, 2);
      const unchanged = await store.submit(ALICE.uuid, parsePatch({ objects: { messages: [message(1)] } }));
      assert.deepEqual(unchanged, { errors: [], revision: undefined });
    });

    it("diffs between revisions, counts changes, and snapshots an older revision", async () => {
      const { store } = await fresh();
      const base = (await store.head(ALICE.uuid))!;
      await store.submit(ALICE.uuid, parsePatch({ objects: { messages: [message(1), message(2)] } }));
      const middle = (await store.head(ALICE.uuid))!;
      await store.submit(ALICE.uuid, parsePatch({ objects: { messages: [message(2, "new")] }, deleted_objects: { messages: [message(1).uuid] } }));
      const head = (await store.head(ALICE.uuid))!;
      assert.equal(await store.changedSince(ALICE.uuid, base), 2);
      assert.equal(await store.changedSince(ALICE.uuid, middle), 2);
      const diff = await store.diff(ALICE.uuid, middle, head);
      assert.deepEqual(diff?.deleted_objects.messages, [message(1).uuid]);
      assert.deepEqual(diff?.objects.messages.map((m) => m["subject"]), ["new"]);
      assert.equal(await store.diff(ALICE.uuid, head, head), undefined);
      assert.equal((await store.snapshot(ALICE.uuid, middle)).objects.messages.length, 2);
    });

    it("resolves only the owner's revisions: unknown ones and other users' are ERR_SYNC_UNKNOWN_REVISION", async () => {
      const { store } = await fresh();
      await store.createContext(BOB);
      const bobs = (await store.head(BOB.uuid))!;
      const head = (await store.head(ALICE.uuid))!;
      assert.deepEqual(await store.revision(ALICE.uuid, head.uuid), head);
      await rejectsWith(store.revision(ALICE.uuid, bobs.uuid), "ERR_SYNC_UNKNOWN_REVISION");
      await rejectsWith(store.revision(ALICE.uuid, "99999999-0000-4000-8000-000000000000"), "ERR_SYNC_UNKNOWN_REVISION");
      await rejectsWith(store.revision(BOB.uuid.replace("b", "c"), head.uuid), "ERR_SYNC_NO_CONTEXT");
    });

    it("answers ERR_SYNC_REVISION_EXPIRED for a revision past the retention, never for the head", async () => {
      const { store, clock } = await fresh();
      const first = (await store.head(ALICE.uuid))!;
      clock.time = T0 + 500;
      await store.submit(ALICE.uuid, parsePatch({ objects: { messages: [message(1)] } }));
      const second = (await store.head(ALICE.uuid))!;
      clock.time = T0 + 1001;
      await rejectsWith(store.revision(ALICE.uuid, first.uuid), "ERR_SYNC_REVISION_EXPIRED");
      assert.equal((await store.revision(ALICE.uuid, second.uuid)).serial, 2);
      clock.time = T0 + 9_999;
      await store.sweep();
      await rejectsWith(store.revision(ALICE.uuid, first.uuid), "ERR_SYNC_REVISION_EXPIRED");
      assert.equal((await store.revision(ALICE.uuid, second.uuid)).serial, 2);
      // Ten retention periods on, the id of a pruned revision is forgotten: unknown.
      clock.time = T0 + 10_001;
      await rejectsWith(store.revision(ALICE.uuid, first.uuid), "ERR_SYNC_UNKNOWN_REVISION");
    });

    it("keeps tickets per owner, moves them on, and expires them after their retention", async () => {
      const { store, clock } = await fresh();
      const ticket = await store.createTicket(ALICE.uuid, 7);
      assert.equal(ticket.status, "new");
      assert.equal(ticket.client_serial, 7);
      await store.updateTicket(ticket.uuid, "work");
      const data = await store.snapshot(ALICE.uuid);
      await store.updateTicket(ticket.uuid, "done", { data });
      const found = await store.ticket(ALICE.uuid, ticket.uuid);
      assert.ok(found !== undefined && found !== "expired");
      assert.equal(found.ticket.status, "done");
      assert.deepEqual(found.data, data);
      assert.equal(await store.ticket(BOB.uuid, ticket.uuid), undefined);
      assert.equal(await store.ticket(ALICE.uuid, "99999999-0000-4000-8000-000000000000"), undefined);
      clock.time = T0 + 101;
      await store.sweep();
      assert.equal(await store.ticket(ALICE.uuid, ticket.uuid), "expired");
      await rejectsWith(store.updateTicket(ticket.uuid, "failed"), "ERR_SYNC_TICKET_EXPIRED");
    });
  });
}
