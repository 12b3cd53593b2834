/**
 * The relay's queue on Kafka: jobs keyed and partitioned by tenant, retry and
 * dead-letter topics, offsets committed only once a job is handled, and a
 * compacted state topic every process reads; and the relay's configuration
 * on a compacted topic of one partition every process reads whole. Needs the
 * optional peer dependency `kafkajs`, imported only when a queue is opened.
 * @module
 */
export { openKafkaQueue, openKafkaRelay } from "./open_kafka_queue.ts";
export type { KafkaRelayStores, OpenKafkaQueueOptions } from "./open_kafka_queue.ts";
export { KafkaQueue } from "./kafka_queue.ts";
export type { KafkaQueueOptions, KafkaTopics } from "./kafka_queue.ts";
export { KafkaConfigStore } from "./kafka_config_store.ts";
export type { KafkaConfigStoreOptions } from "./kafka_config_store.ts";
export { checkKafkaTopics } from "./check_kafka_topics.ts";
// The connection lives with the other backends in storage; exported here as before.
export { connectKafka } from "../../storage/mod.ts";
export type {
  ConnectKafkaOptions,
  KafkaConnection,
  KafkaTopicSpec,
  TopicDescription,
} from "../../storage/mod.ts";
