import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { AUTH_MIGRATIONS } from "../../lib/auth/postgres_auth_store.ts";
import { type AuthStore, PostgresAuthStore, PostgresLoginThrottle } from "../../lib/auth/mod.ts";
import { KNOWN_ADDRESS_MS } from "../../lib/auth/login_throttle.ts";
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

  loginLimiterContract(
    "PostgresLoginThrottle",
    async (options) => new PostgresLoginThrottle(await open(await server.database()), options),
  );

  it("shares a name's failures and its known addresses between processes; the sweep forgets addresses after 30 days", async () => {
    const url = await server.database();
    const [one, two] = [await open(url), await open(url)];
    let t = 0;
    const options = { now: () => t, maxPerUser: 5, maxPerName: 2, maxPerAddress: 0 };
    const [first, second] = [
      new PostgresLoginThrottle(one, options),
      new PostgresLoginThrottle(two, options),
    ];
    const ann = { kind: "user", name: "ann" } as const;
    assert.equal(await first.start(ann, "home"), 0);
    await first.succeed(ann, "home");
    assert.equal(await first.start(ann, "bot1"), 0);
    assert.equal(await second.start(ann, "bot2"), 0);
    assert.equal(await second.start(ann, "bot3"), 1, "the failures seen by both processes add up");
    assert.equal(
      await second.start(ann, "home"),
      0,
      "the address known through the other process is not slowed",
    );
    t = KNOWN_ADDRESS_MS + 1;
    const known = async () =>
      Number(
        (await one.query<{ n: string }>("SELECT count(*) AS n FROM auth_known_addresses")).rows[0]!
          .n,
      );
    assert.equal(await known(), 1);
    await new PostgresAuthStore(one).sweep(t);
    assert.equal(await known(), 0);
  });
});
