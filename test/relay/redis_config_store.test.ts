import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { ConfigPut, ConfigRecord, ConfigStore, RelayError } from "../../lib/relay/mod.ts";
import { connectRedis, RedisConfigStore, type RedisScripts } from "../../lib/relay/redis/mod.ts";
import { configStoreContract } from "../_contracts/config_store.ts";
import { redisServerSkip, redisSkip, startRedis, type TestRedis } from "../_helpers/redis.ts";

/** What a store told one listener, and a way to wait for a record. */
interface Told {
  readonly records: ConfigRecord[];
  /** Resolves once a record told (now or later) satisfies `until`. */
  seen(until: (record: ConfigRecord) => boolean): Promise<void>;
  stop(): void;
}

function listen(store: ConfigStore): Told {
  const records: ConfigRecord[] = [];
  const waiting = new Set<{ until: (record: ConfigRecord) => boolean; resolve: () => void }>();
  const stop = store.watch((record) => {
    records.push(record);
    for (const waiter of waiting) {
      if (!waiter.until(record)) continue;
      waiting.delete(waiter);
      waiter.resolve();
    }
  });
  return {
    records,
    seen: (until) =>
      records.some(until)
        ? Promise.resolve()
        : new Promise((resolve) => waiting.add({ until, resolve })),
    stop,
  };
}

function stored(put: ConfigPut): number {
  assert.equal(put.stored, true, "the change was stored");
  return (put as { revision: number }).revision;
}

