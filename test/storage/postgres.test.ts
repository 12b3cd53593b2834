import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { connectPostgres, isUnavailable, migrate, type SqlPool } from "../../lib/storage/mod.ts";
import {
  postgresServerSkip,
  postgresSkip,
  startPostgres,
  type TestPostgres,
} from "../_helpers/postgres.ts";
import { freePort } from "../_helpers/redis.ts";
import { startTcpProxy, type TcpProxy } from "../_helpers/tcp_proxy.ts";

describe("isUnavailable()", () => {
  const cases = [
    {
      name: "a refused connection",
      error: Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), {
        code: "ECONNREFUSED",
      }),
      expected: true,
    },
    {
      name: "a connection exception (08006)",
      error: { code: "08006", message: "connection failure" },
      expected: true,
    },
    {
      name: "the server shutting down (57P01)",
      error: { code: "57P01", message: "terminating connection due to administrator command" },
      expected: true,
    },
    {
      name: "a statement timeout (57014)",
      error: { code: "57014", message: "canceling statement due to statement timeout" },
      expected: true,
    },
    {
      name: "a connection lost mid-query",
      error: new Error("Connection terminated unexpectedly"),
      expected: true,
    },
    {
      name: "a unique violation (23505)",
      error: { code: "23505", message: "duplicate key value" },
      expected: false,
    },
    {
      name: "a syntax error (42601)",
      error: { code: "42601", message: "syntax error" },
      expected: false,
    },
    { name: "a plain error", error: new Error("boom"), expected: false },
    { name: "a string", error: "ECONNREFUSED", expected: false },
  ] as const;
  for (const c of cases) {
    it(`says ${c.expected} for ${c.name}`, () => assert.equal(isUnavailable(c.error), c.expected));
  }
});

describe("connectPostgres()", () => {
  it("names DATABASE_URL and the address, password hidden, when nothing answers", async () => {
    const port = await freePort();
    await assert.rejects(
      connectPostgres(`postgres://app:s3cret@127.0.0.1:${port}/db`),
      (error: unknown) => {
        assert.equal((error as { variable?: string }).variable, "DATABASE_URL");
        const message = (error as Error).message;
        assert.ok(message.includes(`postgres://app:***@127.0.0.1:${port}/db`), message);
        assert.ok(!message.includes("s3cret"), message);
        return true;
      },
    );
  });
});

describe("on PostgreSQL", { skip: postgresSkip }, () => {
  let server: TestPostgres;
  before(async () => {
    server = await startPostgres();
  });
  after(() => server.stop());

  it("migrates once, even with two processes starting at once", async () => {
    const url = await server.database();
    const [a, b] = [await connectPostgres(url), await connectPostgres(url)];
    const steps = [
      "CREATE TABLE t1 (id int)",
      "CREATE TABLE t2 (id int); INSERT INTO t1 VALUES (1)",
    ];
    const counts = await Promise.all([migrate(a, "test", steps), migrate(b, "test", steps)]);
    assert.deepEqual([...counts].sort(), [0, 2]);
    assert.equal(
      await migrate(a, "test", [...steps, "ALTER TABLE t1 ADD COLUMN name text"]),
      1,
      "only the new step",
    );
    assert.equal((await a.query<{ n: string }>("SELECT count(*) AS n FROM t1")).rows[0]!.n, "1");
    await a.close();
    await b.close();
  });

  it("says to name a user when the URL has none and PostgreSQL refuses the connection for it", async () => {
    const url = new URL(await server.database());
    url.username = "";
    url.password = "";
    // As where $USER is unset (a container, a service manager): the client then sends no user name at all.
    const script = "import { connectPostgres } from './lib/storage/mod.ts';\n" +
      "try { await (await connectPostgres(process.argv[1])).close(); console.log('connected'); } catch (error) { console.log(error.message); }";
    const run = spawnSync(process.execPath, [
      "--import",
      "tsx",
      "--input-type=module",
      "-e",
      script,
      url.href,
    ], {
      cwd: join(import.meta.dirname, "..", ".."),
      env: { PATH: process.env["PATH"] ?? "" },
      encoding: "utf8",
      timeout: 60_000,
    });
    assert.equal(run.status, 0, run.stderr);
    const database = url.pathname;
    assert.match(
      run.stdout,
      /^Cannot start: cannot reach PostgreSQL at postgres:\/\/\S+ \(DATABASE_URL\): .*; the URL names no user/,
    );
    assert.ok(
      run.stdout.trim().endsWith(`name one, as in postgres://user@${url.host}${database}`),
      run.stdout,
    );
  });

  it("says nothing of users when the URL names one", async () => {
    const url = new URL(await server.database());
    url.username = "no_such_role_7f3a";
    await assert.rejects(connectPostgres(url.href), (error: unknown) => {
      const message = (error as Error).message;
      assert.match(message, /role "no_such_role_7f3a" does not exist/);
      assert.doesNotMatch(message, /names no user/);
      return true;
    });
  });

  it("rolls a transaction back when its work throws", async () => {
    const pool = await connectPostgres(await server.database());
    await pool.query("CREATE TABLE t (id int)");
    await assert.rejects(
      pool.transaction(async (db) => {
        await db.query("INSERT INTO t VALUES (1)");
        throw new Error("changed my mind");
      }),
      /changed my mind/,
    );
    assert.equal((await pool.query("SELECT * FROM t")).rowCount, 0);
    await pool.close();
  });
});

