import { after, before, describe } from "node:test";
import { connectPostgres, migrate, type SqlPool } from "../../lib/storage/mod.ts";
import { PostgresSyncStore, SYNC_MIGRATIONS, type SyncStore } from "../../lib/sync/mod.ts";
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
});
