// The contract every SyncStore implementation passes: in memory, on the
// journal, on PostgreSQL. Each implementation's test file calls
// syncStoreContract with a factory; a durable one also keeps everything over
// a reopen.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parsePatch, type SyncStore } from "../../lib/sync/mod.ts";
import { createPrng } from "../_helpers/prng.ts";

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
const ALICE = {
  uuid: "a11ce000-0000-4000-8000-000000000001",
  username: "alice",
  notifyLanguage: null,
};
const BOB = { uuid: "b0b00000-0000-4000-8000-000000000002", username: "bob", notifyLanguage: "de" };

function message(n: number, subject = `Subject ${n}`) {
  return {
    uuid: `10000000-0000-4000-8000-${String(n).padStart(12, "0")}`,
    subject,
    body: "",
    read: false,
    sent_at: "2026-01-01T00:00:00Z",
  };
}

function rejectsWith(promise: Promise<unknown>, code: string): Promise<void> {
  return assert.rejects(promise, (error: unknown) => (error as { code?: string }).code === code);
}

/**
 * Runs the SyncStore contract.
 * @param name the implementation's name
 * @param make builds an empty store
 * @param reopen for a durable store: closes it and opens it again from what it keeps, as a restart does
 */
export function syncStoreContract(
  name: string,
  make: (setup: StoreSetup) => Promise<SyncStore> | SyncStore,
  reopen?: (store: SyncStore) => Promise<SyncStore>,
): void {
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
      assert.deepEqual(data.objects, {
        me: { uuid: ALICE.uuid, username: "alice", notify_language: null },
        messages: [],
        teams: [],
      });
      assert.equal(await store.size(ALICE.uuid), 1);
      assert.equal(await store.head(BOB.uuid), undefined);
      await rejectsWith(store.snapshot(BOB.uuid), "ERR_SYNC_NO_CONTEXT");
    });

    it("applies a valid patch as one revision and refuses a rule violation whole", async () => {
      const { store } = await fresh();
      const applied = await store.submit(
        ALICE.uuid,
        parsePatch({ objects: { messages: [message(1), message(2)] } }),
      );
      assert.deepEqual(applied.errors, []);
      assert.equal(applied.revision?.serial, 2);
      assert.equal(await store.size(ALICE.uuid), 3);
      const refused = await store.submit(
        ALICE.uuid,
        parsePatch({
          objects: { messages: [message(3)] },
          deleted_objects: { messages: [message(9).uuid] },
        }),
      );
      assert.equal(refused.revision, undefined);
      assert.equal(refused.errors[0]?.messages[0]?.code, "object_not_found");
      assert.equal((await store.head(ALICE.uuid))?.serial, 2);
      const unchanged = await store.submit(
        ALICE.uuid,
        parsePatch({ objects: { messages: [message(1)] } }),
      );
      assert.deepEqual(unchanged, { errors: [], revision: undefined });
    });

    it("diffs between revisions, counts changes, and snapshots an older revision", async () => {
      const { store } = await fresh();
      const base = (await store.head(ALICE.uuid))!;
      await store.submit(
        ALICE.uuid,
        parsePatch({ objects: { messages: [message(1), message(2)] } }),
      );
      const middle = (await store.head(ALICE.uuid))!;
      await store.submit(
        ALICE.uuid,
        parsePatch({
          objects: { messages: [message(2, "new")] },
          deleted_objects: { messages: [message(1).uuid] },
        }),
      );
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
      await rejectsWith(
        store.revision(ALICE.uuid, "99999999-0000-4000-8000-000000000000"),
        "ERR_SYNC_UNKNOWN_REVISION",
      );
      await rejectsWith(
        store.revision(BOB.uuid.replace("b", "c"), head.uuid),
        "ERR_SYNC_NO_CONTEXT",
      );
    });

    it("answers ERR_SYNC_REVISION_EXPIRED for a revision the retention after it stopped being the head, for good", async () => {
      const { store, clock } = await fresh();
      const first = (await store.head(ALICE.uuid))!;
      clock.time = T0 + 500;
      await store.submit(ALICE.uuid, parsePatch({ objects: { messages: [message(1)] } }));
      const second = (await store.head(ALICE.uuid))!;
      // The retention (1 s) counts from T0 + 500, when the first stopped being the head.
      clock.time = T0 + 1500;
      assert.equal((await store.revision(ALICE.uuid, first.uuid)).serial, 1);
      clock.time = T0 + 1501;
      await rejectsWith(store.revision(ALICE.uuid, first.uuid), "ERR_SYNC_REVISION_EXPIRED");
      // The head for a long time, the second is a base for the whole retention after the next change.
      clock.time = T0 + 100_000;
      await store.sweep();
      assert.equal((await store.revision(ALICE.uuid, second.uuid)).serial, 2);
      await store.submit(ALICE.uuid, parsePatch({ objects: { messages: [message(2)] } }));
      clock.time = T0 + 101_000;
      await store.sweep();
      assert.equal(
        (await store.diff(ALICE.uuid, second, (await store.head(ALICE.uuid))!))?.objects.messages
          .length,
        1,
      );
      clock.time = T0 + 101_001;
      await rejectsWith(store.revision(ALICE.uuid, second.uuid), "ERR_SYNC_REVISION_EXPIRED");
      // However long after, an id this context issued is expired (410), never unknown (404).
      clock.time = T0 + 1e9;
      await store.sweep();
      await rejectsWith(store.revision(ALICE.uuid, first.uuid), "ERR_SYNC_REVISION_EXPIRED");
    });

    it("refuses a whole patch whose base is older than a change to an object it names: a conflict per object, with the revision", async () => {
      const { store } = await fresh();
      await store.submit(
        ALICE.uuid,
        parsePatch({ objects: { messages: [message(1), message(2), message(3)] } }),
      );
      const base = (await store.head(ALICE.uuid))!;
      const phone = await store.submit(
        ALICE.uuid,
        parsePatch({
          objects: { messages: [message(1, "from the phone")] },
          deleted_objects: { messages: [message(3).uuid] },
        }),
      );
      const laptop = await store.submit(
        ALICE.uuid,
        parsePatch({
          objects: { messages: [message(1, "from the laptop"), message(2, "fine alone")] },
          deleted_objects: { messages: [message(3).uuid] },
          base_revision: base.uuid.toUpperCase(),
        }),
      );
      assert.equal(laptop.revision, undefined, "nothing of it applied");
      assert.deepEqual(
        laptop.errors.map((
          e,
        ) => [e.section, e.key?.uuid, e.messages[0]?.code, e.messages[0]?.revision]),
        [
          ["objects", message(1).uuid, "conflict", phone.revision!.uuid],
          ["deleted_objects", message(3).uuid, "conflict", phone.revision!.uuid],
        ],
      );
      const messages = (await store.snapshot(ALICE.uuid)).objects.messages;
      assert.deepEqual(messages.map((m) => m["subject"]), ["from the phone", "Subject 2"]);
      // From the new head, the same edit goes through; so does one naming only objects unchanged since its base.
      const head = (await store.head(ALICE.uuid))!;
      const again = await store.submit(
        ALICE.uuid,
        parsePatch({
          objects: { messages: [message(1, "from the laptop")] },
          base_revision: head.uuid,
        }),
      );
      assert.deepEqual(again.errors, []);
      const other = await store.submit(
        ALICE.uuid,
        parsePatch({ objects: { messages: [message(2, "fine alone")] }, base_revision: base.uuid }),
      );
      assert.deepEqual(other.errors, []);
      const me = await store.submit(
        ALICE.uuid,
        parsePatch({ objects: { me: { notify_language: "fr" } }, base_revision: base.uuid }),
      );
      assert.deepEqual(me.errors, [], "me unchanged since the base");
      const meAgain = await store.submit(
        ALICE.uuid,
        parsePatch({ objects: { me: { notify_language: "de" } }, base_revision: base.uuid }),
      );
      assert.deepEqual(meAgain.errors.map((e) => [e.entity, e.key, e.messages[0]?.code]), [[
        "me",
        null,
        "conflict",
      ]]);
    });

    it("answers a base past the retention or never issued with one error on base_revision, applying nothing", async () => {
      const { store, clock } = await fresh();
      const base = (await store.head(ALICE.uuid))!;
      clock.time = T0 + 10;
      await store.submit(ALICE.uuid, parsePatch({ objects: { messages: [message(1)] } }));
      clock.time = T0 + 5000;
      const late = await store.submit(
        ALICE.uuid,
        parsePatch({ objects: { messages: [message(2)] }, base_revision: base.uuid }),
      );
      assert.deepEqual(late.errors.map((e) => [e.attribute, e.messages[0]?.code]), [[
        "base_revision",
        "conflict",
      ]]);
      const never = await store.submit(
        ALICE.uuid,
        parsePatch({
          objects: { messages: [message(2)] },
          base_revision: "99999999-0000-4000-8000-000000000000",
        }),
      );
      assert.deepEqual(never.errors.map((e) => [e.attribute, e.messages[0]?.code]), [[
        "base_revision",
        "input_data",
      ]]);
      assert.equal((await store.snapshot(ALICE.uuid)).objects.messages.length, 1);
    });

    it("leaves an object deleted already as it is (a retried delete), and refuses one that never existed", async () => {
      const { store } = await fresh();
      await store.submit(ALICE.uuid, parsePatch({ objects: { messages: [message(1)] } }));
      const deleted = await store.submit(
        ALICE.uuid,
        parsePatch({ deleted_objects: { messages: [message(1).uuid] } }),
      );
      const retried = await store.submit(
        ALICE.uuid,
        parsePatch({ deleted_objects: { messages: [message(1).uuid] } }),
      );
      assert.deepEqual(retried, { errors: [], revision: undefined }, "no error, no new revision");
      assert.deepEqual(await store.head(ALICE.uuid), deleted.revision);
      const never = await store.submit(
        ALICE.uuid,
        parsePatch({ deleted_objects: { messages: [message(9).uuid] } }),
      );
      assert.deepEqual(never.errors.map((e) => e.messages[0]?.code), ["object_not_found"]);
    });

    it("never lets a patch with a base overwrite a change made after it, and applies each patch whole or not at all (seeded)", async () => {
      const prng = createPrng(Number(process.env["PROPERTY_SEED"] ?? 0x5eed15));
      const { store } = await fresh();
      // The model: each key's value (undefined: absent) and the serial of its last change.
      const values = new Map<number, string | undefined>();
      const changed = new Map<number, number>();
      const devices = [(await store.head(ALICE.uuid))!, (await store.head(ALICE.uuid))!];
      for (let step = 0; step < 60; step++) {
        const d = prng.int(2);
        if (prng.int(4) === 0) {
          devices[d] = (await store.head(ALICE.uuid))!;
          continue;
        }
        const base = prng.int(3) === 0 ? null : devices[d]!;
        const keys = [...new Set(Array.from({ length: 1 + prng.int(3) }, () => prng.int(6)))];
        const writes: number[] = [];
        const deletes: number[] = [];
        for (const k of keys) (values.has(k) && prng.int(3) === 0 ? deletes : writes).push(k);
        const subject = `s${step}`;
        const before = (await store.head(ALICE.uuid))!;
        const result = await store.submit(
          ALICE.uuid,
          parsePatch({
            objects: { messages: writes.map((k) => message(k, subject)) },
            deleted_objects: { messages: deletes.map((k) => message(k).uuid) },
            ...(base === null ? {} : { base_revision: base.uuid }),
          }),
        );
        const conflicted = base !== null && keys.some((k) => (changed.get(k) ?? 0) > base.serial);
        assert.equal(
          result.errors.length > 0,
          conflicted,
          `step ${step} (seed ${prng.seed}): a conflict exactly when a named object changed after the base`,
        );
        if (conflicted) {
          assert.ok(result.errors.every((e) => e.messages[0]?.code === "conflict"));
          assert.deepEqual(await store.head(ALICE.uuid), before, "nothing applied");
        } else {
          const serial = result.revision?.serial;
          for (const k of writes) {
            if (values.get(k) !== subject) changed.set(k, serial!);
            values.set(k, subject);
          }
          for (const k of deletes) {
            if (values.get(k) !== undefined) changed.set(k, serial!);
            values.set(k, undefined);
          }
        }
        const snapshot = (await store.snapshot(ALICE.uuid)).objects.messages;
        const expected = [...values].filter(([, v]) => v !== undefined).map((
          [k, v],
        ) => [message(k).uuid, v]).sort();
        assert.deepEqual(
          snapshot.map((m) => [m["uuid"], m["subject"]]).sort(),
          expected,
          `step ${step}: the data is the model's`,
        );
      }
    });

    it("gives the first ticket again for an Idempotency-Key sent again, queuing nothing; another body is a mismatch; a key lasts a day", async () => {
      const { store, clock } = await fresh();
      const work = {
        kind: "patch",
        patch: parsePatch({ objects: { messages: [message(1)] } }),
      } as const;
      const key = { key: "k-1", fingerprint: "f1" };
      const first = await store.enqueue(ALICE.uuid, 1, work, 1, key);
      const again = await store.enqueue(ALICE.uuid, 1, work, 1, key);
      assert.equal(again.uuid, first.uuid, "the same ticket, even with the queue full (limit 1)");
      await rejectsWith(
        store.enqueue(ALICE.uuid, 1, work, 1, { key: "k-1", fingerprint: "f2" }),
        "ERR_SYNC_IDEMPOTENCY_MISMATCH",
      );
      assert.equal(await store.runWork(ALICE.uuid), 1, "queued once");
      const done = await store.enqueue(ALICE.uuid, 1, work, 1, key);
      assert.equal(done.uuid, first.uuid);
      assert.equal(done.status, "done", "as it is now");
      assert.equal((await store.head(ALICE.uuid))?.serial, 2, "applied once");
      await store.submit(ALICE.uuid, parsePatch({ objects: { messages: [message(2)] } }));
      // Past the ticket's retention the key still answers, with the ticket as first answered.
      clock.time = T0 + 24 * 3600 * 1000;
      const late = await store.enqueue(ALICE.uuid, 1, work, 1, key);
      assert.equal(late.uuid, first.uuid);
      assert.equal(await store.runWork(ALICE.uuid), 0);
      const reopened = reopen === undefined ? store : await reopen(store);
      assert.equal(
        (await reopened.enqueue(ALICE.uuid, 1, work, 1, key)).uuid,
        first.uuid,
        "kept over a restart",
      );
      // A day on, the key is forgotten: the same key makes new work.
      clock.time = T0 + 24 * 3600 * 1000 + 1;
      await reopened.sweep();
      const renewed = await reopened.enqueue(ALICE.uuid, 1, work, 1, key);
      assert.notEqual(renewed.uuid, first.uuid);
      const other = await reopened.enqueue(ALICE.uuid, 2, work, 2, {
        key: "k-2",
        fingerprint: "f1",
      });
      assert.notEqual(other.uuid, renewed.uuid, "another key is another request");
    });

    it("erases a context with its revisions, objects, tickets and queued work; others stay", async () => {
      const { store } = await fresh();
      await store.createContext(BOB);
      await store.submit(ALICE.uuid, parsePatch({ objects: { messages: [message(1)] } }));
      const old = (await store.head(ALICE.uuid))!;
      const done = await store.enqueue(ALICE.uuid, 1, {
        kind: "patch",
        patch: parsePatch({ objects: { messages: [message(2)] } }),
      }, 16);
      await store.runWork(ALICE.uuid);
      await store.enqueue(ALICE.uuid, 2, {
        kind: "patch",
        patch: parsePatch({ objects: { messages: [message(3)] } }),
      }, 16);
      assert.equal(await store.deleteContext(ALICE.uuid), true);
      assert.equal(await store.head(ALICE.uuid), undefined);
      await rejectsWith(store.revision(ALICE.uuid, old.uuid), "ERR_SYNC_NO_CONTEXT");
      assert.equal(
        await store.ticket(ALICE.uuid, done.uuid),
        undefined,
        "tickets and their results are gone",
      );
      assert.deepEqual(await store.waitingOwners(), [], "queued work is gone");
      assert.equal(await store.deleteContext(ALICE.uuid), false);
      assert.equal((await store.head(BOB.uuid))?.serial, 1);
      assert.equal(await store.createContext(ALICE), true, "a new context may start again");
      assert.equal((await store.snapshot(ALICE.uuid)).objects.messages.length, 0);
    });

    it("queues work under tickets, runs an owner's queue in order, and expires tickets after their retention", async () => {
      const { store, clock } = await fresh();
      const base = (await store.head(ALICE.uuid))!;
      const first = await store.enqueue(ALICE.uuid, 7, {
        kind: "patch",
        patch: parsePatch({ objects: { messages: [message(1)] } }),
      }, 16);
      const second = await store.enqueue(ALICE.uuid, 8, {
        kind: "patch",
        patch: parsePatch({ objects: { messages: [message(1, "edited")] } }),
      }, 16);
      const refused = await store.enqueue(ALICE.uuid, 9, {
        kind: "patch",
        patch: parsePatch({ deleted_objects: { messages: [message(5).uuid] } }),
      }, 16);
      const snapshot = await store.enqueue(
        ALICE.uuid,
        null,
        { kind: "snapshot", at: base.uuid },
        16,
      );
      assert.deepEqual([first.status, first.client_serial, snapshot.client_serial], [
        "new",
        7,
        null,
      ]);
      assert.deepEqual(await store.waitingOwners(), [ALICE.uuid]);
      assert.equal(await store.runWork(BOB.uuid), 0, "another owner's queue is empty");
      assert.equal(await store.runWork(ALICE.uuid), 4);
      assert.deepEqual(await store.waitingOwners(), []);
      const ended = async (uuid: string) => {
        const found = await store.ticket(ALICE.uuid, uuid);
        assert.ok(found !== undefined && found !== "expired", uuid);
        return found;
      };
      assert.deepEqual([
        (await ended(first.uuid)).ticket.status,
        (await ended(first.uuid)).ticket.errors,
      ], ["done", []]);
      assert.equal((await ended(second.uuid)).ticket.status, "done");
      assert.equal(
        (await store.head(ALICE.uuid))?.serial,
        3,
        "the two patches made one revision each, in order",
      );
      assert.equal((await store.snapshot(ALICE.uuid)).objects.messages[0]?.["subject"], "edited");
      const aborted = await ended(refused.uuid);
      assert.equal(aborted.ticket.status, "aborted");
      assert.equal(aborted.ticket.errors[0]?.messages[0]?.code, "object_not_found");
      const computed = await ended(snapshot.uuid);
      assert.equal(computed.ticket.status, "done");
      assert.equal(
        (computed.data as { serial: number }).serial,
        1,
        "the snapshot of the revision asked for",
      );
      assert.equal(await store.ticket(BOB.uuid, first.uuid), undefined);
      assert.equal(
        await store.ticket(ALICE.uuid, "99999999-0000-4000-8000-000000000000"),
        undefined,
      );
      clock.time = T0 + 101;
      await store.sweep();
      assert.equal(await store.ticket(ALICE.uuid, first.uuid), "expired");
    });

    it("places a patch at once when nothing waits (ticket ended with it), and behind waiting work otherwise", async () => {
      const { store, clock } = await fresh();
      clock.time = T0 + 5000;
      const applied = await store.place(
        ALICE.uuid,
        3,
        parsePatch({ objects: { messages: [message(1)] } }),
        16,
      );
      assert.deepEqual([applied.status, applied.client_serial, applied.errors], ["done", 3, []]);
      assert.equal(applied.created_at, "2026-01-05T00:00:05Z");
      assert.equal((await store.head(ALICE.uuid))?.serial, 2, "applied before it answered");
      assert.deepEqual(await store.waitingOwners(), [], "nothing queued");
      const refused = await store.place(
        ALICE.uuid,
        4,
        parsePatch({ deleted_objects: { messages: [message(5).uuid] } }),
        16,
      );
      assert.equal(refused.status, "aborted");
      assert.equal(refused.errors[0]?.messages[0]?.code, "object_not_found");
      const same = await store.place(
        ALICE.uuid,
        5,
        parsePatch({ objects: { messages: [message(1)] } }),
        16,
      );
      assert.deepEqual(
        [same.status, (await store.head(ALICE.uuid))?.serial],
        ["done", 2],
        "a patch that changes nothing makes no revision",
      );
      const found = await store.ticket(ALICE.uuid, applied.uuid);
      assert.ok(found !== undefined && found !== "expired");
      assert.deepEqual(found.ticket, applied, "followed as it was answered");
      const base = (await store.head(ALICE.uuid))!;
      const snapshot = await store.enqueue(
        ALICE.uuid,
        null,
        { kind: "snapshot", at: base.uuid },
        2,
      );
      const behind = await store.place(
        ALICE.uuid,
        6,
        parsePatch({ objects: { messages: [message(2)] } }),
        2,
      );
      assert.equal(behind.status, "new", "queued behind the snapshot");
      await rejectsWith(
        store.place(ALICE.uuid, 7, parsePatch({ objects: { messages: [message(3)] } }), 2),
        "ERR_SYNC_BUSY",
      );
      assert.equal(await store.runWork(ALICE.uuid), 2);
      const taken = await store.ticket(ALICE.uuid, snapshot.uuid);
      assert.ok(taken !== undefined && taken !== "expired");
      assert.equal(
        (taken.data as { objects: { messages: readonly unknown[] } }).objects.messages.length,
        1,
        "the snapshot was taken before the patch behind it",
      );
      assert.equal((await store.head(ALICE.uuid))?.serial, 3);
      await rejectsWith(
        store.place(BOB.uuid, 1, parsePatch({ objects: { messages: [message(1)] } }), 2),
        "ERR_SYNC_NO_CONTEXT",
      );
      const reopened = reopen === undefined ? store : await reopen(store);
      const kept = await reopened.ticket(ALICE.uuid, applied.uuid);
      assert.ok(kept !== undefined && kept !== "expired");
      assert.deepEqual(
        [kept.ticket.status, (await reopened.head(ALICE.uuid))?.serial],
        ["done", 3],
        "kept over a reopen",
      );
    });

    it("places patches racing for one owner once each, in one history of strictly increasing serials", async () => {
      const { store } = await fresh();
      const tickets = await Promise.all(
        Array.from(
          { length: 20 },
          (_, i) =>
            store.place(ALICE.uuid, i, parsePatch({ objects: { messages: [message(i + 1)] } }), 32),
        ),
      );
      await store.runWork(ALICE.uuid);
      for (const ticket of tickets) {
        const found = await store.ticket(ALICE.uuid, ticket.uuid);
        assert.ok(found !== undefined && found !== "expired");
        assert.equal(found.ticket.status, "done");
      }
      assert.equal((await store.head(ALICE.uuid))?.serial, 21, "one revision each");
      assert.equal((await store.snapshot(ALICE.uuid)).objects.messages.length, 20);
    });

    it("refuses work past an owner's limit of unfinished tickets, and work for an owner without a context", async () => {
      const { store } = await fresh();
      await store.createContext(BOB);
      const patch = parsePatch({ objects: { messages: [message(1)] } });
      await store.enqueue(ALICE.uuid, 1, { kind: "patch", patch }, 2);
      await store.enqueue(ALICE.uuid, 2, { kind: "patch", patch }, 2);
      await rejectsWith(store.enqueue(ALICE.uuid, 3, { kind: "patch", patch }, 2), "ERR_SYNC_BUSY");
      await store.enqueue(BOB.uuid, 1, { kind: "patch", patch }, 2);
      await store.runWork(ALICE.uuid);
      await store.enqueue(ALICE.uuid, 3, { kind: "patch", patch }, 2);
      await rejectsWith(
        store.enqueue("c0c00000-0000-4000-8000-000000000003", 1, { kind: "patch", patch }, 2),
        "ERR_SYNC_NO_CONTEXT",
      );
    });

    it("ends a queued diff failed when its base expired before it ran", async () => {
      const { store, clock } = await fresh();
      const base = (await store.head(ALICE.uuid))!;
      clock.time = T0 + 500;
      await store.submit(ALICE.uuid, parsePatch({ objects: { messages: [message(1)] } }));
      const head = (await store.head(ALICE.uuid))!;
      clock.time = T0 + 1450;
      const ticket = await store.enqueue(ALICE.uuid, null, {
        kind: "diff",
        base: base.uuid,
        to: head.uuid,
      }, 16);
      clock.time = T0 + 1501;
      await store.runWork(ALICE.uuid);
      const found = await store.ticket(ALICE.uuid, ticket.uuid);
      assert.ok(found !== undefined && found !== "expired");
      assert.equal(found.ticket.status, "failed");
    });

    if (reopen !== undefined) {
      it("keeps contexts, objects, serials, revisions, tickets and queued work over a reopen", async () => {
        const { store, clock } = await fresh();
        await store.createContext(BOB);
        const first = (await store.head(ALICE.uuid))!;
        clock.time = T0 + 100;
        await store.submit(
          ALICE.uuid,
          parsePatch({ objects: { messages: [message(1), message(2)] } }),
        );
        const second = (await store.head(ALICE.uuid))!;
        clock.time = T0 + 1150;
        await store.submit(
          ALICE.uuid,
          parsePatch({ objects: { messages: [message(2, "edited")] } }),
        );
        await store.sweep();
        const done = await store.enqueue(ALICE.uuid, 4, {
          kind: "patch",
          patch: parsePatch({ objects: { messages: [message(3)] } }),
        }, 16);
        await store.runWork(ALICE.uuid);
        const waiting = await store.enqueue(ALICE.uuid, 5, {
          kind: "patch",
          patch: parsePatch({ deleted_objects: { messages: [message(1).uuid] } }),
        }, 16);
        const head = (await store.head(ALICE.uuid))!;
        const before = await store.snapshot(ALICE.uuid);
        const again = await reopen(store);
        assert.equal(await again.createContext(ALICE), false, "the context is still there");
        assert.deepEqual(await again.head(ALICE.uuid), head);
        assert.deepEqual(await again.snapshot(ALICE.uuid), before);
        assert.deepEqual(await again.revision(ALICE.uuid, second.uuid), second);
        await rejectsWith(again.revision(ALICE.uuid, first.uuid), "ERR_SYNC_REVISION_EXPIRED");
        assert.equal((await again.diff(ALICE.uuid, second, head))?.objects.messages.length, 2);
        const kept = await again.ticket(ALICE.uuid, done.uuid);
        assert.ok(kept !== undefined && kept !== "expired");
        assert.equal(kept.ticket.status, "done");
        assert.deepEqual(
          await again.waitingOwners(),
          [ALICE.uuid],
          "work accepted before the restart is still queued",
        );
        assert.equal(await again.runWork(ALICE.uuid), 1);
        assert.equal(
          (await again.head(ALICE.uuid))?.serial,
          head.serial + 1,
          "serials go on from where they were",
        );
        const ended = await again.ticket(ALICE.uuid, waiting.uuid);
        assert.ok(ended !== undefined && ended !== "expired");
        assert.equal(ended.ticket.status, "done");
        assert.equal((await again.head(BOB.uuid))?.serial, 1);
      });
    }
  });
}