function isUnavailable(error: unknown): true {
  assert.equal((error as RelayError).code, "ERR_RELAY_QUEUE_UNAVAILABLE");
  assert.equal((error as RelayError).retryAfterMs, 1000);
  assert.match((error as Error).message, /^Cannot use the relay's configuration in Redis: /);
  return true;
}

describe("RedisConfigStore", { skip: redisSkip }, () => {
  let redis: TestRedis;
  let n = 0;
  /** A fresh prefix on the file's server: an empty store for each test. */
  const prefix = () => `{cfg-${process.pid}-${++n}}`;
  const connections: RedisScripts[] = [];
  async function connect(url = redis.url): Promise<RedisScripts> {
    const connection = await connectRedis(url);
    connections.push(connection);
    return connection;
  }
  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    // Tests that did not close their connection leave it to here.
    await Promise.allSettled(connections.map((connection) => connection.close()));
    await redis.stop();
  });

  // Each store opened is a process of its own: its own connection, the backend's prefix.
  configStoreContract("RedisConfigStore", { shared: true, compares: true }, () => {
    const shared = prefix();
    const opened: { store: ConfigStore; connection: RedisScripts }[] = [];
    return Promise.resolve({
      async open() {
        const connection = await connectRedis(redis.url);
        const store = new RedisConfigStore(connection, { prefix: shared });
        opened.push({ store, connection });
        return store;
      },
      async close() {
        for (const { store, connection } of opened) {
          await store.close();
          await connection.close();
        }
      },
    });
  });

  it("loads more records than one page holds, each key once, in revision order", {
    timeout: 30_000,
  }, async () => {
    const store = new RedisConfigStore(await connect(), { prefix: prefix() });
    const revisions = await Promise.all(
      Array.from({ length: 1200 }, (_, i) => store.put(`acme/ep-${i}`, `v${i}`, 0).then(stored)),
    );
    // Changed again: each moves to the end, and is loaded once.
    stored(await store.put("acme/ep-0", "v0 again", revisions[0]!));
    stored(await store.put("acme/ep-700", "v700 again", revisions[700]!));
    const records = await store.load();
    assert.equal(records.length, 1200);
    assert.equal(new Set(records.map((record) => record.key)).size, 1200);
    for (let i = 1; i < records.length; i++) {
      assert.ok(records[i]!.revision > records[i - 1]!.revision, "in revision order");
    }
    assert.deepEqual(records.slice(-2).map((record) => [record.key, record.value]), [[
      "acme/ep-0",
      "v0 again",
    ], ["acme/ep-700", "v700 again"]]);
    assert.equal(records.find((record) => record.key === "acme/ep-999")?.value, "v999");
  });

  it("tells a watcher of more changes than one poll's page, each once, in revision order", {
    timeout: 30_000,
  }, async () => {
    const shared = prefix();
    const writer = new RedisConfigStore(await connect(), { prefix: shared });
    const watcher = new RedisConfigStore(await connect(), { prefix: shared, pollMs: 20 });
    const told = listen(watcher);
    const all = told.seen((record) => record.value === "last");
    await Promise.all(
      Array.from({ length: 1200 }, (_, i) => writer.put(`acme/ep-${i}`, `v${i}`, 0)),
    );
    await writer.put("acme/final", "last", 0);
    await all;
    told.stop();
    await watcher.close();
    assert.equal(told.records.length, 1201);
    for (let i = 1; i < told.records.length; i++) {
      assert.ok(told.records[i]!.revision > told.records[i - 1]!.revision, "in revision order");
    }
  });

  it("tells a listener that joins a running watch only of changes stored after it joined", {
    timeout: 30_000,
  }, async () => {
    const store = new RedisConfigStore(await connect(), { prefix: prefix(), pollMs: 100 });
    const first = listen(store);
    const before = stored(await store.put("acme/before", "b", 0));
    const second = listen(store);
    const afterwards = stored(await store.put("acme/after", "a", 0));
    await Promise.all(
      [first, second].map((told) => told.seen((record) => record.key === "acme/after")),
    );
    first.stop();
    second.stop();
    await store.close();
    assert.deepEqual(first.records.map((record) => record.revision), [before, afterwards]);
    assert.deepEqual(second.records.map((record) => record.revision), [afterwards]);
  });

  it(
    "reports a listener that throws through onError, and tells the others",
    { timeout: 30_000 },
    async () => {
      const errors: unknown[] = [];
      let reported: () => void = () => {};
      const report = new Promise<void>((resolve) => (reported = resolve));
      const store = new RedisConfigStore(await connect(), {
        prefix: prefix(),
        pollMs: 20,
        onError: (error) => {
          errors.push(error);
          reported();
        },
      });
      const stopThrowing = store.watch(() => {
        throw new Error("listener failed");
      });
      const told = listen(store);
      stored(await store.put("acme/a", "a1", 0));
      await told.seen((record) => record.key === "acme/a");
      await report;
      stored(await store.put("acme/b", "b1", 0));
      await told.seen((record) => record.key === "acme/b");
      stopThrowing();
      told.stop();
      await store.close();
      assert.ok(
        errors.length >= 1 &&
          errors.every((error) => (error as Error).message === "listener failed"),
        String(errors),
      );
    },
  );

  it(
    "rejects put and load with ERR_RELAY_QUEUE_UNAVAILABLE and a Retry-After while Redis is away",
    { skip: redisServerSkip, timeout: 30_000 },
    async () => {
      const dir = mkdtempSync(join(tmpdir(), "tributary-redis-config-down-"));
      const server = await startRedis(dir);
      try {
        const store = new RedisConfigStore(await connect(server.url), { prefix: prefix() });
        stored(await store.put("acme/a", "a1", 0));
        await server.stop();
        await assert.rejects(store.put("acme/b", "b1", 0), isUnavailable);
        await assert.rejects(store.load(), isUnavailable);
        await store.close();
      } finally {
        await server.stop();
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );

  it(
    "keeps telling a watcher after Redis was stopped and started again on its data, reporting the outage once",
    { skip: redisServerSkip, timeout: 30_000 },
    async () => {
      const dir = mkdtempSync(join(tmpdir(), "tributary-redis-config-restart-"));
      let server = await startRedis(dir);
      const port = Number(new URL(server.url).port);
      const shared = prefix();
      try {
        const errors: unknown[] = [];
        let failed: () => void = () => {};
        const failure = new Promise<void>((resolve) => (failed = resolve));
        const store = new RedisConfigStore(await connect(server.url), {
          prefix: shared,
          pollMs: 20,
          onError: (error) => {
            errors.push(error);
            failed();
          },
        });
        const told = listen(store);
        const a = stored(await store.put("acme/a", "a1", 0));
        await told.seen((record) => record.key === "acme/a");
        await server.stop();
        await failure;
        server = await startRedis(dir, port);
        // Another process, started once Redis is back: the watcher's connection reconnects on its own.
        const other = new RedisConfigStore(await connect(server.url), { prefix: shared });
        const b = stored(await other.put("acme/b", "b1", 0));
        assert.ok(b > a, "the counter was kept");
        await told.seen((record) => record.key === "acme/b");
        told.stop();
        await store.close();
        assert.deepEqual(told.records, [{ key: "acme/a", revision: a, value: "a1" }, {
          key: "acme/b",
          revision: b,
          value: "b1",
        }]);
        assert.equal(errors.length, 1, "one report for the outage");
        isUnavailable(errors[0]);
      } finally {
        await server.stop();
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
