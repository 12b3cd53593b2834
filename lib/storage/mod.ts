/**
 * Durable state for stores that live in memory: an append-only, checksummed
 * journal with group commits, snapshots, torn-tail recovery and damage
 * refused (with a check and a repair), and the state folder that holds
 * journals for one process; and the connections to the backends shared
 * beyond it (PostgreSQL, Redis, Kafka), each importing its client, an
 * optional peer dependency, only when called.
 * @module
 */
export { StorageError } from "./errors.ts";
export type { StorageErrorCode, StorageErrorOptions } from "./errors.ts";
export { Journal } from "./journal.ts";
export type { DroppedTail, JournalOptions, JournalReplay, LogHandle } from "./journal.ts";
export { checkJournal, checkStateDir, repairJournal, repairStateDir } from "./repair_journal.ts";
export type { JournalReport, RepairOptions } from "./repair_journal.ts";
export type { JournalDamage, TornTail } from "./_journal_scan.ts";
export { openStateDir } from "./state_dir.ts";
export type { StateDir, StateDirOptions } from "./state_dir.ts";
export type { ChangeSink } from "./journal_sink.ts";
export { STORAGE_SETTINGS } from "./settings.ts";
export type { StorageConfig } from "./settings.ts";
export { connectPostgres, isUnavailable } from "./postgres.ts";
export type {
  ConnectPostgresOptions,
  SqlClient,
  SqlNotificationHandlers,
  SqlPool,
  SqlResult,
} from "./postgres.ts";
export { migrate } from "./migrate.ts";
export { connectRedis } from "./redis.ts";
export type { ConnectRedisOptions, RedisScripts } from "./redis.ts";
export { connectKafka } from "./kafka.ts";
export type {
  ConnectKafkaOptions,
  KafkaConnection,
  KafkaTopicSpec,
  TopicDescription,
} from "./kafka.ts";
