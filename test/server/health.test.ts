// Readiness and outage logs of the real server on real backends: a
// redis-server (the relay's queue and the rate limits) and a PostgreSQL (auth
// and sync) started here, stopped while the server runs, and started again on
// the same ports. This uses the real clock because it is about real
// reconnects: /health/ready must turn 503 within two seconds of a backend
// stopping, and a backend down for ten seconds (the figure) must leave
// a handful of log lines, not a line an attempt.
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

interface Readiness {
  readonly status: number;
  readonly retryAfter: string | null;
  readonly body: { status: string; problems?: { service: string; part: string; reason: string }[] };
}

async function ready(url: string): Promise<Readiness> {
  const response = await fetch(`${url}/health/ready`);
  return {
    status: response.status,
    retryAfter: response.headers.get("retry-after"),
    body: (await response.json()) as Readiness["body"],
  };
}

/**
 * Asks /health/ready every 100 ms until `until` holds, for `withinMs` at most.
 * @returns the answer that held, and when (milliseconds after the call)
 * @throws {Error} with the last answer when the time runs out
 */
async function pollReady(
  url: string,
  until: (answer: Readiness) => boolean,
  withinMs: number,
): Promise<{ answer: Readiness; afterMs: number }> {
  const start = performance.now();
  let answer = await ready(url);
  while (!until(answer)) {
    if (performance.now() - start > withinMs) {
      throw new Error(
        `/health/ready after ${withinMs} ms: ${answer.status} ${JSON.stringify(answer.body)}`,
      );
    }
    await delay(100);
    answer = await ready(url);
  }
  return { answer, afterMs: performance.now() - start };
}

/** The server's log lines (standard output and error) from `from` on, without the access log's. */
function logLines(started: Started, from: { out: number; err: number }): string[] {
  const lines = `${started.output().slice(from.out)}${started.errors().slice(from.err)}`.split("\n")
    .filter((line) => line.trim() !== "");
  return lines.filter((line) => !/^(GET|HEAD|POST) \S+ \d{3}$/.test(line));
}

/** The log lines from `from` on once `until` holds of them (they come through a pipe, a moment after they are written), 5 s at most. */
async function linesUntil(
  started: Started,
  from: { out: number; err: number },
  until: (lines: string[]) => boolean,
): Promise<string[]> {
  let lines = logLines(started, from);
  for (let waited = 0; !until(lines) && waited < 5000; waited += 100) {
    await delay(100);
    lines = logLines(started, from);
  }
  return lines;
}

const parts = (answer: Readiness): string[] =>
  (answer.body.problems ?? []).map((problem) => `${problem.service} ${problem.part}`);

