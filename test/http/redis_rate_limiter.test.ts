// Per-key limits shared by replicas through Redis: the limiter itself on a
// real Redis, and two app replicas on one Redis answering 429 above the rate
// one replica allows.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { type App, createApp, readConfig } from "../../lib/app/mod.ts";
import { HttpError, RedisRateLimiter, withRateLimit } from "../../lib/http/mod.ts";
import { connectRedis, type RedisScripts } from "../../lib/storage/mod.ts";
import { makeRequest } from "../_helpers/http.ts";
import { redisSkip, startRedis, type TestRedis } from "../_helpers/redis.ts";

describe("RedisRateLimiter", { skip: redisSkip }, () => {
  let redis: TestRedis;
  const connections: RedisScripts[] = [];
  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    for (const connection of connections) await connection.close();
    await redis.stop();
  });
  const connect = async () => {
    const connection = await connectRedis(redis.url);
    connections.push(connection);
    return connection;
  };
  let n = 0;
  const permitId = () => `test:${++n}`;

  it("allows a key's burst, then refuses it over the rate with the seconds to wait, on every connection alike", async () => {
    const [a, b] = [await connect(), await connect()];
    const options = {
      ratePerSecond: 1,
      burst: 2,
      maxConcurrent: 0,
      permitId,
      prefix: `t${Date.now()}:`,
    };
    const one = new RedisRateLimiter(a, options);
    const two = new RedisRateLimiter(b, options);
    const decisions = [
      await one.acquire("k"),
      await two.acquire("k"),
      await one.acquire("k"),
      await two.acquire("k"),
    ];
    assert.deepEqual(decisions.map((d) => d.ok), [true, true, false, false]);
    const refused = decisions[2]!;
    assert.ok(!refused.ok && refused.reason === "rate" && refused.retryAfterSeconds >= 1);
    assert.equal((await one.acquire("another key")).ok, true, "keys are apart");
  });

  it("tells the quota the bucket in Redis holds, on every connection alike", async () => {
    const [a, b] = [await connect(), await connect()];
    const options = {
      ratePerSecond: 0.001,
      burst: 3,
      maxConcurrent: 1,
      permitId,
      prefix: `q${Date.now()}:`,
    };
    const one = new RedisRateLimiter(a, options);
    const two = new RedisRateLimiter(b, options);
    const first = await one.acquire("k");
    assert.ok(first.ok);
    assert.deepEqual({ ...first.quota, resetSeconds: 0 }, {
      limit: 3,
      remaining: 2,
      resetSeconds: 0,
      windowSeconds: 3000,
    });
    assert.ok(
      first.quota!.resetSeconds > 990 && first.quota!.resetSeconds <= 1000,
      `${first.quota!.resetSeconds} s until full`,
    );
    const busy = await two.acquire("k");
    assert.ok(!busy.ok && busy.reason === "concurrency");
    assert.equal(busy.quota?.remaining, 2, "a refusal for concurrency spends nothing, and says so");
    first.release();
    const second = await one.acquire("k");
    assert.ok(second.ok);
    assert.equal(second.quota?.remaining, 1);
    second.release();
    await one.acquire("k").then((d) => d.ok && d.release());
    const over = await one.acquire("k");
    assert.ok(!over.ok && over.reason === "rate");
    assert.equal(over.quota?.remaining, 0);
    const unlimited = new RedisRateLimiter(a, {
      ratePerSecond: 0,
      maxConcurrent: 1,
      permitId,
      prefix: `u${Date.now()}:`,
    });
    assert.equal((await unlimited.acquire("k")).quota, undefined);
  });

  it("counts permits in flight over connections, and frees one on release", async () => {
    const [a, b] = [await connect(), await connect()];
    const options = { ratePerSecond: 0, maxConcurrent: 1, permitId, prefix: `c${Date.now()}:` };
    const one = new RedisRateLimiter(a, options);
    const two = new RedisRateLimiter(b, options);
    const held = await one.acquire("k");
    assert.equal(held.ok, true);
    const busy = await two.acquire("k");
    assert.ok(!busy.ok && busy.reason === "concurrency");
    if (held.ok) held.release();
    // The release is one script on the same connection: the next acquire there comes after it.
    assert.equal((await one.acquire("k")).ok, true);
  });

  it("renews a held permit (a long stream keeps it), and not one released", async () => {
    const connection = await connect();
    const prefix = `r${Date.now()}:`;
    const limiter = new RedisRateLimiter(connection, {
      ratePerSecond: 0,
      maxConcurrent: 1,
      permitId: () => "p1",
      prefix,
      permitTtlMs: 60_000,
    });
    const expiry = async () =>
      connection.run(`return redis.call('ZSCORE', ARGV[1], 'p1')`, [`${prefix}rate:flight:k`]);
    const decision = await limiter.acquire("k");
    assert.ok(decision.ok && decision.renew !== undefined && decision.renewEveryMs === 20_000);
    const before = Number(await expiry());
    await decision.renew();
    assert.ok(Number(await expiry()) >= before, "pushed on");
    decision.release();
    assert.equal((await limiter.acquire("k")).ok, true, "released");
    const again = await limiter.acquire("other");
    if (again.ok) {
      again.release();
      await again.renew?.();
    }
    assert.equal(
      await connection.run(`return redis.call('ZSCORE', ARGV[1], 'p1')`, [
        `${prefix}rate:flight:other`,
      ]),
      null,
      "a released permit is not renewed back",
    );
  });

  it("makes withRateLimit renew a streamed answer's permit every renewEveryMs until the stream ends", async (t) => {
    t.mock.timers.enable({ apis: ["setInterval"] });
    let renewals = 0;
    let released = 0;
    const limiter = {
      acquire: () => ({
        ok: true as const,
        release: () => void released++,
        renew: () => void renewals++,
        renewEveryMs: 1000,
      }),
    };
    async function* rows(): AsyncGenerator<string> {
      yield "a";
      yield "b";
    }
    const handler = withRateLimit(() => ({ status: 200, body: rows() }), limiter, () => "k");
    const answer = await handler(makeRequest());
    t.mock.timers.tick(3500);
    // Each renewal runs in a promise of its own (so that one failing is no unhandled rejection).
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(renewals, 3);
    for await (const _ of answer.body as AsyncIterable<string>);
    t.mock.timers.tick(5000);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(renewals, 3, "no renewal once the stream ended");
    assert.equal(released, 1);
  });

  it("makes withRateLimit answer 503 with Retry-After when Redis does not answer", async () => {
    const down = new RedisRateLimiter({
      run: () => Promise.reject(new Error("connection refused")),
    }, { ratePerSecond: 2, maxConcurrent: 1, permitId });
    const handler = withRateLimit(() => ({ status: 200 }), down, () => "k");
    await assert.rejects(Promise.resolve(handler(makeRequest())), (error: unknown) => {
      assert.ok(error instanceof HttpError);
      assert.equal(error.code, "ERR_HTTP_UNAVAILABLE");
      assert.equal(error.headers["retry-after"], "1");
      return true;
    });
  });
});

