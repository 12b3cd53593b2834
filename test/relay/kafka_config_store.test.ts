import assert from "node:assert/strict";
import { performance } from "node:perf_hooks";
import { after, before, describe, it } from "node:test";
import { connectKafka, topicConfig } from "../../lib/storage/kafka.ts";
import { KafkaConfigStore, kafkaConfigTopic } from "../../lib/relay/kafka/kafka_config_store.ts";
import type {
  KafkaBatch,
  KafkaLog,
  KafkaRecordOut,
  KafkaSubscribeOptions,
} from "../../lib/storage/kafka_log.ts";
import type { ConfigRecord, ConfigStore, RelayError } from "../../lib/relay/mod.ts";
import { type ConfigBackend, configStoreContract } from "../_contracts/config_store.ts";
import { kafkaSkip, startKafka, type TestKafka } from "../_helpers/kafka.ts";

describe("KafkaConfigStore", { skip: kafkaSkip }, () => {
  let kafka: TestKafka;
  let topics = 0;
  let instances = 0;
  before(async () => {
    kafka = await startKafka();
  });
  after(async () => {
    await kafka.stop();
  });

  /** A fresh topic of one partition; each `open` is a new relay process (connection, instance id). */
  async function backend(): Promise<ConfigBackend> {
    const name = `config-${++topics}`;
    await kafka.topic(kafkaConfigTopic(name), 1);
    const opened: { store: ConfigStore; log: KafkaLog }[] = [];
    return {
      async open() {
        const log = await connectKafka(kafka.brokers, { sessionTimeoutMs: 6000 });
        try {
          const store = await KafkaConfigStore.open(log, {
            topic: kafkaConfigTopic(name),
            groupId: `${name}-relay`,
            instanceId: `process-${++instances}`,
          });
          opened.push({ store, log });
          return store;
        } catch (error) {
          await log.close();
          throw error;
        }
      },
      async close() {
        await Promise.allSettled(opened.map(({ store }) => store.close()));
        await Promise.allSettled(opened.map(({ log }) => log.close()));
      },
    };
  }

  configStoreContract("KafkaConfigStore", { shared: true, compares: false }, backend);

  it("opens after 300 changes of 20 keys holding exactly each key's latest value", {
    timeout: 60_000,
  }, async () => {
    const relay = await backend();
    try {
      const writer = await relay.open();
      const latest = new Map<string, ConfigRecord>();
      for (let round = 0; round < 15; round++) {
        // 20 changes at once, one per key: each stored, in whatever order the log takes them.
        const puts = await Promise.all(
          Array.from(
            { length: 20 },
            (_, k) => writer.put(`acme/ep-${k}`, `round ${round} of ${k}`, 0),
          ),
        );
        puts.forEach((put, k) => {
          assert.equal(put.stored, true);
          const revision = (put as { revision: number }).revision;
          const key = `acme/ep-${k}`;
          if ((latest.get(key)?.revision ?? 0) < revision) {
            latest.set(key, { key, revision, value: `round ${round} of ${k}` });
          }
        });
      }
      const expected = [...latest.values()].sort((a, b) => a.revision - b.revision);
      assert.equal(expected.length, 20);
      assert.ok(
        expected.every((record) => record.value.startsWith("round 14 ")),
        "the last round's values",
      );
      assert.deepEqual(await writer.load(), expected, "the writer reads its own writes");
      const reader = await relay.open();
      assert.deepEqual(await reader.load(), expected, "a process opened later reads the log whole");
    } finally {
      await relay.close();
    }
  });

  it("tells another process's watcher of a change", { timeout: 60_000 }, async (t) => {
    const relay = await backend();
    try {
      const [a, b] = [await relay.open(), await relay.open()];
      const told = new Promise<{ record: ConfigRecord; at: number }>((resolve) => {
        const stop = b.watch((record) => {
          stop();
          resolve({ record, at: performance.now() });
        });
      });
      const started = performance.now();
      const put = await a.put("acme/orders", '{"url":"https://a.example/"}', 0);
      const { record, at } = await told;
      t.diagnostic(`told after ${(at - started).toFixed(1)} ms`);
      assert.deepEqual(record, {
        key: "acme/orders",
        revision: (put as { revision: number }).revision,
        value: '{"url":"https://a.example/"}',
      });
    } finally {
      await relay.close();
    }
  });

  it("refuses a topic of more than one partition, whose offsets would order nothing", async () => {
    const log = await connectKafka(kafka.brokers, { sessionTimeoutMs: 6000 });
    try {
      await kafka.topic("config-partitioned.config", 3);
      await assert.rejects(
        KafkaConfigStore.open(log, {
          topic: "config-partitioned.config",
          groupId: "partitioned",
          instanceId: "a",
        }),
        (error: Error) =>
          error instanceof TypeError && /has 3 partitions; it needs exactly 1/.test(error.message),
      );
    } finally {
      await log.close();
    }
  });
});

