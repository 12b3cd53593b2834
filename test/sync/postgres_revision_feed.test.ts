// The feed on PostgreSQL: the contract over two pools on one database (two
// processes), a commit through the store heard by the other pool's feed
// (the trigger's NOTIFY, in the commit's transaction), and the listening
// connection lost and made again (a gap told, heard again after it).
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { connectPostgres, migrate, type SqlPool } from "../../lib/storage/mod.ts";
import {
  parsePatch,
  PostgresRevisionFeed,
  PostgresSyncStore,
  type Revision,
} from "../../lib/sync/mod.ts";
import { SYNC_MIGRATIONS } from "../../lib/sync/_postgres_sync_sql.ts";
import { revisionFeedContract } from "../_contracts/revision_feed.ts";
import { postgresSkip, startPostgres, type TestPostgres } from "../_helpers/postgres.ts";

const OWNER = "a11ce000-0000-4000-8000-000000000001";

describe("the revision feed on PostgreSQL", { skip: postgresSkip }, () => {
  let server: TestPostgres;
  const pools: SqlPool[] = [];

  before(async () => {
    server = await startPostgres();
  });
  after(async () => {
    for (const pool of pools) await pool.close();
    await server.stop();
  });

  async function open(url: string, hooks: Parameters<typeof connectPostgres>[1] = {}) {
    const pool = await connectPostgres(url, hooks);
    pools.push(pool);
    await migrate(pool, "sync", SYNC_MIGRATIONS);
    return pool;
  }

  revisionFeedContract("PostgresRevisionFeed", async () => {
    const url = await server.database();
    const [a, b] = [await open(url), await open(url)];
    const [one, other] = [new PostgresRevisionFeed(a), new PostgresRevisionFeed(b)];
    return {
      one,
      other,
      close: async () => {
        await one.close();
        await other.close();
      },
    };
  });

  it("hears every commit of the store through another pool, sent by the commit's own transaction", async () => {
    const url = await server.database();
    const [a, b] = [await open(url), await open(url)];
    let n = 0;
    const store = new PostgresSyncStore(a, {
      now: () => Date.UTC(2026, 0, 5),
      uuid: () => `00000000-0000-4000-8000-${(++n).toString(16).padStart(12, "0")}`,
    });
    await store.createContext({ uuid: OWNER, username: "alice", notifyLanguage: null });
    const feed = new PostgresRevisionFeed(b);
    const heard: Revision[] = [];
    let wake: (() => void) | undefined;
    await feed.subscribe(OWNER, (revision) => {
      heard.push(revision);
      wake?.();
    });
    const until = async (count: number) => {
      while (heard.length < count) await new Promise<void>((resolve) => (wake = resolve));
    };
    const message = (i: number) => ({
      uuid: `10000000-0000-4000-8000-00000000000${i}`,
      subject: `Hi ${i}`,
      body: "",
      read: false,
      sent_at: "2026-01-01T00:00:00Z",
    });
    // Submitted (its own transaction), placed (the batched statement), queued and run (the runner's).
    const submitted = await store.submit(
      OWNER,
      parsePatch({ objects: { messages: [message(1)] } }),
    );
    await store.place(OWNER, null, parsePatch({ objects: { messages: [message(2)] } }), 16);
    await store.enqueue(OWNER, null, {
      kind: "patch",
      patch: parsePatch({ objects: { messages: [message(3)] } }),
    }, 16);
    await store.runWork(OWNER);
    // Refused: no revision, nothing announced (the next one heard is the marker's).
    await store.submit(OWNER, parsePatch({ deleted_objects: { teams: [message(9).uuid] } }));
    await until(3);
    assert.deepEqual(heard[0], submitted.revision);
    assert.deepEqual(heard.map((revision) => revision.serial), [2, 3, 4]);
    assert.deepEqual(heard[2], await store.head(OWNER));
    await feed.close();
  });

  it("listens again after its connection is lost, tells of the gap, logs the outage, and hears on", async () => {
    const url = await server.database();
    const outage: string[] = [];
    const b = await open(url, {
      onUnavailable: () => void outage.push("unavailable"),
      onAvailable: () => void outage.push("available"),
    });
    const a = await open(url);
    const [one, other] = [new PostgresRevisionFeed(a), new PostgresRevisionFeed(b)];
    let gaps = 0;
    let gapped: (() => void) | undefined;
    other.onGap(() => {
      gaps++;
      gapped?.();
    });
    const heard: number[] = [];
    let wake: (() => void) | undefined;
    await other.subscribe(OWNER, (revision) => {
      heard.push(revision.serial);
      wake?.();
    });
    const gap = new Promise<void>((resolve) => (gapped = resolve));
    // The listening connection ended by the server, as a restart or a failover does.
    const { rows } = await a.query<{ ended: boolean }>(
      "SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity WHERE application_name = 'tributary-listen' AND datname = current_database()",
    );
    assert.deepEqual(rows, [{ ended: true }]);
    await gap;
    assert.equal(gaps, 1);
    assert.deepEqual(outage, ["unavailable", "available"]);
    await one.publish(OWNER, {
      uuid: "00000000-0000-4000-8000-000000000005",
      serial: 5,
      createdAt: 0,
    });
    while (heard.length === 0) await new Promise<void>((resolve) => (wake = resolve));
    assert.deepEqual(heard, [5]);
    await one.close();
    await other.close();
  });

  it("refuses a channel name that is not one", async () => {
    const pool = await open(await server.database());
    await assert.rejects(pool.listen("Robert'); DROP TABLE x;--", { onNotify: () => {} }), {
      name: "RangeError",
    });
  });
});