describe("two water replicas on one Redis (RATE_LIMIT_REDIS_URL)", { skip: redisSkip }, () => {
  let redis: TestRedis;
  before(async () => {
    redis = await startRedis();
  });
  after(() => redis.stop());

  /** How many of 8 requests at once, half on each replica, are answered 200 (the others 429). */
  async function burst(env: Record<string, string>): Promise<{ ok: number; limited: number }> {
    const apps: App[] = [];
    try {
      for (let i = 0; i < 2; i++) {
        const app = createApp(
          readConfig({
            SERVICES: "water",
            STATE_DIR: "",
            RATE_LIMIT_PER_SECOND: "2",
            RATE_LIMIT_BURST: "2",
            RATE_LIMIT_CONCURRENCY: "0",
            ...env,
          }),
          { log: { info: () => {}, error: () => {} } },
        );
        await app.start();
        apps.push(app);
      }
      const urls = await Promise.all(
        apps.map(async (app) => (await app.listen({ port: 0, host: "127.0.0.1" })).url),
      );
      const statuses = await Promise.all(Array.from({ length: 8 }, async (_, i) => {
        const response = await fetch(`${urls[i % 2]!}/v1/odata/v4/Locations?$top=1`, {
          headers: { "x-api-key": "tributary-demo-key" },
        });
        await response.body?.cancel();
        return response.status;
      }));
      return {
        ok: statuses.filter((status) => status === 200).length,
        limited: statuses.filter((status) => status === 429).length,
      };
    } finally {
      for (const app of apps) await app.close();
    }
  }

  it("answer 429 above 2 requests per second per key together, where each alone would allow 2", async () => {
    const apart = await burst({});
    assert.equal(apart.ok, 4, "without Redis each replica allows its own 2");
    const shared = await burst({ RATE_LIMIT_REDIS_URL: redis.url });
    assert.ok(
      shared.ok >= 2 && shared.ok <= 3,
      `${shared.ok} answered: the two replicas together allow what one allows (2, and what refills meanwhile)`,
    );
    assert.equal(shared.ok + shared.limited, 8);
  });

  it("refuses to start with an unreachable RATE_LIMIT_REDIS_URL, naming it", async () => {
    const app = createApp(
      readConfig({ SERVICES: "water", STATE_DIR: "", RATE_LIMIT_REDIS_URL: "redis://127.0.0.1:1" }),
      { log: { info: () => {}, error: () => {} } },
    );
    await assert.rejects(app.start(), { name: "ConfigError", variable: "RATE_LIMIT_REDIS_URL" });
  });
});