/** A log of one partition in memory, whose records reach the reader only when the test says. */
function scriptedLog(options: { failProduce?: boolean } = {}) {
  const records: { key: string | null; value: string | null }[] = [];
  let reader: KafkaSubscribeOptions | undefined;
  let closed = 0;
  const log: KafkaLog = {
    produce(out: readonly KafkaRecordOut[]) {
      if (options.failProduce === true) {
        return Promise.reject(new Error("Kafka did not acknowledge within 5000 ms"));
      }
      return Promise.resolve(
        out.map((record) => records.push({ key: record.key, value: record.value }) - 1),
      );
    },
    subscribe(subscription) {
      reader = subscription;
      subscription.onAssign(new Map([[subscription.topics[0]!, [0]]]));
      return Promise.resolve({
        pause: () => {},
        resume: () => {},
        commit: () => Promise.resolve(),
        close: () => Promise.resolve(void closed++),
      });
    },
    partitions: () => Promise.resolve(1),
    ends: () => Promise.resolve(new Map([[0, records.length]])),
    close: () => Promise.reject(new Error("the store closed the shared log")),
  };
  return {
    log,
    append(key: string | null, value: string | null) {
      records.push({ key, value });
    },
    /** Hands the reader records `from` to `to` (exclusive) as one batch. */
    deliver(from: number, to = records.length) {
      const batch: KafkaBatch = {
        topic: "t",
        partition: 0,
        records: records.slice(from, to).map((record, i) => ({ offset: from + i, ...record })),
      };
      reader!.onBatch(batch);
    },
    get groupId() {
      return reader?.groupId;
    },
    get closed() {
      return closed;
    },
  };
}

