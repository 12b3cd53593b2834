// Every backend of every service down for two minutes of real time, with no
// help from the test but its probes: PostgreSQL (DATABASE_URL: users, tokens,
// synced data, and the sweeps and looks for queued work every minute and
// every 5 s), the relay's Redis (STORAGE_TYPE=redis: the queue, its depth,
// sweep and probe every second, the poll of endpoints every 250 ms), the
// rate limits' Redis (RATE_LIMIT_REDIS_URL) and, in the same two minutes,
// every broker of the relay's Kafka (STORAGE_TYPE=kafka: intake's appends,
// the consumer group, the endpoints' topic, the probe every second). Every
// periodic task fails meanwhile, the auth sweep twice (it used to end the
// process at the first, at 59 s). Two processes on PostgreSQL and Redis: one
// without the rate limits' Redis, whose water API needs none of the failing
// parts and serves throughout, and one with it; and two relay processes
// sharing one Kafka consumer group.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { after, describe, it } from "node:test";
import { kafkaConfigTopic } from "../../lib/relay/kafka/kafka_config_store.ts";
import { kafkaTopics } from "../../lib/relay/kafka/kafka_queue.ts";
import { kafkaSkip, startKafka, type TestKafka } from "../_helpers/kafka.ts";
import { postgresServerSkip, startPostgres, type TestPostgres } from "../_helpers/postgres.ts";
import { freePort, redisServerSkip, startRedis, type TestRedis } from "../_helpers/redis.ts";
import { listeningUrl, type Started, startServer } from "../_helpers/server.ts";
import { login, message, patch, signUp, syncGet, ticketEnd } from "../_helpers/sync_client.ts";

const OUTAGE_MS = 120_000;
/** How soon `/health/ready` says a backend is away: it asks each once a second (2 s, and a margin). */
const READY_WITHIN_MS = 3000;
/** The most a webhook on Kafka may take while the brokers are away: intake's 5 s for an append, and a margin. */
const KAFKA_ANSWER_WITHIN_MS = 5000 + 3000;
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

