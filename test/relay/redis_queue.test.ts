import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { RelayError } from "../../lib/relay/mod.ts";
import { connectRedis, RedisQueue, type RedisScripts } from "../../lib/relay/redis/mod.ts";
import { jobQueueContract, makeJob } from "../_contracts/job_queue.ts";
import {
  freePort,
  redisServerSkip,
  redisSkip,
  startRedis,
  type TestRedis,
} from "../_helpers/redis.ts";

describe("RedisQueue", { skip: redisSkip }, () => {
  let redis: TestRedis;
  const connections: RedisScripts[] = [];
  let n = 0;
  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    // Tests that did not close their queue leave it to here.
    await Promise.allSettled(connections.map((connection) => connection.close()));
    await redis.stop();
  });
  // Each test's queue has its own connection and key prefix on the one server.
  jobQueueContract("RedisQueue", async (setup) => {
    const connection = await connectRedis(redis.url);
    connections.push(connection);
    return new RedisQueue(connection, { ...setup, prefix: `{test-${process.pid}-${++n}}` });
  });
});

describe("connectRedis()", { skip: redisSkip }, () => {
  it(
    "fails a script that Redis does not answer within commandTimeoutMs, and works again once it answers",
    { skip: redisServerSkip },
    async () => {
      const dir = mkdtempSync(join(tmpdir(), "tributary-redis-stop-"));
      const redis = await startRedis(dir);
      const connection = await connectRedis(redis.url, { commandTimeoutMs: 200 });
      try {
        assert.equal(await connection.run("return 7", []), 7);
        // A Redis that hangs: stopped, its socket open.
        redis.child!.kill("SIGSTOP");
        const started = Date.now();
        await assert.rejects(connection.run("return 8", []), /did not answer within 200 ms/);
        assert.ok(Date.now() - started >= 200, "not before the timeout");
        redis.child!.kill("SIGCONT");
        assert.equal(await connection.run("return 9", []), 9);
      } finally {
        redis.child!.kill("SIGCONT");
        await connection.close();
        await redis.stop();
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );

  it(
    "tells onError of a lost connection and onReady once it is back, and nothing on the first connection",
    { skip: redisServerSkip },
    async () => {
      const dir = mkdtempSync(join(tmpdir(), "tributary-redis-back-"));
      const port = await freePort();
      let redis = await startRedis(dir, port);
      const heard: string[] = [];
      let back: () => void = () => {};
      const ready = new Promise<void>((resolve) => (back = resolve));
      const connection = await connectRedis(redis.url, {
        onError: () => heard.push("error"),
        onReady: () => {
          heard.push("ready");
          back();
        },
      });
      try {
        assert.equal(heard.length, 0, "nothing on the first connection");
        await redis.stop();
        await assert.rejects(connection.run("return 1", []));
        redis = await startRedis(dir, port);
        await ready;
        assert.equal(await connection.run("return 2", []), 2);
        assert.ok(
          heard.indexOf("error") >= 0 && heard.indexOf("error") < heard.indexOf("ready"),
          heard.join(", "),
        );
        assert.equal(heard.filter((event) => event === "ready").length, 1);
      } finally {
        await connection.close();
        await redis.stop();
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );

  it("fails with the connection's error when nothing listens at the address", async () => {
    const port = await freePort();
    await assert.rejects(
      connectRedis(`redis://127.0.0.1:${port}`, { connectTimeoutMs: 1000 }),
      /ECONNREFUSED/,
    );
  });
});

describe("RedisQueue group commit", { skip: redisSkip }, () => {
  it("queues a burst larger than one script's group, every batch accepted", async () => {
    const redis = await startRedis();
    const connection = await connectRedis(redis.url);
    try {
      const queue = new RedisQueue(connection, { prefix: `{burst-${process.pid}}` });
      const results = await Promise.all(
        Array.from(
          { length: 600 },
          (_, i) =>
            queue.enqueue({ tenantId: "acme", messageId: `m${i}`, jobs: [makeJob(`m${i}`)] }),
        ),
      );
      assert.ok(results.every((result) => result.accepted));
      assert.equal((await queue.depth(0)).ready, 600);
    } finally {
      await connection.close();
      await redis.stop();
    }
  });
});

describe("RedisQueue without its server", () => {
  it("rejects every batch of the group with ERR_RELAY_QUEUE_UNAVAILABLE and a Retry-After", async () => {
    let calls = 0;
    const down: RedisScripts = {
      run: () => {
        calls++;
        return Promise.reject(new Error("The client is offline"));
      },
      close: () => Promise.resolve(),
    };
    const queue = new RedisQueue(down);
    const results = await Promise.allSettled(
      [1, 2, 3].map((i) =>
        queue.enqueue({ tenantId: "acme", messageId: `m${i}`, jobs: [makeJob(`m${i}`)] })
      ),
    );
    assert.equal(calls, 1, "one script for the three");
    for (const result of results) {
      assert.equal(result.status, "rejected");
      assert.equal((result.reason as RelayError).code, "ERR_RELAY_QUEUE_UNAVAILABLE");
      assert.equal((result.reason as RelayError).retryAfterMs, 1000);
      assert.match((result.reason as Error).message, /offline/);
    }
  });
});
