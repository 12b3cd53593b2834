import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { connectKafka } from "../../lib/storage/mod.ts";
import type { KafkaLog } from "../../lib/storage/kafka_log.ts";
import { KafkaQueue, kafkaTopics } from "../../lib/relay/kafka/kafka_queue.ts";
import type { RelayError } from "../../lib/relay/mod.ts";
import { jobQueueContract, makeJob } from "../_contracts/job_queue.ts";
import { freePort } from "../_helpers/redis.ts";
import { kafkaSkip, startKafka, type TestKafka } from "../_helpers/kafka.ts";

/** Partitions of each topic in these tests. */
const PARTITIONS = 4;

describe("KafkaQueue", { skip: kafkaSkip }, () => {
  let kafka: TestKafka;
  const queues: KafkaQueue[] = [];
  let n = 0;
  before(async () => {
    kafka = await startKafka();
  });
  after(async () => {
    await Promise.allSettled(queues.map((queue) => queue.close()));
    await kafka.stop();
  });
  // Each test's queue has its own topics and consumer group on the one cluster.
  jobQueueContract("KafkaQueue", async (setup) => {
    const prefix = `contract-${++n}`;
    const topics = kafkaTopics(prefix);
    for (const topic of Object.values(topics)) await kafka.topic(topic, PARTITIONS);
    await kafka.group(`${prefix}-relay`);
    const log = await connectKafka(kafka.brokers, { sessionTimeoutMs: 6000 });
    const queue = await KafkaQueue.open(log, {
      ...setup,
      topics,
      groupId: `${prefix}-relay`,
      instanceId: "a",
    });
    queues.push(queue);
    return queue;
  });
});

describe("connectKafka()", () => {
  it("fails when no broker answers at the address", async () => {
    const port = await freePort();
    await assert.rejects(
      connectKafka([`127.0.0.1:${port}`], { connectTimeoutMs: 500 }),
      /ECONNREFUSED|Connection error|connect/i,
    );
  });
});

describe("connectKafka() while the brokers are away", { skip: kafkaSkip }, () => {
  it("fails an append the brokers do not acknowledge within produceTimeoutMs", async () => {
    const kafka = await startKafka({ away: 1 });
    const log = await connectKafka(kafka.brokers, { produceTimeoutMs: 300 });
    try {
      assert.deepEqual(await log.produce([{ topic: "away", partition: 0, key: "k", value: "1" }]), [
        0,
      ]);
      for (const id of [1, 2, 3]) await kafka.down(id);
      const started = Date.now();
      await assert.rejects(
        log.produce([{ topic: "away", partition: 0, key: "k", value: "2" }]),
        /did not acknowledge within 300 ms/,
      );
      assert.ok(Date.now() - started >= 300);
    } finally {
      await kafka.stop();
      await log.close();
    }
  });
});

describe("connectKafka() when a partition's leader moves", { skip: kafkaSkip }, () => {
  it("appends every record of a request that spans brokers, though kafkajs's retry leaves out the moved partition", async () => {
    const kafka = await startKafka({ moving: 2 });
    const log = await connectKafka(kafka.brokers);
    try {
      await kafka.leader("moving", 0, 2);
      await kafka.leader("moving", 1, 1);
      // The client learns the leaders: 2 for partition 0, 1 for partition 1.
      assert.deepEqual(
        await log.produce([{ topic: "moving", partition: 0, key: "k", value: "a" }, {
          topic: "moving",
          partition: 1,
          key: "k",
          value: "b",
        }]),
        [0, 0],
      );
      // Partition 0 moves to broker 1. The next request's part for broker 2 is refused (not the leader); kafkajs
      // learns the new leader, but broker 1 has answered already, so its retry sends partition 0's record nowhere.
      await kafka.leader("moving", 0, 1);
      const offsets = await log.produce([{ topic: "moving", partition: 0, key: "k", value: "c" }, {
        topic: "moving",
        partition: 1,
        key: "k",
        value: "d",
      }]);
      assert.deepEqual(offsets, [1, 1]);
      assert.deepEqual(
        await log.ends("moving"),
        new Map([[0, 2], [1, 2]]),
        "both records are in the log",
      );
    } finally {
      await kafka.stop();
      await log.close();
    }
  });
});