async function webhook(url: string, id: number): Promise<Answer & { readonly ms: number }> {
  const start = performance.now();
  const response = await fetch(`${url}/webhook`, {
    method: "POST",
    headers: { authorization: "Bearer demo-acme-key", "content-type": "application/json" },
    body: JSON.stringify({ event: "order.created", data: { id } }),
  });
  return {
    status: response.status,
    retryAfter: response.headers.get("retry-after"),
    text: await response.text(),
    ms: performance.now() - start,
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

/** Waits until `/health/ready` answers 200, `withinMs` at most. */
async function ready(url: string, withinMs: number): Promise<void> {
  const from = performance.now();
  let answer = await get(`${url}/health/ready`);
  while (answer.status !== 200 && performance.now() - from < withinMs) {
    await delay(200);
    answer = await get(`${url}/health/ready`);
  }
  assert.equal(answer.status, 200, `${url} ready within ${withinMs / 1000} s: ${answer.text}`);
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
  { skip: postgresServerSkip || redisServerSkip || kafkaSkip },
  () => {
    const home = mkdtempSync(join(tmpdir(), "tributary-outage-"));
    let postgres: TestPostgres | undefined;
    let queueRedis: TestRedis | undefined;
    let limitRedis: TestRedis | undefined;
    let kafka: TestKafka | undefined;
    after(async () => {
      await kafka?.stop();
      await queueRedis?.stop();
      await limitRedis?.stop();
      await postgres?.stop();
      rmSync(home, { recursive: true, force: true });
    });

    it(
      "keeps every process alive and serving what needs none of it, readiness 503 naming each, and everything back by itself",
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
        kafka = await startKafka();
        const prefix = "outage";
        for (const topic of Object.values(kafkaTopics(prefix))) await kafka.topic(topic, 2);
        await kafka.topic(kafkaConfigTopic(prefix), 1);
        await kafka.group(`${prefix}-relay`);
        const brokers = kafka.brokers.join(",");
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
        const onKafka = {
          SERVICES: "relay",
          STORAGE_TYPE: "kafka",
          KAFKA_BROKER: brokers,
          KAFKA_TOPIC_PREFIX: prefix,
          KAFKA_PARTITIONS: "2",
          KAFKA_GROUP_ID: `${prefix}-relay`,
          // A rebalance waits for every member up to about this long (the mock's rule): the two start together.
          KAFKA_SESSION_TIMEOUT_MS: "6000",
          LOG_LEVEL: "info",
        };
        const plain = startServer(env);
        const limited = startServer({ ...env, RATE_LIMIT_REDIS_URL: limitRedis.url });
        const relays = [startServer(onKafka), startServer(onKafka)];
        const servers = [plain, limited, ...relays];
        const names = ["plain", "limited", "kafka 1", "kafka 2"];
        try {
          const urls = await Promise.all(servers.map((started) => listeningUrl(started)));
          const [plainUrl, limitedUrl] = [urls[0]!, urls[1]!];
          // Before: everything answers.
          assert.equal(await signUp(plainUrl, "ada", PASSWORD), 201);
          const access = (await login(limitedUrl, "ada", PASSWORD)).body.access_token!;
          const before = await patch(plainUrl, access, {
            objects: { messages: [message(1)] },
            serial: 1,
          });
          assert.equal(before.status, 202);
          for (const [i, url] of urls.entries()) {
            // A relay on Kafka may still be joining its consumer group.
            if (i < 2) assert.equal((await get(`${url}/health/ready`)).status, 200);
            else await ready(url, 30_000);
            if (i < 2) assert.equal((await water(url)).status, 200);
            assert.equal((await webhook(url, 1)).status, 202);
          }

          // Down: PostgreSQL as a crash would, both Redis servers stopped, every Kafka broker down.
          postgres.crash();
          await Promise.all([
            queueRedis.stop(),
            limitRedis.stop(),
            (async () => {
              for (const id of [1, 2, 3]) await kafka!.down(id);
            })(),
          ]);
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
          let n = 1;
          /** Probes one process every second until the outage ends; gives the rounds done. */
          const probe = async (i: number): Promise<number> => {
            const [name, url, started] = [names[i]!, urls[i]!, servers[i]!];
            const problemsExpected = i < 2
              ? [
                `relay queue: Redis at ${queueRedis!.url}`,
                `sync database: PostgreSQL at ${database}`,
                ...(i === 1 ? [`water rate limits: Redis at ${limitRedis!.url}`] : []),
              ].sort()
              : [`relay queue: Kafka at ${brokers}`];
            let rounds = 0;
            while (performance.now() - down < OUTAGE_MS) {
              rounds++;
              assert.ok(
                alive(started),
                `${name} exited ${started.child.exitCode} after ${
                  ((performance.now() - down) / 1000).toFixed(1)
                } s: ${started.errors()}`,
              );
              note(`${name} /health/live`, await get(`${url}/health/live`), [200]);
              const asked = performance.now();
              const ready = await get(`${url}/health/ready`);
              // Readiness asks each backend once a second: 503 within two seconds of its going away.
              note(
                `${name} /health/ready`,
                ready,
                asked - down < READY_WITHIN_MS ? [200, 503] : [503],
              );
              // What it names: on the first two after five rounds (as before), on Kafka's once it says 503.
              if (ready.status === 503 && (i < 2 ? rounds > 5 : asked - down > READY_WITHIN_MS)) {
                const named = problems(ready);
                if (JSON.stringify(named) !== JSON.stringify(problemsExpected)) {
                  wrong.push(
                    `${name} /health/ready names ${named.join(", ")}`,
                  );
                }
              }
              if (i < 2) {
                // The water API needs no backend here but the rate limits' Redis of the second process.
                note(`${name} water`, await water(url), i === 1 ? [503] : [200]);
                note(`${name} login`, await passwordLogin(url), [503]);
                note(`${name} sync`, { ...(await syncGet(url, access)), text: "" }, [503]);
              }
              const hook = await webhook(url, ++n);
              note(`${name} webhook`, hook, [503]);
              if (i >= 2 && hook.ms > KAFKA_ANSWER_WITHIN_MS) {
                wrong.push(`${name} webhook: answered in ${hook.ms.toFixed(0)} ms`);
              }
              await delay(1000);
            }
            return rounds;
          };
          const rounds = await Promise.all(servers.map((_, i) => probe(i)));
          assert.deepEqual(wrong, [], `${wrong.length} wrong answers during the outage`);
          // A webhook on Kafka takes up to intake's 5 s to be refused, so its processes probe less often.
          for (const [i, count] of rounds.entries()) {
            assert.ok(count >= (i < 2 ? 30 : 10), `${names[i]}: ${count} rounds of probes`);
          }

          // Back, on the same ports and data; nothing restarts the server processes.
          postgres.restart();
          queueRedis = await startRedis(queueDir, queuePort);
          limitRedis = await startRedis(limitDir, limitPort);
          for (const id of [1, 2, 3]) await kafka.up(id);
          for (const [i, url] of urls.entries()) {
            // A relay on Kafka rejoins its consumer group first.
            await ready(url, i < 2 ? 20_000 : 30_000);
            assert.equal((await webhook(url, ++n)).status, 202, "the relay takes webhooks again");
            if (i >= 2) continue;
            assert.equal((await water(url)).status, 200);
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
            const backends = i < 2
              ? [
                "Database: PostgreSQL at",
                "Relay queue: Redis at",
                ...(i === 1 ? ["Rate limits: Redis at"] : []),
              ]
              : ["Relay queue: Kafka at"];
            for (const backend of backends) {
              const lost = about(new RegExp(`^${backend} .*: unreachable; retrying`));
              const back = about(new RegExp(`^${backend} .*: answering again after \\d+\\.\\d s`));
              if (i < 2) {
                assert.equal(lost, 1, `${backend}\n${lines.join("\n")}`);
                assert.equal(back, 1, `${backend}\n${lines.join("\n")}`);
              } else {
                // The brokers can flap once as they return (as in test/server/health.test.ts): one more pair then.
                assert.ok(
                  lost >= 1 && lost <= 2 && back === lost,
                  `${names[i]}: ${lost} down, ${back} back\n${lines.join("\n")}`,
                );
              }
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
