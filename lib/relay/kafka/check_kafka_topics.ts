import type { TopicDescription } from "../../storage/mod.ts";
import type { KafkaTopics } from "./kafka_queue.ts";

/**
 * What is wrong with the relay's topics, each problem in one line naming
 * the topic and the fix; empty when they are as the relay needs them:
 * - `.jobs`, `.retry`, `.dead` and `.state` with one partition count (a
 *   tenant's jobs and their state records go to the partition its name
 *   hashes to, in each), and `.config` with exactly one (its offsets order
 *   every change);
 * - `.jobs`, `.retry` and `.dead` deleting by time, never compacted (their
 *   records are keyed by tenant: compaction would keep a tenant's last job
 *   only); `.state` compacted (the latest state of each job); `.config`
 *   compacted and never deleted by time (an endpoint would vanish).
 * A policy the brokers would not describe is not judged.
 * @param topics the queue's topic names
 * @param configTopic the configuration topic's name
 * @param found each topic as the brokers describe it
 * @returns the problems
 */
export function checkKafkaTopics(
  topics: KafkaTopics,
  configTopic: string,
  found: ReadonlyMap<string, TopicDescription>,
): string[] {
  const problems: string[] = [];
  const describe = (topic: string): TopicDescription =>
    found.get(topic) ?? { partitions: 0, cleanupPolicy: undefined };
  const all = [topics.jobs, topics.retry, topics.dead, topics.state, configTopic];
  for (const topic of all) {
    if (describe(topic).partitions === 0) {
      problems.push(
        `${topic} does not exist: create it (the relay creates its topics where the brokers allow it)`,
      );
    }
  }
  const jobs = describe(topics.jobs).partitions;
  if (jobs > 0) {
    for (const topic of [topics.retry, topics.dead, topics.state]) {
      const count = describe(topic).partitions;
      if (count > 0 && count !== jobs) {
        const fix = count < jobs
          ? `add partitions (kafka-topics.sh --alter --topic ${topic} --partitions ${jobs})`
          : `recreate it with ${jobs} partitions, or give ${topics.jobs} ${count}`;
        problems.push(
          `${topic} has ${count} partitions but ${topics.jobs} has ${jobs}: a tenant's records go to the same partition in each, so they need as many: ${fix}`,
        );
      }
    }
  }
  const config = describe(configTopic).partitions;
  if (config > 1) {
    problems.push(
      `${configTopic} has ${config} partitions; it needs exactly 1, whose offsets order every change: recreate it with 1 partition and cleanup.policy=compact`,
    );
  }
  const policies = (topic: string): string[] | undefined =>
    describe(topic).cleanupPolicy?.split(",").map((policy) => policy.trim());
  for (const topic of [topics.jobs, topics.retry, topics.dead]) {
    if (policies(topic)?.includes("compact") === true) {
      problems.push(
        `${topic} is compacted (cleanup.policy=${
          describe(topic).cleanupPolicy
        }): its records are keyed by tenant, and compaction would keep each tenant's last job only: set cleanup.policy=delete (kafka-configs.sh --alter --entity-type topics --entity-name ${topic} --add-config cleanup.policy=delete)`,
      );
    }
  }
  if (
    policies(topics.state) !== undefined && policies(topics.state)!.includes("compact") === false
  ) {
    problems.push(
      `${topics.state} is not compacted (cleanup.policy=${
        describe(topics.state).cleanupPolicy
      }): it holds each job's latest state by key: set cleanup.policy=compact,delete`,
    );
  }
  const configPolicy = policies(configTopic);
  if (
    configPolicy !== undefined &&
    (configPolicy.includes("delete") || !configPolicy.includes("compact"))
  ) {
    problems.push(
      `${configTopic} must be compacted and never deleted by time (cleanup.policy=${
        describe(configTopic).cleanupPolicy
      }), or endpoints vanish: set cleanup.policy=compact`,
    );
  }
  return problems;
}