describe("a pool whose database goes away and comes back", { skip: postgresServerSkip }, () => {
  let server: TestPostgres;
  let pool: SqlPool;
  before(async () => {
    server = await startPostgres(true);
    pool = await connectPostgres(await server.database(), { poolSize: 2 });
  });
  after(async () => {
    await pool.close();
    await server.stop();
  });

  it("answers ERR_STORAGE_UNAVAILABLE while it is away and works again without a reconnect by hand", async () => {
    assert.equal((await pool.query("SELECT 1")).rowCount, 1);
    server.crash();
    await assert.rejects(pool.query("SELECT 1"), {
      name: "StorageError",
      code: "ERR_STORAGE_UNAVAILABLE",
    });
    await assert.rejects(pool.transaction((db) => db.query("SELECT 1")), {
      code: "ERR_STORAGE_UNAVAILABLE",
    });
    server.restart();
    assert.equal((await pool.query("SELECT 1")).rowCount, 1);
  });

  it("tells onUnavailable of each call that cannot reach it, and onAvailable once of the first that does again", async () => {
    const heard: string[] = [];
    const watched = await connectPostgres(await server.database(), {
      poolSize: 2,
      onError: () => heard.push("idle connection lost"),
      onUnavailable: () => heard.push("unavailable"),
      onAvailable: () => heard.push("available"),
    });
    try {
      assert.equal((await watched.query("SELECT 1")).rowCount, 1);
      assert.equal(heard.length, 0, "nothing while it answers");
      server.crash();
      await assert.rejects(watched.query("SELECT 1"), { code: "ERR_STORAGE_UNAVAILABLE" });
      await assert.rejects(watched.transaction((db) => db.query("SELECT 1")), {
        code: "ERR_STORAGE_UNAVAILABLE",
      });
      // Not a failure to reach it: told to neither hook.
      server.restart();
      await assert.rejects(watched.query("SELECT * FROM no_such_table"), { code: "42P01" });
      assert.equal((await watched.query("SELECT 1")).rowCount, 1);
      assert.equal((await watched.query("SELECT 1")).rowCount, 1);
      const away = heard.filter((event) => event !== "available");
      assert.ok(away.filter((event) => event === "unavailable").length >= 2, heard.join(", "));
      assert.deepEqual(
        heard.slice(heard.indexOf("available")),
        ["available"],
        "told once it is back, at the first call that succeeds",
      );
    } finally {
      await watched.close();
    }
  });
});

