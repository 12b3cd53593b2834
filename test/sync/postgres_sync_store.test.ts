import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { connectPostgres, migrate, type SqlPool } from "../../lib/storage/mod.ts";
import { parsePatch, PostgresSyncStore, type SyncStore } from "../../lib/sync/mod.ts";
import { SYNC_MIGRATIONS } from "../../lib/sync/_postgres_sync_sql.ts";
import { type StoreSetup, syncStoreContract } from "../_contracts/sync_store.ts";
import { postgresSkip, startPostgres, type TestPostgres } from "../_helpers/postgres.ts";

describe("the sync store on PostgreSQL", { skip: postgresSkip }, () => {
  let server: TestPostgres;
  const pools: SqlPool[] = [];
  const opened = new WeakMap<SyncStore, { url: string; setup: StoreSetup }>();

  before(async () => {
    server = await startPostgres();
  });
  after(async () => {
    for (const pool of pools) await pool.close();
    await server.stop();
  });

  async function open(url: string, setup: StoreSetup): Promise<SyncStore> {
    const pool = await connectPostgres(url);
    pools.push(pool);
    await migrate(pool, "sync", SYNC_MIGRATIONS);
    const store = new PostgresSyncStore(pool, setup);
    opened.set(store, { url, setup });
    return store;
  }

  syncStoreContract(
    "PostgresSyncStore",
    async (setup) => open(await server.database(), setup),
    (store) => {
      // Another pool on the same database: what a restarted or second process sees.
      const { url, setup } = opened.get(store)!;
      return open(url, setup);
    },
  );

  it("keeps one history when two processes place patches for one owner at once, editing one object", async () => {
    const url = await server.database();
    const setup = {
      now: Date.now,
      uuid: randomUUID,
      revisionRetention: 86_400_000,
      ticketRetention: 600_000,
    };
    const [one, two] = [await open(url, setup), await open(url, setup)];
    const owner = "a11ce000-0000-4000-8000-00000000000a";
    await one.createContext({ uuid: owner, username: "alice", notifyLanguage: null });
    const first = (await one.head(owner))!;
    const shared = "10000000-0000-4000-8000-0000000000ff";
    const patch = (i: number) =>
      parsePatch({
        objects: {
          messages: [{
            uuid: shared,
            subject: `Edit ${i}`,
            body: "",
            read: false,
            sent_at: "2026-01-01T00:00:00Z",
          }],
        },
      });
    const tickets = await Promise.all(
      Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? one : two).place(owner, i, patch(i), 64)),
    );
    // What went to the queue instead runs on either; the runner that finds the other at work leaves the queue to it.
    await Promise.all([one.runWork(owner), two.runWork(owner)]);
    await one.runWork(owner);
    for (const ticket of tickets) {
      const found = await one.ticket(owner, ticket.uuid);
      assert.ok(found !== undefined && found !== "expired");
      assert.equal(found.ticket.status, "done", ticket.uuid);
    }
    assert.equal((await two.head(owner))!.serial, 41, "one revision each, serials without a gap");
    // Each change of the object starts from the value the change before left: no patch was checked against a stale view.
    const pool = await connectPostgres(url);
    pools.push(pool);
    const { rows } = await pool.query<
      { serial: number; prev: { subject: string } | null; next: { subject: string } }
    >(
      "SELECT serial, prev, next FROM sync_changes WHERE owner = $1 AND entity = 1 ORDER BY serial",
      [owner],
    );
    assert.deepEqual(rows.map((row) => row.serial), Array.from({ length: 40 }, (_, i) => i + 2));
    for (const [i, row] of rows.entries()) {
      assert.equal(
        row.prev?.subject,
        i === 0 ? undefined : rows[i - 1]!.next.subject,
        `serial ${row.serial}`,
      );
    }
    const diff = await one.diff(owner, first, (await one.head(owner))!);
    assert.equal(diff?.objects.messages.length, 1);
    assert.equal(diff?.objects.messages[0]?.["subject"], rows.at(-1)!.next.subject);
  });
});
