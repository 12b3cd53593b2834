/**
 * What the package's other domains use of storage and its users need not:
 * reached only from inside the package (package.json exports no `_`
 * module), so it can change without a change to the public surface.
 * @module
 */
export { Batcher } from "./batcher.ts";
export { openJournaledStore } from "./journal_sink.ts";
export type {
  KafkaBatch,
  KafkaLog,
  KafkaRecordIn,
  KafkaRecordOut,
  KafkaSubscribeOptions,
  KafkaSubscription,
} from "./kafka_log.ts";
export { shareRedis } from "./redis.ts";
export type { SharedRedis } from "./redis.ts";
export { shareKafka } from "./kafka.ts";
export type { SharedKafka } from "./kafka.ts";
