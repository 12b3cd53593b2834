// What must hold through the database's faults (issue 27): a two-minute
// outage (PostgreSQL stopped as a crash would, then started again) and a
// 45-second stall (every packet held both ways, through a TCP proxy), each
// with 20 clients signing up, logging in and sending patches through two
// server processes. Both processes stay alive; every answer during a fault
// is a 503 with Retry-After, and the fault costs no request more than
// DATABASE_STATEMENT_TIMEOUT_MS plus a margin; every write acknowledged
// (a 201 sign-up, a 202 patch) before, during or after the fault is there
// afterwards. The two faults run side by side, each on its own cluster.
import assert from "node:assert/strict";
import { setTimeout as delay } from "node:timers/promises";
import { after, before, describe, it } from "node:test";
import {
  type FaultLoad,
  type FaultWindow,
  latencies,
  missingWrites,
  startFaultLoad,
  wrongAnswers,
} from "../_helpers/fault_load.ts";
import { postgresServerSkip, startPostgres, type TestPostgres } from "../_helpers/postgres.ts";
import { listeningUrl, type Started, startServer } from "../_helpers/server.ts";
import { startTcpProxy, type TcpProxy } from "../_helpers/tcp_proxy.ts";

const PASSWORD = "correct horse battery";
const STATEMENT_TIMEOUT_MS = 2000;
/** The most a fault may cost a request: DATABASE_STATEMENT_TIMEOUT_MS, the pool's margin (1 s), and the request's own work on a loaded machine. */
const ANSWER_WITHIN_MS = STATEMENT_TIMEOUT_MS + 1000 + 1000;

async function until(condition: () => boolean, withinMs: number): Promise<boolean> {
  const give = performance.now() + withinMs;
  while (!condition()) {
    if (performance.now() > give) return false;
    await delay(100);
  }
  return true;
}

/** Two server processes on one database, 20 clients writing through them. */
async function underLoad(
  name: string,
  databaseUrl: string,
  fault: (load: FaultLoad) => Promise<FaultWindow>,
): Promise<void> {
  const env = {
    SERVICES: "sync",
    DATABASE_URL: databaseUrl,
    DATABASE_STATEMENT_TIMEOUT_MS: String(STATEMENT_TIMEOUT_MS),
    PASSWORD_HASH_COST: "1024",
    SYNC_MAX_QUEUED_PER_USER: "100000",
    LOG_LEVEL: "info",
  };
  const servers: Started[] = [startServer(env), startServer(env)];
  try {
    const urls = [await listeningUrl(servers[0]!), await listeningUrl(servers[1]!)];
    const load = startFaultLoad({
      urls,
      clients: 20,
      prefix: name,
      password: PASSWORD,
      pauseMs: 100,
      hangMs: 180_000,
      turnsPerAccount: 20,
    });
    assert.ok(
      await until(
        () =>
          load.accounts.length >= 20 &&
          load.samples.filter((sample) => sample.what === "patch" && sample.status === 202)
              .length >= 40,
        60_000,
      ),
      `${name}: load under way`,
    );
    const window = await fault(load);
    // Recovered: sign-ups and patches are taken again through both processes.
    for (const url of urls) {
      for (const what of ["sign-up", "patch"]) {
        const back = await until(
          () =>
            load.samples.some((sample) =>
              sample.url === url && sample.what === what && sample.start > window.to &&
              sample.status < 300
            ),
          30_000,
        );
        assert.ok(
          back,
          `${name}: ${what} taken again through ${url} within 30 s of the fault's end`,
        );
      }
    }
    await delay(2000);
    await load.stop();

    for (const [i, started] of servers.entries()) {
      assert.equal(
        started.child.exitCode,
        null,
        `${name}: process ${i + 1} is alive: ${started.errors()}`,
      );
    }
    const wrong = wrongAnswers(load.samples, [window], ANSWER_WITHIN_MS);
    assert.deepEqual(
      wrong.slice(0, 20),
      [],
      `${name}: ${wrong.length} wrong answers of ${load.samples.length} (${
        latencies(load.samples, window)
      })`,
    );
    const during = load.samples.filter((sample) =>
      sample.start >= window.from && sample.end <= window.to
    );
    assert.ok(during.length >= 100, `${name}: ${during.length} answers during the fault`);
    const kinds = new Map<string, number>();
    for (const sample of during) kinds.set(sample.what, (kinds.get(sample.what) ?? 0) + 1);
    for (const what of ["sign-up", "login", "patch"]) {
      assert.ok(
        kinds.has(what),
        `${name}: a ${what} was asked during the fault (${JSON.stringify([...kinds])})`,
      );
    }
    const acknowledged = load.accounts.reduce((sum, account) => sum + account.patches.size, 0);
    assert.deepEqual(
      await missingWrites(urls[1]!, load.accounts, PASSWORD, 60_000),
      [],
      `${name}: every acknowledged write (${load.accounts.length} sign-ups, ${acknowledged} patches) is there`,
    );
  } finally {
    for (const started of servers) started.child.kill("SIGTERM");
  }
}

describe("the database's faults under 20 clients through two processes", {
  skip: postgresServerSkip,
  concurrency: true,
}, () => {
  let stopped: TestPostgres;
  let stalled: TestPostgres;
  let proxy: TcpProxy;
  before(async () => {
    [stopped, stalled] = await Promise.all([startPostgres(true), startPostgres(true)]);
  });
  after(async () => {
    await proxy?.close();
    await stopped.stop();
    await stalled.stop();
  });

  it("a two-minute outage", { timeout: 300_000 }, async () => {
    await underLoad("outage", await stopped.database(), async () => {
      await stopped.crashAsync();
      const from = performance.now();
      await delay(120_000);
      // The fault ends as the server starts; it may answer before pg_ctl says so.
      const to = performance.now();
      await stopped.restartAsync();
      return { from, to };
    });
  });

  it("a 45-second stall", { timeout: 300_000 }, async () => {
    const database = await stalled.database();
    proxy = await startTcpProxy(Number(new URL(database).port));
    await underLoad("stall", proxy.via(database), async () => {
      proxy.stall();
      const from = performance.now();
      await delay(45_000);
      proxy.resume();
      return { from, to: performance.now() };
    });
  });
});