describe("KafkaConfigStore over a scripted log", () => {
  it("reads the log to its end at opening, in a group of its own, and closes its reader only", async () => {
    const scripted = scriptedLog();
    scripted.append("acme/a", "a1");
    scripted.append("acme/b", "b1");
    scripted.append("acme/a", "a2");
    let opened = false;
    const opening = KafkaConfigStore.open(scripted.log, {
      topic: "t",
      groupId: "relay",
      instanceId: "p1",
    }).then((store) => {
      opened = true;
      return store;
    });
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(opened, false, "not before the end is read");
    scripted.deliver(0, 2);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(opened, false, "not before the end is read");
    scripted.deliver(2);
    const store = await opening;
    assert.equal(scripted.groupId, "relay.config.p1");
    assert.deepEqual(await store.load(), [{ key: "acme/b", revision: 2, value: "b1" }, {
      key: "acme/a",
      revision: 3,
      value: "a2",
    }]);
    await store.close();
    assert.equal(scripted.closed, 1, "its subscription is closed; the log is not");
  });

  it("reads its own write at once, tells watchers of each record of the log once and in order, skipping its writes made before the watch", async () => {
    const scripted = scriptedLog();
    const store = await KafkaConfigStore.open(scripted.log, {
      topic: "t",
      groupId: "relay",
      instanceId: "p1",
    });
    assert.deepEqual(await store.put("acme/a", "mine before", 0), { stored: true, revision: 1 });
    const told: ConfigRecord[] = [];
    store.watch((record) => told.push(record));
    scripted.append("acme/b", "theirs");
    assert.deepEqual(await store.put("acme/a", "mine after", 0), { stored: true, revision: 3 });
    assert.deepEqual(
      await store.load(),
      [{ key: "acme/a", revision: 3, value: "mine after" }],
      "before the log gives it back",
    );
    scripted.deliver(0);
    // Read again, as a replaced consumer does from the start: nothing new.
    scripted.deliver(0);
    assert.deepEqual(told, [{ key: "acme/b", revision: 2, value: "theirs" }, {
      key: "acme/a",
      revision: 3,
      value: "mine after",
    }]);
    assert.deepEqual(await store.load(), [{ key: "acme/b", revision: 2, value: "theirs" }, {
      key: "acme/a",
      revision: 3,
      value: "mine after",
    }]);
    await store.close();
  });

  it("reports a listener that throws to onError, and tells the others and goes on reading", async () => {
    const scripted = scriptedLog();
    const errors: unknown[] = [];
    const store = await KafkaConfigStore.open(scripted.log, {
      topic: "t",
      groupId: "relay",
      instanceId: "p1",
      onError: (error) => errors.push(error),
    });
    const told: string[] = [];
    store.watch(() => {
      throw new Error("listener failed");
    });
    store.watch((record) => told.push(record.value));
    scripted.append("acme/a", "a1");
    scripted.append("acme/b", "b1");
    scripted.deliver(0);
    assert.deepEqual(told, ["a1", "b1"]);
    assert.deepEqual(errors.map((error) => (error as Error).message), [
      "listener failed",
      "listener failed",
    ]);
    await store.close();
  });

  it("keeps the later record of a key when the log gives back an earlier one after this process's write", async () => {
    const scripted = scriptedLog();
    const store = await KafkaConfigStore.open(scripted.log, {
      topic: "t",
      groupId: "relay",
      instanceId: "p1",
    });
    scripted.append("acme/a", "theirs, earlier");
    await store.put("acme/a", "mine, later", 0);
    scripted.deliver(0, 1);
    assert.deepEqual(await store.load(), [{ key: "acme/a", revision: 2, value: "mine, later" }]);
    scripted.append("acme/a", null);
    scripted.deliver(1);
    assert.deepEqual(await store.load(), [], "a tombstone removes the key, as compaction will");
    await store.close();
  });

  it("refuses a change with ERR_RELAY_QUEUE_UNAVAILABLE and a Retry-After when Kafka does not acknowledge it, and keeps nothing of it", async () => {
    const scripted = scriptedLog({ failProduce: true });
    const store = await KafkaConfigStore.open(scripted.log, {
      topic: "t",
      groupId: "relay",
      instanceId: "p1",
    });
    await assert.rejects(store.put("acme/a", "x", 0), (error: RelayError) => {
      assert.equal(error.code, "ERR_RELAY_QUEUE_UNAVAILABLE");
      assert.equal(error.retryAfterMs, 1000);
      assert.match(
        error.message,
        /^Cannot use the relay's configuration in Kafka: .*did not acknowledge/,
      );
      assert.ok(error.cause instanceof Error);
      return true;
    });
    assert.deepEqual(await store.load(), []);
    await store.close();
  });
});

describe("topicConfig()", () => {
  const cases = [
    {
      name: "creates a plain topic with no entries",
      spec: { topic: "t.jobs", partitions: 4 },
      expected: [],
    },
    {
      name: "compacts and deletes by time when given a retention (the state topic)",
      spec: { topic: "t.state", partitions: 4, compactRetentionMs: 1000, compact: true },
      expected: [{ name: "cleanup.policy", value: "compact,delete" }, {
        name: "retention.ms",
        value: "1000",
      }],
    },
    {
      name:
        "compacts only, never deleting by time, when asked to compact (the configuration topic)",
      spec: { topic: "t.config", partitions: 1, compact: true },
      expected: [{ name: "cleanup.policy", value: "compact" }],
    },
  ] as const;
  for (const c of cases) it(c.name, () => assert.deepEqual(topicConfig(c.spec), c.expected));

  it("names the configuration topic after the prefix", () =>
    assert.equal(kafkaConfigTopic("tributary"), "tributary.config"));
});
