import { after, before, describe } from "node:test";
import { AUTH_MIGRATIONS, type AuthStore, PostgresAuthStore, PostgresLoginThrottle } from "../../lib/auth/mod.ts";
import { connectPostgres, migrate, type SqlPool } from "../../lib/storage/mod.ts";
import { authStoreContract } from "../_contracts/auth_store.ts";
import { loginLimiterContract } from "../_contracts/login_limiter.ts";
import { postgresSkip, startPostgres, type TestPostgres } from "../_helpers/postgres.ts";

describe("the auth stores on PostgreSQL", { skip: postgresSkip }, () => {
  let server: TestPostgres;
  const pools: SqlPool[] = [];
  const urls = new WeakMap<AuthStore, string>();

  before(async () => {
    server = await startPostgres();
  });
  after(async () => {
    for (const pool of pools) await pool.close();
    await server.stop();
  });

  async function open(url: string): Promise<SqlPool> {
    const pool = await connectPostgres(url);
    pools.push(pool);
    await migrate(pool, "auth", AUTH_MIGRATIONS);
    return pool;
  }

  authStoreContract(
    "PostgresAuthStore",
    async () => {
      const url = await server.database();
      const store = new PostgresAuthStore(await open(url));
      urls.set(store, url);
      return store;
    },
    async (store) => {
      // Another pool on the same database: what a restarted or second process sees.
      const url = urls.get(store)!;
      const again = new PostgresAuthStore(await open(url));
      urls.set(again, url);
      return again;
    },
  );

  loginLimiterContract("PostgresLoginThrottle", async (options) => new PostgresLoginThrottle(await open(await server.database()), options));
});
