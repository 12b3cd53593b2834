import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { connectKafka, KafkaQueue, kafkaTopics } from "../../lib/relay/mod.ts";
import { jobQueueContract } from "../_contracts/job_queue.ts";
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
    const queue = await KafkaQueue.open(log, { ...setup, topics, groupId: `${prefix}-relay`, instanceId: "a" });
    queues.push(queue);
    return queue;
  });
});

describe("connectKafka()", () => {
  it("fails when no broker answers at the address", async () => {
    const port = await freePort();
    await assert.rejects(connectKafka([`127.0.0.1:${port}`], { connectTimeoutMs: 500 }), /ECONNREFUSED|Connection error|connect/i);
  });
});
