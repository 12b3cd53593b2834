// The relay's Kafka topics checked at start: partition counts and cleanup
// policies as the relay needs them, or a start refused naming the topic and
// the fix (a .state topic with fewer partitions than .jobs made every intake
// answer 503 for ever, with nothing said at start).
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { ConfigError } from "../../lib/config/mod.ts";
import {
  checkKafkaTopics,
  connectKafka,
  openKafkaRelay,
  type TopicDescription,
} from "../../lib/relay/kafka/mod.ts";
import { kafkaConfigTopic } from "../../lib/relay/kafka/kafka_config_store.ts";
import { kafkaTopics } from "../../lib/relay/kafka/kafka_queue.ts";
import { kafkaSkip, startKafka, type TestKafka } from "../_helpers/kafka.ts";

const TOPICS = kafkaTopics("t");
const CONFIG = kafkaConfigTopic("t");

function described(
  overrides: Record<string, Partial<TopicDescription>> = {},
): Map<string, TopicDescription> {
  const base: Record<string, TopicDescription> = {
    [TOPICS.jobs]: { partitions: 8, cleanupPolicy: "delete" },
    [TOPICS.retry]: { partitions: 8, cleanupPolicy: "delete" },
    [TOPICS.dead]: { partitions: 8, cleanupPolicy: "delete" },
    [TOPICS.state]: { partitions: 8, cleanupPolicy: "compact,delete" },
    [CONFIG]: { partitions: 1, cleanupPolicy: "compact" },
  };
  return new Map(
    Object.entries(base).map((
      [topic, description],
    ) => [topic, { ...description, ...overrides[topic] }]),
  );
}

describe("checkKafkaTopics()", () => {
  const cases = [
    { name: "accepts the topics as the relay creates them", overrides: {}, expected: [] },
    {
      name: "does not judge policies the brokers would not describe",
      overrides: {
        [TOPICS.jobs]: { cleanupPolicy: undefined },
        [CONFIG]: { cleanupPolicy: undefined },
      },
      expected: [],
    },
    {
      name: "refuses a .state with fewer partitions than .jobs, saying to add them",
      overrides: { [TOPICS.state]: { partitions: 4 } },
      expected: [
        /^t\.state has 4 partitions but t\.jobs has 8: .*kafka-topics\.sh --alter --topic t\.state --partitions 8/,
      ],
    },
    {
      name: "refuses a .retry with more partitions than .jobs",
      overrides: { [TOPICS.retry]: { partitions: 12 } },
      expected: [/^t\.retry has 12 partitions but t\.jobs has 8: .*recreate it with 8 partitions/],
    },
    {
      name: "refuses a .dead with another partition count",
      overrides: { [TOPICS.dead]: { partitions: 1 } },
      expected: [/^t\.dead has 1 partitions/],
    },
    {
      name: "refuses a missing topic",
      overrides: { [TOPICS.dead]: { partitions: 0 } },
      expected: [/^t\.dead does not exist/],
    },
    {
      name: "refuses a .config of several partitions",
      overrides: { [CONFIG]: { partitions: 3 } },
      expected: [/^t\.config has 3 partitions; it needs exactly 1/],
    },
    {
      name: "refuses a compacted .jobs: compaction keeps a tenant's last job only",
      overrides: { [TOPICS.jobs]: { cleanupPolicy: "compact" } },
      expected: [/^t\.jobs is compacted .*cleanup\.policy=delete/],
    },
    {
      name: "refuses a .state that is not compacted",
      overrides: { [TOPICS.state]: { cleanupPolicy: "delete" } },
      expected: [/^t\.state is not compacted/],
    },
    {
      name: "refuses a .config deleted by time",
      overrides: { [CONFIG]: { cleanupPolicy: "compact,delete" } },
      expected: [/^t\.config must be compacted and never deleted by time/],
    },
  ] as const;
  for (const c of cases) {
    it(c.name, () => {
      const problems = checkKafkaTopics(
        TOPICS,
        CONFIG,
        described(c.overrides as Record<string, Partial<TopicDescription>>),
      );
      assert.equal(problems.length, c.expected.length, problems.join("\n"));
      c.expected.forEach((pattern, i) => assert.match(problems[i]!, pattern));
    });
  }
});

describe("openKafkaRelay() on topics made beforehand", { skip: kafkaSkip }, () => {
  let kafka: TestKafka;
  before(async () => {
    kafka = await startKafka({
      "short.jobs": 8,
      "short.retry": 8,
      "short.dead": 8,
      "short.state": 4,
      "short.config": 1,
    });
  });
  after(() => kafka.stop());

  it("refuses to start when .state has fewer partitions than .jobs, naming the topic and the fix", async () => {
    const log = { info: () => {}, error: () => {} };
    await assert.rejects(
      openKafkaRelay({
        brokers: kafka.brokers,
        topicPrefix: "short",
        partitions: 8,
        groupId: "short-relay",
        sessionTimeoutMs: 6000,
        capacity: 100,
        random: (n) => new Uint8Array(n),
        log,
      }),
      (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        assert.equal(error.variable, "KAFKA_TOPIC_PREFIX");
        assert.match(
          error.message,
          /short\.state has 4 partitions but short\.jobs has 8: .*--alter --topic short\.state --partitions 8/,
        );
        return true;
      },
    );
  });

  // (A topic the brokers do not know counts 0 partitions; librdkafka's mock creates any topic asked about, so that is checked above only.)
  it("describes the topics' partitions as the brokers hold them", async () => {
    const connection = await connectKafka(kafka.brokers);
    try {
      const { topics } = await connection.describeTopics([
        "short.jobs",
        "short.state",
        "short.config",
      ]);
      assert.deepEqual([...topics].map(([topic, description]) => [topic, description.partitions]), [
        ["short.jobs", 8],
        ["short.state", 4],
        ["short.config", 1],
      ]);
    } finally {
      await connection.close();
    }
  });
});