describe("a pool whose connection stalls (packets held) or drops", {
  skip: postgresSkip,
  timeout: 60_000,
}, () => {
  // The statement timeout and the margin: a statement unanswered 600 ms after it was asked is given up.
  const STATEMENT_TIMEOUT_MS = 400;
  const DEADLINE_MS = STATEMENT_TIMEOUT_MS + 200;
  /** Slack for the event loop of a loaded machine. */
  const SLACK_MS = 400;
  let server: TestPostgres;
  let proxy: TcpProxy;
  let url: string;
  before(async () => {
    server = await startPostgres();
    url = await server.database();
    proxy = await startTcpProxy(Number(new URL(url).port));
  });
  after(async () => {
    await proxy.close();
    await server.stop();
  });

  /** Runs `call`, which must fail with ERR_STORAGE_UNAVAILABLE; gives how long it took, in milliseconds. */
  async function failsAfter(call: () => Promise<unknown>): Promise<number> {
    const start = performance.now();
    await assert.rejects(call(), { name: "StorageError", code: "ERR_STORAGE_UNAVAILABLE" });
    return performance.now() - start;
  }

  async function open(poolSize = 2): Promise<SqlPool> {
    return connectPostgres(proxy.via(url), {
      poolSize,
      statementTimeoutMs: STATEMENT_TIMEOUT_MS,
      answerMarginMs: DEADLINE_MS - STATEMENT_TIMEOUT_MS,
    });
  }

  it("gives a statement up at its deadline, closes its connection, and works on a new one once the network is back", async () => {
    const pool = await open();
    try {
      assert.equal(pool.deadlineMs, DEADLINE_MS);
      assert.equal((await pool.query("SELECT 1")).rowCount, 1);
      proxy.stall();
      const took = await failsAfter(() => pool.query("SELECT 1"));
      assert.ok(
        took >= DEADLINE_MS - 50 && took < DEADLINE_MS + SLACK_MS,
        `given up after ${took} ms`,
      );
      // Asked again while it still stalls: the same, never longer.
      assert.ok(await failsAfter(() => pool.query("SELECT 2")) < DEADLINE_MS + SLACK_MS);
      proxy.resume();
      assert.equal((await pool.query("SELECT 3 AS n")).rows[0]!["n"], 3);
    } finally {
      proxy.resume();
      await pool.close();
    }
  });

  it("fails a transaction whose statement stalls within one deadline, with no ROLLBACK waited for, and the server rolls it back", async () => {
    const pool = await open();
    try {
      await pool.query("CREATE TABLE IF NOT EXISTS counters (id int PRIMARY KEY, n int)");
      await pool.query("INSERT INTO counters VALUES (1, 0) ON CONFLICT DO NOTHING");
      let locked: () => void = () => {};
      const lockTaken = new Promise<void>((resolve) => (locked = resolve));
      const start = performance.now();
      const stalled = pool.transaction(async (db) => {
        await db.query("UPDATE counters SET n = n + 1 WHERE id = $1", [1]);
        locked();
        await new Promise<void>((resolve) => setImmediate(resolve));
        await db.query("SELECT pg_sleep(0)");
      });
      await lockTaken;
      proxy.stall();
      await assert.rejects(stalled, { code: "ERR_STORAGE_UNAVAILABLE" });
      const took = performance.now() - start;
      assert.ok(
        took < DEADLINE_MS + SLACK_MS,
        `failed after ${took} ms (a ROLLBACK waited for on the stalled socket would double it)`,
      );
      proxy.resume();
      // The row the stalled transaction locked is free again: the server rolled it back once it heard of the close.
      await pool.transaction(async (db) => {
        await db.query("UPDATE counters SET n = n + 10 WHERE id = $1", [1]);
      });
      assert.equal(
        (await pool.query<{ n: number }>("SELECT n FROM counters WHERE id = 1")).rows[0]!.n,
        10,
        "the stalled update was never committed",
      );
    } finally {
      proxy.resume();
      await pool.close();
    }
  });

  it("bounds the wait for a connection by the same deadline: a call behind a stalled one fails no later", async () => {
    const pool = await open(1);
    try {
      await pool.query("SELECT 1");
      proxy.stall();
      const start = performance.now();
      const first = pool.query("SELECT 1");
      await new Promise((resolve) => setTimeout(resolve, 200));
      const second = pool.query("SELECT 2");
      await assert.rejects(first, { code: "ERR_STORAGE_UNAVAILABLE" });
      await assert.rejects(second, { code: "ERR_STORAGE_UNAVAILABLE" });
      const took = performance.now() - start;
      assert.ok(
        took < 200 + DEADLINE_MS + SLACK_MS,
        `the second failed ${took} ms after the first was asked`,
      );
      proxy.resume();
      assert.equal((await pool.query("SELECT 1")).rowCount, 1);
    } finally {
      proxy.resume();
      await pool.close();
    }
  });

  it("fails at once while connections are dropped, and works again after", async () => {
    const pool = await open();
    try {
      await pool.query("SELECT 1");
      proxy.drop();
      const took = await failsAfter(() => pool.query("SELECT 1"));
      assert.ok(took < DEADLINE_MS, `failed after ${took} ms`);
      await failsAfter(() => pool.transaction((db) => db.query("SELECT 1")));
      proxy.resume();
      assert.equal((await pool.query("SELECT 1")).rowCount, 1);
    } finally {
      proxy.resume();
      await pool.close();
    }
  });
});
