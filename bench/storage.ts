// Where the token and sync service keeps its state, measured against memory
// in the same run:
// - client_credentials grants per second with the state in PostgreSQL
//   (DATABASE_URL) / in memory only (STATE_DIR empty), same client and 32
//   connections: target >= 0.3;
// - a sync diff of 100 changed objects on PostgreSQL, with 1,000,000
//   revisions of history / with 1,000: target <= 1.5;
// - patches applied per second through the API (32 clients, each posting
//   patches for its user for a few seconds, then following its last ticket to
//   the end) on the journal in STATE_DIR / in memory: target >= 0.5; and on
//   PostgreSQL with two processes / one process in memory: target >= 0.3.
// Servers run pinned to one CPU, the load generator and PostgreSQL to the other.
// Needs: PostgreSQL's initdb and pg_ctl (a cluster of its own in a temporary folder, about 1 GB), about 3 minutes.
import { randomUUID } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connectPostgres, migrate } from "../lib/storage/mod.ts";
import { PostgresSyncStore } from "../lib/sync/mod.ts";
import { SYNC_MIGRATIONS } from "../lib/sync/_postgres_sync_sql.ts";
import { startPostgres } from "../test/_helpers/postgres.ts";
import { login, signUp } from "../test/_helpers/sync_client.ts";
import { type BenchResult, report } from "./_data.ts";
import {
  median,
  pinToClientCpu,
  runPinnedLoad,
  runPinnedScript,
  startPinnedServer,
} from "./_processes.ts";

const SECONDS = Number(process.env["BENCH_HTTP_SECONDS"] ?? 5);
const ROUNDS = Number(process.env["BENCH_ROUNDS"] ?? 3);
const USERS = Number(process.env["BENCH_SYNC_USERS"] ?? 32);
/** Token clients at once: enough that a store waiting on its disk's sync is not what sets the pace. */
const CONNECTIONS = 32;
const TOKEN_HEADERS = {
  authorization: `Basic ${btoa("demo-backend:demo-backend-secret")}`,
  "content-type": "application/x-www-form-urlencoded",
};
const SYNC_ENV = {
  PORT: "0",
  HOST: "127.0.0.1",
  SERVICES: "sync",
  PASSWORD_HASH_COST: "1024",
  SYNC_MAX_QUEUED_PER_USER: "64",
};

const results: BenchResult[] = [];
const postgres = await startPostgres(true);
// Its backends, forked from here on, take the same CPU.
pinToClientCpu(postgres.pid()!);

