import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { connectRedis, RedisQueue, type RedisScripts } from "../../lib/relay/mod.ts";
import { jobQueueContract } from "../_contracts/job_queue.ts";
import { freePort, redisSkip, startRedis, type TestRedis } from "../_helpers/redis.ts";

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
  it("fails with the connection's error when nothing listens at the address", async () => {
    const port = await freePort();
    await assert.rejects(connectRedis(`redis://127.0.0.1:${port}`, { connectTimeoutMs: 1000 }), /ECONNREFUSED/);
  });
});
