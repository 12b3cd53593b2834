// produceAcknowledged: every partition of an append must be acknowledged.
// kafkajs 2.2 can resolve a send whose answer leaves out partitions it never
// appended (a broker failed mid-request and its partitions moved to a broker
// that had answered already); these tests script such answers.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  type ProduceAck,
  produceAcknowledged,
  type ProduceRequest,
} from "../../lib/storage/kafka.ts";
import type { KafkaRecordOut } from "../../lib/storage/kafka_log.ts";

function record(topic: string, partition: number, key: string): KafkaRecordOut {
  return { topic, partition, key, value: key };
}

/** A log of partitions (topic\npartition → values) that answers like the broker would, except for the partitions `drop` names. */
function scriptedLog(drop: (round: number, topic: string, partition: number) => boolean) {
  const logs = new Map<string, string[]>();
  const requests: ProduceRequest[] = [];
  const send = (request: ProduceRequest): Promise<ProduceAck[]> => {
    const round = requests.length;
    requests.push(request);
    const acks: ProduceAck[] = [];
    for (const { topic, messages } of request) {
      const byPartition = new Map<number, string[]>();
      for (const message of messages) {
        byPartition.set(message.partition, [
          ...(byPartition.get(message.partition) ?? []),
          message.value ?? "",
        ]);
      }
      for (const [partition, appended] of byPartition) {
        if (drop(round, topic, partition)) continue;
        const key = `${topic}\n${partition}`;
        const log = logs.get(key) ?? [];
        logs.set(key, log);
        acks.push({ topicName: topic, partition, baseOffset: String(log.length) });
        log.push(...appended);
      }
    }
    return Promise.resolve(acks);
  };
  return { logs, requests, send };
}

describe("produceAcknowledged()", () => {
  it("gives each record its offset: the partition's base offset plus its place in the partition", async () => {
    const log = scriptedLog(() => false);
    await produceAcknowledged(log.send, [record("jobs", 0, "x"), record("jobs", 0, "y")]);
    const offsets = await produceAcknowledged(log.send, [
      record("jobs", 0, "a"),
      record("state", 1, "b"),
      record("jobs", 0, "c"),
      record("jobs", 2, "d"),
    ]);
    assert.deepEqual(offsets, [2, 0, 3, 0]);
    assert.deepEqual(log.logs.get("jobs\n0"), ["x", "y", "a", "c"]);
    assert.equal(log.requests.length, 2, "one send per call when every partition answers");
  });

  it("sends again, alone, the records of a partition the answer left out, and gives them the offsets they got then", async () => {
    // The first send's answer has jobs[1] missing: its records were never appended.
    const log = scriptedLog((round, topic, partition) =>
      round === 0 && topic === "jobs" && partition === 1
    );
    const offsets = await produceAcknowledged(log.send, [
      record("jobs", 1, "a"),
      record("state", 1, "b"),
      record("jobs", 1, "c"),
      record("jobs", 0, "d"),
    ]);
    assert.equal(log.requests.length, 2);
    assert.deepEqual(log.requests[1], [{
      topic: "jobs",
      messages: [{ key: "a", value: "a", partition: 1 }, { key: "c", value: "c", partition: 1 }],
    }]);
    assert.deepEqual(log.logs.get("jobs\n1"), ["a", "c"]);
    assert.deepEqual(offsets, [0, 0, 1, 0]);
  });

  it("fails naming the partitions still left out after the last send, rather than report offsets it was not given", async () => {
    const log = scriptedLog((_round, topic, partition) => topic === "jobs" && partition === 3);
    await assert.rejects(
      produceAcknowledged(log.send, [record("jobs", 3, "a"), record("state", 0, "b")], 3),
      { message: "Kafka acknowledged no offset for jobs[3] after 3 sends" },
    );
    assert.equal(log.requests.length, 3);
    assert.deepEqual(log.logs.get("state\n0"), ["b"], "what was acknowledged stays appended");
  });

  it("fails when a send fails, and sends no more", async () => {
    let sends = 0;
    const send = (): Promise<ProduceAck[]> => {
      sends++;
      return Promise.reject(new Error("There is no leader for this topic-partition"));
    };
    await assert.rejects(produceAcknowledged(send, [record("jobs", 0, "a")]), /no leader/);
    assert.equal(sends, 1);
  });
});