try {
  // Patches per second: memory, the journal, PostgreSQL with two processes. First, on a quiet
  // server: the later parts leave it vacuuming and checkpointing what they wrote.
  {
    const setups = {
      memory: [{ ...SYNC_ENV, STATE_DIR: "" }],
      journal: [{ ...SYNC_ENV, STATE_DIR: mkdtempSync(join(tmpdir(), "tributary-bench-state-")) }],
      postgres: await (async () => {
        // Through the server's Unix socket, as processes on the database's machine connect.
        const url = postgres.viaSocket(await postgres.database());
        return [{ ...SYNC_ENV, DATABASE_URL: url }, { ...SYNC_ENV, DATABASE_URL: url }];
      })(),
    } as const;
    const rates: Record<keyof typeof setups, number[]> = { memory: [], journal: [], postgres: [] };
    for (
      const [name, envs] of Object.entries(setups) as [
        keyof typeof setups,
        readonly Record<string, string>[],
      ][]
    ) {
      const servers = [];
      for (const env of envs) {
        servers.push(await startPinnedServer(["--import", "tsx", "server.ts"], env));
      }
      try {
        const targets = [];
        for (let u = 0; u < USERS; u++) {
          const url = servers[u % servers.length]!.url;
          const username = `user${u}`;
          if ((await signUp(url, username, "correct horse battery")) !== 201) {
            throw new Error(`cannot sign ${username} up`);
          }
          targets.push({
            url,
            access: (await login(url, username, "correct horse battery")).body.access_token!,
          });
        }
        await runPinnedScript([
          "--import",
          "tsx",
          "bench/_patch_load.ts",
          JSON.stringify({ targets, seconds: 1 }),
        ], "client");
        for (let round = 0; round < ROUNDS; round++) {
          const run = await runPinnedScript<{ applied: number; refused: number; seconds: number }>(
            [
              "--import",
              "tsx",
              "bench/_patch_load.ts",
              JSON.stringify({ targets, seconds: SECONDS }),
            ],
            "client",
          );
          if (run.refused > 0) throw new Error(`${name}: ${run.refused} patches refused`);
          rates[name].push(run.applied / run.seconds);
          console.log(
            `patches, state ${name.padEnd(8)} (${envs.length} process${
              envs.length > 1 ? "es" : ""
            }) ${(run.applied / run.seconds).toFixed(0)}/s`,
          );
        }
      } finally {
        for (const server of servers) server.child.kill("SIGTERM");
      }
    }
    const journal = median(rates.journal) / median(rates.memory);
    const shared = median(rates.postgres) / median(rates.memory);
    results.push({
      name: "patches on the journal",
      measure: "patches applied/s through the API, STATE_DIR journal / memory (medians)",
      ratio: journal,
      target: ">= 0.5",
      pass: journal >= 0.5,
    });
    results.push({
      name: "patches on PostgreSQL, 2 processes",
      measure: "patches applied/s, two processes on PostgreSQL / one in memory (medians)",
      ratio: shared,
      target: ">= 0.3",
      pass: shared >= 0.3,
    });
  }
  // Grants per second: the same server, its state in memory or in PostgreSQL.
  const memory = await startPinnedServer(["--import", "tsx", "server.ts"], {
    ...SYNC_ENV,
    STATE_DIR: "",
  });
  const onDatabase = await startPinnedServer(["--import", "tsx", "server.ts"], {
    ...SYNC_ENV,
    DATABASE_URL: await postgres.database(),
  });
  try {
    const load = (url: string, seconds: number) =>
      runPinnedLoad({
        url: `${url}/oauth2/token`,
        method: "POST",
        headers: TOKEN_HEADERS,
        body: "grant_type=client_credentials",
        connections: CONNECTIONS,
        seconds,
      });
    for (const server of [memory, onDatabase]) await load(server.url, 1);
    const rates = { memory: [] as number[], postgres: [] as number[] };
    for (let round = 0; round < ROUNDS; round++) {
      for (const [name, server] of [["memory", memory], ["postgres", onDatabase]] as const) {
        const result = await load(server.url, SECONDS);
        if (result.non2xx > 0) {
          throw new Error(`${name}: ${result.non2xx} non-2xx, e.g. ${result.sample}`);
        }
        rates[name].push(result.perSecond);
        console.log(`grants, state ${name.padEnd(8)} ${result.perSecond.toFixed(0)}/s`);
      }
    }
    const ratio = median(rates.postgres) / median(rates.memory);
    results.push({
      name: "grants on PostgreSQL",
      measure: "client_credentials grants/s, state in PostgreSQL / in memory (medians)",
      ratio,
      target: ">= 0.3",
      pass: ratio >= 0.3,
    });
  } finally {
    memory.child.kill("SIGTERM");
    onDatabase.child.kill("SIGTERM");
  }

  // A diff of 100 changes on PostgreSQL, 1,000 and 1,000,000 revisions of history in one database.
  {
    const pool = await connectPostgres(await postgres.database(), { poolSize: 2 });
    await migrate(pool, "sync", SYNC_MIGRATIONS);
    const store = new PostgresSyncStore(pool, {
      now: Date.now,
      uuid: randomUUID,
      revisionRetention: 1e15,
    });
    const built = performance.now();
    const small = await buildHistory(pool, 1_000);
    const large = await buildHistory(pool, 1_000_000);
    await pool.query("ANALYZE");
    console.log(
      `built 1,000 and 1,000,000 revisions in PostgreSQL in ${
        ((performance.now() - built) / 1000).toFixed(1)
      } s`,
    );
    const timeDiff = async (context: History): Promise<number> => {
      const started = performance.now();
      const diff = await store.diff(context.owner, context.base, context.head);
      if (diff?.objects.messages.length !== 100) {
        throw new Error(`expected 100 changed messages, got ${diff?.objects.messages.length}`);
      }
      return performance.now() - started;
    };
    for (let i = 0; i < 20; i++) await Promise.all([timeDiff(small), timeDiff(large)]);
    const times = { small: [] as number[], large: [] as number[] };
    for (let i = 0; i < 200; i++) {
      times.small.push(await timeDiff(small));
      times.large.push(await timeDiff(large));
    }
    const [smallMs, largeMs] = [median(times.small), median(times.large)];
    console.log(
      `diff of 100 changes on PostgreSQL: 1,000 revisions ${
        smallMs.toFixed(2)
      } ms, 1,000,000 revisions ${largeMs.toFixed(2)} ms (medians of 200)`,
    );
    results.push({
      name: "sync diff on PostgreSQL",
      measure: "diff of 100 changes, time at 1M revisions / at 1k revisions",
      ratio: largeMs / smallMs,
      target: "<= 1.5",
      pass: largeMs / smallMs <= 1.5,
    });
    await pool.close();
  }
} finally {
  await postgres.stop();
}
report(results);

