// Every backend of every service down for two minutes of real time, with no
// help from the test but its probes: PostgreSQL (DATABASE_URL: users, tokens,
// synced data, and the sweeps and looks for queued work every minute and
// every 5 s), the relay's Redis (STORAGE_TYPE=redis: the queue, its depth,
// sweep and probe every second, the poll of endpoints every 250 ms) and the
// rate limits' Redis (RATE_LIMIT_REDIS_URL). Every periodic task fails
// meanwhile, the auth sweep twice (it used to end the process at the first,
// at 59 s). Two processes: one without the rate limits' Redis, whose water
// API needs none of the failing parts and serves throughout, and one with it.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { after, describe, it } from "node:test";
import { postgresServerSkip, startPostgres, type TestPostgres } from "../_helpers/postgres.ts";
import { freePort, redisServerSkip, startRedis, type TestRedis } from "../_helpers/redis.ts";
import { listeningUrl, type Started, startServer } from "../_helpers/server.ts";
import { login, message, patch, signUp, syncGet, ticketEnd } from "../_helpers/sync_client.ts";

const OUTAGE_MS = 120_000;
const PASSWORD = "correct horse battery";
const WATER_KEY = "tributary-demo-key";

interface Answer {
  readonly status: number;
  readonly retryAfter: string | null;
  readonly text: string;
}

async function get(url: string, headers: Record<string, string> = {}): Promise<Answer> {
  const response = await fetch(url, { headers });
  return {
    status: response.status,
    retryAfter: response.headers.get("retry-after"),
    text: await response.text(),
  };
}

function water(url: string): Promise<Answer> {
  return get(`${url}/v1/odata/v4/Locations?$top=2&$select=Id,Name`, { "x-api-key": WATER_KEY });
}

async function webhook(url: string, id: number): Promise<Answer> {
  const response = await fetch(`${url}/webhook`, {
    method: "POST",
    headers: { authorization: "Bearer demo-acme-key", "content-type": "application/json" },
    body: JSON.stringify({ event: "order.created", data: { id } }),
  });
  return {
    status: response.status,
    retryAfter: response.headers.get("retry-after"),
    text: await response.text(),
  };
}