describe("server.ts readiness and outages", { skip: redisServerSkip || postgresServerSkip }, () => {
  const home = mkdtempSync(join(tmpdir(), "tributary-health-"));
  let redis: TestRedis | undefined;
  let postgres: TestPostgres | undefined;
  after(async () => {
    await redis?.stop();
    await postgres?.stop();
    rmSync(home, { recursive: true, force: true });
  });

  it(
    "turns /health/ready 503 within 2 s of Redis and of PostgreSQL stopping and 200 once they are back, with /health/live 200 throughout and a handful of log lines for a 10 s outage",
    { timeout: 120_000 },
    async () => {
      const redisPort = await freePort();
      redis = await startRedis(home, redisPort);
      postgres = await startPostgres(true);
      const database = await postgres.database();
      const started = startServer({
        SERVICES: "water,sync,relay",
        STORAGE_TYPE: "redis",
        REDIS_URL: redis.url,
        RATE_LIMIT_REDIS_URL: redis.url,
        DATABASE_URL: database,
        LOG_LEVEL: "info",
      });
      const url = await listeningUrl(started);
      assert.equal(
        (await pollReady(url, (answer) => answer.status === 200, 5000)).answer.body.status,
        "ok",
      );
      const from = { out: started.output().length, err: started.errors().length };

      // Redis stops: the relay's queue and the rate limits are both on it.
      await redis.stop();
      const redisStopped = performance.now();
      const withoutRedis = await pollReady(url, (answer) => answer.status === 503, 2000);
      assert.ok(withoutRedis.afterMs < 2000, `503 after ${withoutRedis.afterMs} ms`);
      assert.equal(withoutRedis.answer.retryAfter, "1");
      assert.deepEqual(parts(withoutRedis.answer).sort(), [
        `relay queue: Redis at ${redis.url}`,
        `water rate limits: Redis at ${redis.url}`,
      ]);
      assert.equal((await fetch(`${url}/health/live`)).status, 200);
      assert.equal((await fetch(`${url}/health`)).status, 200);
      // Requests that need Redis are refused meanwhile, and add nothing to the log but their access lines.
      const intake = await fetch(`${url}/webhook`, {
        method: "POST",
        headers: { authorization: "Bearer demo-acme-key", "content-type": "application/json" },
        body: JSON.stringify({ event: "order.created", data: { id: 1 } }),
      });
      assert.equal(intake.status, 503);

      // PostgreSQL stops too, as a crash would.
      postgres.crash();
      const withoutPostgres = await pollReady(
        url,
        (answer) => parts(answer).some((part) => part.startsWith("sync database: PostgreSQL at ")),
        2000,
      );
      assert.ok(
        withoutPostgres.afterMs < 2000,
        `PostgreSQL named after ${withoutPostgres.afterMs} ms`,
      );
      assert.equal(withoutPostgres.answer.status, 503);
      assert.deepEqual(parts(withoutPostgres.answer).sort(), [
        `relay queue: Redis at ${redis.url}`,
        `sync database: PostgreSQL at ${database}`,
        `water rate limits: Redis at ${redis.url}`,
      ]);

      // Both stay down until Redis has been away for ten seconds, the server asked for readiness meanwhile.
      while (performance.now() - redisStopped < 10_000) {
        assert.equal((await ready(url)).status, 503);
        assert.equal((await fetch(`${url}/health/live`)).status, 200);
        await delay(500);
      }
      redis = await startRedis(home, redisPort);
      postgres.restart();
      const back = await pollReady(url, (answer) => answer.status === 200, 15_000);
      assert.deepEqual(back.answer.body, { status: "ok", services: ["water", "sync", "relay"] });
      // The recovery lines are written before the answer; the pipe may bring them a moment later.
      const lines = await linesUntil(
        started,
        from,
        (lines) => lines.filter((line) => /answering again/.test(line)).length >= 3,
      );
      const about = (pattern: RegExp): string[] => lines.filter((line) => pattern.test(line));
      assert.equal(about(/^Relay queue: Redis at .*: unreachable/).length, 1, lines.join("\n"));
      assert.equal(about(/^Rate limits: Redis at .*: unreachable/).length, 1, lines.join("\n"));
      assert.equal(about(/^Database: PostgreSQL at .*: unreachable/).length, 1, lines.join("\n"));
      for (const backend of ["Relay queue: Redis", "Rate limits: Redis", "Database: PostgreSQL"]) {
        assert.equal(
          about(
            new RegExp(`^${backend} at .*: answering again after \\d+\\.\\d s and \\d+ failures?`),
          ).length,
          1,
          `${backend}: ${lines.join("\n")}`,
        );
      }
      // Three outages, two lines each; nothing else (no trace per attempt).
      assert.ok(lines.length <= 8, `${lines.length} lines:\n${lines.join("\n")}`);
      assert.equal(
        (await fetch(`${url}/webhook`, {
          method: "POST",
          headers: { authorization: "Bearer demo-acme-key", "content-type": "application/json" },
          body: JSON.stringify({ event: "order.created", data: { id: 2 } }),
        })).status,
        202,
        "intake takes webhooks again",
      );
      started.child.kill("SIGTERM");
    },
  );
});

describe("server.ts readiness on Kafka", { skip: kafkaSkip }, () => {
  let kafka: TestKafka | undefined;
  after(() => kafka?.stop());

  it(
    "turns /health/ready 503 within 2 s of every broker going down, naming Kafka, and 200 once they are back, with two log lines",
    { timeout: 120_000 },
    async () => {
      kafka = await startKafka();
      const prefix = "health";
      for (const topic of Object.values(kafkaTopics(prefix))) await kafka.topic(topic, 2);
      await kafka.topic(kafkaConfigTopic(prefix), 1);
      await kafka.group(`${prefix}-relay`);
      const brokers = kafka.brokers.join(",");
      const started = startServer({
        SERVICES: "relay",
        STORAGE_TYPE: "kafka",
        KAFKA_BROKER: brokers,
        KAFKA_TOPIC_PREFIX: prefix,
        KAFKA_PARTITIONS: "2",
        KAFKA_GROUP_ID: `${prefix}-relay`,
        LOG_LEVEL: "info",
      });
      const url = await listeningUrl(started);
      await pollReady(url, (answer) => answer.status === 200, 10_000);
      const from = { out: started.output().length, err: started.errors().length };
      for (const id of [1, 2, 3]) await kafka.down(id);
      const down = await pollReady(url, (answer) => answer.status === 503, 2000);
      assert.ok(down.afterMs < 2000, `503 after ${down.afterMs} ms`);
      assert.deepEqual(parts(down.answer), [`relay queue: Kafka at ${brokers}`]);
      assert.equal((await fetch(`${url}/health/live`)).status, 200);
      for (const id of [1, 2, 3]) await kafka.up(id);
      await pollReady(url, (answer) => answer.status === 200, 30_000);
      const lines = await linesUntil(
        started,
        from,
        (lines) => lines.some((line) => /answering again/.test(line)),
      );
      const lost = lines.filter((line) =>
        line.startsWith(`Relay queue: Kafka at ${brokers}: unreachable`)
      ).length;
      const back = lines.filter((line) =>
        line.startsWith(`Relay queue: Kafka at ${brokers}: answering again after`)
      ).length;
      // One line down and one back; the brokers can flap once as they return (seen once in CI: a second short
      // outage, its pair of lines), which stays a handful. Its line down may still be in the pipe of standard error.
      assert.ok(lost >= 1 && back >= 1 && back <= lost + 1, lines.join("\n"));
      assert.ok(lines.length <= 5, `${lines.length} lines:\n${lines.join("\n")}`);
      started.child.kill("SIGTERM");
    },
  );
});