describe("connectKafka() when its consumer crashes", { skip: kafkaSkip }, () => {
  it("takes pause and resume while the consumer is replaced, and the new one reads only what is not paused", async () => {
    const kafka = await startKafka({ crash: 2 }, ["crash-relay"]);
    let crashed: () => void = () => {};
    const crash = new Promise<void>((resolve) => (crashed = resolve));
    const log = await connectKafka(kafka.brokers, {
      sessionTimeoutMs: 6000,
      onError: () => crashed(),
    });
    const read = new Map<number, string[]>();
    const waiting = new Map<number, () => void>();
    const readFrom = (partition: number): Promise<void> =>
      new Promise((resolve) => waiting.set(partition, resolve));
    try {
      const subscription = await log.subscribe({
        groupId: "crash-relay",
        topics: ["crash"],
        fromBeginning: true,
        onAssign: () => {},
        onBatch: (batch) => {
          read.set(batch.partition, [
            ...(read.get(batch.partition) ?? []),
            ...batch.records.map((record) => record.value ?? ""),
          ]);
          waiting.get(batch.partition)?.();
        },
      });
      // The next heartbeat is answered INVALID_REQUEST (42), which kafkajs does not retry: the consumer crashes.
      await kafka.error(12, 42);
      await crash;
      // Between the crash and the new consumer's start, the queue still pauses and resumes partitions.
      subscription.pause("crash", 0);
      subscription.pause("crash", 1);
      subscription.resume("crash", 1);
      const second = readFrom(1);
      await log.produce([{ topic: "crash", partition: 0, key: "k", value: "held" }, {
        topic: "crash",
        partition: 1,
        key: "k",
        value: "read",
      }]);
      await second;
      assert.deepEqual(read.get(1), ["read"]);
      assert.equal(read.get(0), undefined, "partition 0 stays paused on the new consumer");
      const first = readFrom(0);
      subscription.resume("crash", 0);
      await first;
      assert.deepEqual(read.get(0), ["held"]);
    } finally {
      await log.close();
      await kafka.stop();
    }
  });
});

describe("KafkaQueue over a log that refuses appends", () => {
  it("refuses a batch with ERR_RELAY_QUEUE_UNAVAILABLE and a Retry-After, and keeps nothing of it", async () => {
    const log: KafkaLog = {
      produce: () => Promise.reject(new Error("Kafka did not acknowledge within 5000 ms")),
      subscribe: (options) => {
        options.onAssign(new Map(options.topics.map((topic) => [topic, [0]])));
        return Promise.resolve({
          pause: () => {},
          resume: () => {},
          commit: () => Promise.resolve(),
          close: () => Promise.resolve(),
        });
      },
      partitions: () => Promise.resolve(1),
      ends: () => Promise.resolve(new Map()),
      close: () => Promise.resolve(),
    };
    const queue = await KafkaQueue.open(log, { topics: kafkaTopics("refusing"), instanceId: "a" });
    await assert.rejects(
      queue.enqueue({ tenantId: "acme", messageId: "m1", jobs: [makeJob("m1")] }),
      (error: RelayError) => {
        assert.equal(error.code, "ERR_RELAY_QUEUE_UNAVAILABLE");
        assert.equal(error.retryAfterMs, 1000);
        assert.match(error.message, /did not acknowledge/);
        return true;
      },
    );
    assert.deepEqual(await queue.message("acme", "m1"), [], "nothing kept of the refused batch");
    assert.deepEqual(await queue.depth(0), { ready: 0, delayed: 0, leased: 0, dead: 0 });
    assert.deepEqual(
      await queue.enqueue({ tenantId: "acme", messageId: "m1", jobs: [makeJob("m1")] }).catch((
        error: RelayError,
      ) => error.code),
      "ERR_RELAY_QUEUE_UNAVAILABLE",
      "the same id may be tried again",
    );
    await queue.close();
  });
});