/** A password login of the demo app, as sent by `login` of the sync client, with the answer's headers. */
async function passwordLogin(url: string): Promise<Answer> {
  const response = await fetch(`${url}/oauth2/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "password",
      client_id: "demo-app",
      username: "ada",
      password: PASSWORD,
      scope: "UserActivity",
    }).toString(),
  });
  return {
    status: response.status,
    retryAfter: response.headers.get("retry-after"),
    text: await response.text(),
  };
}

/** The problems /health/ready names, as "service part". */
function problems(answer: Answer): string[] {
  const body = JSON.parse(answer.text) as { problems?: { service: string; part: string }[] };
  return (body.problems ?? []).map((problem) => `${problem.service} ${problem.part}`).sort();
}

function alive(started: Started): boolean {
  return started.child.exitCode === null && started.child.signalCode === null;
}

/** The process's log (standard output and error), access lines left out. */
function logOf(started: Started): string[] {
  return `${started.output()}${started.errors()}`.split("\n").filter((line) =>
    line.trim() !== "" && !/^(GET|HEAD|POST|DELETE|PUT) \S+ \d{3}$/.test(line)
  );
}

describe(
  "every backend down for two minutes",
  { skip: postgresServerSkip || redisServerSkip },
  () => {
    const home = mkdtempSync(join(tmpdir(), "tributary-outage-"));
    let postgres: TestPostgres | undefined;
    let queueRedis: TestRedis | undefined;
    let limitRedis: TestRedis | undefined;
    after(async () => {
      await queueRedis?.stop();
      await limitRedis?.stop();
      await postgres?.stop();
      rmSync(home, { recursive: true, force: true });
    });

    it(
      "keeps both processes alive and serving what needs none of it, readiness 503 naming each, and everything back by itself",
      { timeout: 300_000 },
      async () => {
        const [queuePort, limitPort] = [await freePort(), await freePort()];
        const [queueDir, limitDir] = [
          mkdtempSync(join(home, "queue-")),
          mkdtempSync(join(home, "limits-")),
        ];
        queueRedis = await startRedis(queueDir, queuePort);
        limitRedis = await startRedis(limitDir, limitPort);
        postgres = await startPostgres(true);
        const database = await postgres.database();
        const env = {
          SERVICES: "water,sync,relay",
          DATABASE_URL: database,
          DATABASE_STATEMENT_TIMEOUT_MS: "2000",
          STORAGE_TYPE: "redis",
          REDIS_URL: queueRedis.url,
          PASSWORD_HASH_COST: "1024",
          LOG_LEVEL: "info",
        };
        const plain = startServer(env);
        const limited = startServer({ ...env, RATE_LIMIT_REDIS_URL: limitRedis.url });
        const servers = [plain, limited];
        try {
          const [plainUrl, limitedUrl] = [await listeningUrl(plain), await listeningUrl(limited)];
          const urls = [plainUrl, limitedUrl];
          // Before: everything answers.
          assert.equal(await signUp(plainUrl, "ada", PASSWORD), 201);
          const access = (await login(limitedUrl, "ada", PASSWORD)).body.access_token!;
          const before = await patch(plainUrl, access, {
            objects: { messages: [message(1)] },
            serial: 1,
          });
          assert.equal(before.status, 202);
          for (const url of urls) {
            assert.equal((await get(`${url}/health/ready`)).status, 200);
            assert.equal((await water(url)).status, 200);
            assert.equal((await webhook(url, 1)).status, 202);
          }

          // Down: PostgreSQL as a crash would, both Redis servers stopped.
          postgres.crash();
          await queueRedis.stop();
          await limitRedis.stop();
          const down = performance.now();
          const wrong: string[] = [];
          const note = (what: string, answer: Answer, expected: number[]): void => {
            if (!expected.includes(answer.status)) {
              wrong.push(
                `${what}: ${answer.status} ${answer.text.slice(0, 200)}`,
              );
            } else if (answer.status === 503 && answer.retryAfter === null) {
              wrong.push(
                `${what}: 503 without Retry-After`,
              );
            }
          };
          let rounds = 0;
          let n = 1;
          while (performance.now() - down < OUTAGE_MS) {
            rounds++;
            for (const [i, url] of urls.entries()) {
              const name = i === 0 ? "plain" : "limited";
              assert.ok(
                alive(servers[i]!),
                `${name} exited ${servers[i]!.child.exitCode} after ${
                  ((performance.now() - down) / 1000).toFixed(1)
                } s: ${servers[i]!.errors()}`,
              );
              note(`${name} /health/live`, await get(`${url}/health/live`), [200]);
              const ready = await get(`${url}/health/ready`);
              note(`${name} /health/ready`, ready, [503]);
              if (ready.status === 503 && rounds > 5) {
                const expected = [
                  `relay queue: Redis at ${queueRedis.url}`,
                  `sync database: PostgreSQL at ${database}`,
                ];
                if (i === 1) expected.push(`water rate limits: Redis at ${limitRedis.url}`);
                const named = problems(ready);
                if (JSON.stringify(named) !== JSON.stringify(expected.sort())) {
                  wrong.push(
                    `${name} /health/ready names ${named.join(", ")}`,
                  );
                }
              }
              // The water API needs no backend here but the rate limits' Redis of the second process.
              note(`${name} water`, await water(url), i === 0 ? [200] : [503]);
              note(`${name} login`, await passwordLogin(url), [503]);
              note(`${name} sync`, { ...(await syncGet(url, access)), text: "" }, [503]);
              note(`${name} webhook`, await webhook(url, ++n), [503]);
            }
            await delay(1000);
          }
          assert.deepEqual(wrong, [], `${wrong.length} wrong answers during the outage`);
          assert.ok(rounds >= 30, `${rounds} rounds of probes`);

          // Back, on the same ports and data; nothing restarts the server processes.
          postgres.restart();
          queueRedis = await startRedis(queueDir, queuePort);
          limitRedis = await startRedis(limitDir, limitPort);
          const back = performance.now();
          for (const url of urls) {
            let ready = await get(`${url}/health/ready`);
            while (ready.status !== 200 && performance.now() - back < 20_000) {
              await delay(200);
              ready = await get(`${url}/health/ready`);
            }
            assert.equal(ready.status, 200, `ready again within 20 s: ${ready.text}`);
            assert.equal((await water(url)).status, 200);
            assert.equal((await webhook(url, ++n)).status, 202, "the relay takes webhooks again");
            const fresh = (await login(url, "ada", PASSWORD)).body.access_token;
            assert.ok(fresh !== undefined, "logins work again");
            const after = await patch(url, fresh, {
              objects: { messages: [message(++n)] },
              serial: n,
            });
            assert.equal(after.status, 202);
            assert.equal(await ticketEnd(url, fresh, after.body.ticket!.uuid), "done");
          }
          const snapshot = await syncGet(limitedUrl, access);
          assert.equal(snapshot.status, 200, "the token from before the outage still works");
          assert.ok(
            snapshot.body.data!.objects.messages.some((m) => m.uuid === message(1)["uuid"]),
            "the patch acknowledged before the outage is there",
          );

          // Two lines a backend for the whole outage, none for the tasks that met it, no unhandled rejection.
          await delay(500);
          for (const [i, started] of servers.entries()) {
            const lines = logOf(started);
            const about = (pattern: RegExp): number =>
              lines.filter((line) => pattern.test(line)).length;
            const backends = [
              "Database: PostgreSQL at",
              "Relay queue: Redis at",
              ...(i === 1 ? ["Rate limits: Redis at"] : []),
            ];
            for (const backend of backends) {
              assert.equal(
                about(new RegExp(`^${backend} .*: unreachable; retrying`)),
                1,
                `${backend}\n${lines.join("\n")}`,
              );
              assert.equal(
                about(new RegExp(`^${backend} .*: answering again after \\d+\\.\\d s`)),
                1,
                `${backend}\n${lines.join("\n")}`,
              );
            }
            assert.equal(about(/Unhandled rejection/), 0, lines.join("\n"));
            assert.equal(
              about(/: failing; retrying/),
              0,
              `no task failed but for its backend:\n${lines.join("\n")}`,
            );
          }
        } finally {
          for (const started of servers) started.child.kill("SIGTERM");
        }
      },
    );
  },
);
