// The database's connections stalled (accepted, then every packet held both
// ways, as a link that drops everything and comes back) for 5 s, 45 s and 3
// minutes of real time, and dropped (reset) for 5 s and 45 s, through a TCP
// proxy the test controls between server.ts and the test's own PostgreSQL,
// while clients sign up, log in, send patches and read snapshots. The pg client
// has no deadline of its own and the database's statement_timeout cannot
// fire for a statement it never received: patches used to be answered only
// when the stall ended (202 after 45.1 s), snapshots hung past 30 s. Now
// every answer while the fault lasts is a 503 with Retry-After, and the
// fault costs no request more than DATABASE_STATEMENT_TIMEOUT_MS plus a
// margin; the stalled connections are closed and replaced, and every
// acknowledged write is there afterwards. The three stalls run side by side,
// each drop after a stall on the same server: the 45 s one ends well before
// the 3 minute stall does, so it costs the file no time.
import assert from "node:assert/strict";
import { setTimeout as delay } from "node:timers/promises";
import { after, before, describe, it } from "node:test";
import {
  type FaultWindow,
  latencies,
  missingWrites,
  startFaultLoad,
  wrongAnswers,
} from "../_helpers/fault_load.ts";
import { postgresSkip, startPostgres, type TestPostgres } from "../_helpers/postgres.ts";
import { listeningUrl, startServer } from "../_helpers/server.ts";
import { startTcpProxy } from "../_helpers/tcp_proxy.ts";

const PASSWORD = "correct horse battery";
const STATEMENT_TIMEOUT_MS = 2000;
/** The most a fault may cost a request: DATABASE_STATEMENT_TIMEOUT_MS, the pool's margin (1 s), and the request's own work on a loaded machine. */
const ANSWER_WITHIN_MS = STATEMENT_TIMEOUT_MS + 1000 + 1000;
const POOL_SIZE = 10;

/** Waits until `condition` holds, `withinMs` at most; gives whether it did. */
async function until(condition: () => boolean, withinMs: number): Promise<boolean> {
  const give = performance.now() + withinMs;
  while (!condition()) {
    if (performance.now() > give) return false;
    await delay(100);
  }
  return true;
}

describe("the database's connection stalled or dropped under load", {
  skip: postgresSkip,
  concurrency: true,
}, () => {
  let postgres: TestPostgres;
  before(async () => {
    postgres = await startPostgres();
  });
  after(() => postgres.stop());

  /**
   * One server process on its own database behind its own proxy, clients
   * writing, the stall (then, if asked, the drop); checks its answers, its
   * writes and its connections.
   */
  async function scenario(name: string, stallMs: number, dropMs: number): Promise<void> {
    const database = await postgres.database();
    const proxy = await startTcpProxy(Number(new URL(database).port));
    const started = startServer({
      SERVICES: "sync",
      DATABASE_URL: proxy.via(database),
      DATABASE_STATEMENT_TIMEOUT_MS: String(STATEMENT_TIMEOUT_MS),
      DATABASE_POOL_SIZE: String(POOL_SIZE),
      PASSWORD_HASH_COST: "1024",
      SYNC_MAX_QUEUED_PER_USER: "100000",
      LOG_LEVEL: "info",
    });
    try {
      const url = await listeningUrl(started);
      const load = startFaultLoad({
        urls: [url],
        clients: 4,
        prefix: name,
        password: PASSWORD,
        pauseMs: 100,
        hangMs: 120_000,
      });
      const faults: FaultWindow[] = [];
      const recovered = async (after: number): Promise<void> => {
        const back = await until(
          () =>
            load.samples.some((sample) =>
              sample.start > after && sample.what === "patch" && sample.status === 202
            ),
          20_000,
        );
        assert.ok(back, `${name}: patches are taken again within 20 s of the fault's end`);
      };
      assert.ok(
        await until(
          () => load.samples.filter((sample) => sample.status === 202).length >= 20,
          30_000,
        ),
        `${name}: load under way`,
      );

      proxy.stall();
      const stalled = performance.now();
      await delay(stallMs);
      proxy.resume();
      faults.push({ from: stalled, to: performance.now() });
      await recovered(faults[0]!.to);

      if (dropMs > 0) {
        proxy.drop();
        const dropped = performance.now();
        await delay(dropMs);
        proxy.resume();
        faults.push({ from: dropped, to: performance.now() });
        await recovered(faults[1]!.to);
      }
      await delay(2000);
      await load.stop();

      assert.equal(started.child.exitCode, null, `${name}: the server is alive`);
      const wrong = wrongAnswers(load.samples, faults, ANSWER_WITHIN_MS);
      assert.deepEqual(
        wrong.slice(0, 20),
        [],
        `${name}: ${wrong.length} wrong answers of ${load.samples.length} (${
          latencies(load.samples, faults[0]!)
        })`,
      );
      for (const fault of faults) {
        // Each client met it.
        const refused = load.samples.filter((sample) =>
          sample.start < fault.to && sample.end > fault.from && sample.status === 503
        );
        assert.ok(
          refused.length >= 4,
          `${name}: the fault was met (${refused.length} answers of 503 while it lasted)`,
        );
      }
      const acknowledged = load.accounts.reduce((sum, account) => sum + account.patches.size, 0);
      assert.ok(acknowledged >= 20, `${name}: ${acknowledged} patches acknowledged`);
      assert.deepEqual(
        await missingWrites(url, load.accounts, PASSWORD, 30_000),
        [],
        `${name}: every acknowledged write is there`,
      );

      // The stalled connections were closed and replaced: no more than the pool's size remain on the server.
      const { default: pg } = await import("pg");
      const direct = new pg.Client({ connectionString: database });
      await direct.connect();
      try {
        let open = Number.POSITIVE_INFINITY;
        for (let tries = 0; tries < 50 && open > POOL_SIZE; tries++) {
          const { rows } = await direct.query<{ n: string }>(
            "SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()",
          );
          open = Number(rows[0]!.n);
          if (open > POOL_SIZE) await delay(200);
        }
        assert.ok(
          open <= POOL_SIZE,
          `${name}: ${open} connections of the server process remain on the database`,
        );
      } finally {
        await direct.end();
      }
    } finally {
      started.child.kill("SIGTERM");
      await proxy.close();
    }
  }

  it("a 5 s stall, then a 5 s drop", { timeout: 180_000 }, () => scenario("five", 5000, 5000));
  it(
    "a 45 s stall, then a 45 s drop",
    { timeout: 360_000 },
    () => scenario("fortyfive", 45_000, 45_000),
  );
  it("a 3 minute stall", { timeout: 420_000 }, () => scenario("three", 180_000, 0));
});