interface History {
  readonly owner: string;
  readonly base: { uuid: string; serial: number; createdAt: number };
  readonly head: { uuid: string; serial: number; createdAt: number };
}

/**
 * A context with `revisions` revisions, written with SQL as the store writes
 * them: revision 1 holds me, 2 a thousand messages, then one-message updates;
 * the last 100 update 100 distinct messages. The base is 100 changes before the head.
 */
async function buildHistory(
  pool: Awaited<ReturnType<typeof connectPostgres>>,
  revisions: number,
): Promise<History> {
  const owner = randomUUID();
  const message = (key: string, version: string) =>
    `jsonb_build_object('uuid', ${key}, 'subject', 'Subject ' || ${version}, 'body', '', 'read', false, 'sent_at', '2024-01-01T00:00:00Z')`;
  const key = (n: string) => `'10000000-0000-4000-8000-' || lpad(to_hex(${n}), 12, '0')`;
  await pool.transaction(async (db) => {
    await db.query(
      "INSERT INTO sync_revisions (owner, serial, uuid, created_at) SELECT $1, s, gen_random_uuid(), 1700000000000 + s FROM generate_series(1, $2) s",
      [owner, revisions],
    );
    await db.query(
      "INSERT INTO sync_contexts SELECT $1, serial, uuid, created_at, 1001 FROM sync_revisions WHERE owner = $1 AND serial = $2",
      [owner, revisions],
    );
    await db.query(
      "INSERT INTO sync_changes VALUES ($1, 1, 0, 0, $2, NULL, jsonb_build_object('uuid', $2::text, 'username', 'bench', 'notify_language', NULL))",
      [owner, owner],
    );
    await db.query(
      `INSERT INTO sync_changes SELECT $1, 2, n, 1, ${key("n")}, NULL, ${
        message(key("n"), "0")
      } FROM generate_series(0, 999) n`,
      [owner],
    );
    // One-message updates, then the last 100 revisions: message n * 7 each.
    await db.query(
      `INSERT INTO sync_changes SELECT $1, s, 0, 1, ${key("m")}, ${
        message(key("m"), "(s - 1)::text")
      }, ${message(key("m"), "s::text")}
       FROM generate_series(3, $2) s, LATERAL (SELECT CASE WHEN s > $2 - 100 THEN ((s - ($2 - 100) - 1) * 7) % 1000 ELSE s % 1000 END AS m) k`,
      [owner, revisions],
    );
    await db.query(
      `INSERT INTO sync_objects SELECT $1, 1, ${key("n")}, ${
        message(key("n"), "'last'")
      }, $2 FROM generate_series(0, 999) n`,
      [owner, revisions],
    );
  });
  const { rows } = await pool.query<{ serial: number; uuid: string; created_at: string }>(
    "SELECT serial, uuid, created_at FROM sync_revisions WHERE owner = $1 AND serial IN ($2, $3)",
    [owner, revisions - 100, revisions],
  );
  const revision = (serial: number) => {
    const row = rows.find((r) => r.serial === serial)!;
    return { uuid: row.uuid, serial, createdAt: Number(row.created_at) };
  };
  return { owner, base: revision(revisions - 100), head: revision(revisions) };
}
