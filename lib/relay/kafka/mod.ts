/**
 * The relay's queue on Kafka: jobs keyed and partitioned by tenant, retry and
 * dead-letter topics, offsets committed only once a job is handled, and a
 * compacted state topic every process reads. Needs the optional peer
 * dependency `kafkajs`, imported only when a queue is opened.
 * @module
 */
export { openKafkaQueue } from "./open_kafka_queue.ts";
export type { OpenKafkaQueueOptions } from "./open_kafka_queue.ts";
export { KafkaQueue, kafkaTopics } from "./kafka_queue.ts";
export type { KafkaQueueOptions, KafkaTopics } from "./kafka_queue.ts";
export { connectKafka } from "./kafka_client.ts";
export type { ConnectKafkaOptions, KafkaTopicSpec } from "./kafka_client.ts";
