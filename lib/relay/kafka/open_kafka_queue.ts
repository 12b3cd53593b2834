import { ConfigError } from "../../config/mod.ts";
import { uuidV4 } from "../../crypto/mod.ts";
import type { ReadinessProbe, ServiceLog } from "../../http/mod.ts";
import { OutageLog } from "../../log/mod.ts";
import { describeError } from "../describe_error.ts";
import { checkKafkaTopics } from "./check_kafka_topics.ts";
import { connectKafka, type KafkaConnection } from "../../storage/mod.ts";
import { KafkaConfigStore, kafkaConfigTopic } from "./kafka_config_store.ts";
import { KafkaQueue, kafkaTopics } from "./kafka_queue.ts";

/** Options of {@linkcode openKafkaQueue}. */
export interface OpenKafkaQueueOptions {
  /** Bootstrap brokers, `host:port`. */
  brokers: readonly string[];
  /** Prefix of the topics: `<prefix>.jobs`, `.retry`, `.dead`, `.state` and `.config`. */
  topicPrefix: string;
  /** Partitions of the topics created here. */
  partitions: number;
  /** The consumer group the relay processes share. */
  groupId: string;
  /** How long a silent process keeps its partitions, milliseconds. */
  sessionTimeoutMs: number;
  /** Jobs this process holds at most. */
  capacity: number;
  /** Random bytes, for this process's instance id. */
  random: (size: number) => Uint8Array;
  /** Where client errors are reported (the client reconnects by itself): a line when the brokers are lost, one when they are back. */
  log: ServiceLog;
  /**
   * Wall clock, milliseconds since the epoch (how long an outage lasted).
   * @default {Date.now}
   */
  now?: () => number;
  /**
   * Connects to Kafka: an app gives its backends' shared connections
   * (`Backends.kafka`), whose producer and admin client outlive the queue
   * (its consumer groups' members are its own all the same).
   * @default {connectKafka}: a connection of the queue's own, closed with it
   */
  connect?: typeof connectKafka;
}

// Past the longest any job's state is shown (dead letters, 7 days), with a day to spare.
const STATE_RETENTION_MS = 8 * 86_400_000;

/**
 * Connects to Kafka with the optional peer dependency `kafkajs`, creates the
 * relay's topics where the brokers allow it (else they must exist), and
 * joins the relay's consumer group.
 * @param options the brokers, topics, group and log
 * @returns the queue
 * @throws {ConfigError} naming KAFKA_BROKER when no broker answers, or KAFKA_TOPIC_PREFIX when the topics cannot be used
 * @example
 * ```ts
 * const queue = await openKafkaQueue({
 *   brokers: ["127.0.0.1:9092"], topicPrefix: "tributary", partitions: 8, groupId: "tributary-relay",
 *   sessionTimeoutMs: 30_000, capacity: 100_000, random: pooledRandom(), log: console,
 * });
 * ```
 */
export async function openKafkaQueue(options: OpenKafkaQueueOptions): Promise<KafkaQueue> {
  return (await openKafkaRelay(options)).queue;
}

/** The relay's queue and configuration on one Kafka connection. */
export interface KafkaRelayStores {
  /** Closing it closes the connection (or lets go of a shared one). */
  readonly queue: KafkaQueue;
  /** Close it before the queue. */
  readonly config: KafkaConfigStore;
  /**
   * The brokers' outages, each logged as two lines (lost, then back with the
   * failures counted): the client tells it of the failures it survives, the
   * probe of the brokers' answers, and the queue's users may tell it of theirs.
   */
  readonly outage: OutageLog;
  /** Asks the brokers for the configuration topic's metadata, for `/health/ready`; tells {@linkcode outage} too. */
  readonly probe: ReadinessProbe;
}

/**
 * Connects to Kafka as {@linkcode openKafkaQueue} does and opens, on the same
 * connection, the relay's queue and the store of its endpoints: the
 * compacted topic `<prefix>.config` (one partition), which every relay
 * process reads whole at start and follows.
 * @param options the brokers, topics, group and log
 * @returns the queue and the configuration store
 * @throws {ConfigError} naming KAFKA_BROKER when no broker answers, or KAFKA_TOPIC_PREFIX when the topics cannot be used
 */
export async function openKafkaRelay(options: OpenKafkaQueueOptions): Promise<KafkaRelayStores> {
  const where = options.brokers.join(",");
  const outage = new OutageLog(
    options.log,
    `Relay queue: Kafka at ${where}`,
    options.now ?? Date.now,
  );
  let log: KafkaConnection;
  try {
    log = await (options.connect ?? connectKafka)(options.brokers, {
      sessionTimeoutMs: options.sessionTimeoutMs,
      onError: (error) => outage.failed(error),
    });
  } catch (error) {
    throw new ConfigError(
      "KAFKA_BROKER",
      `Cannot start: cannot reach Kafka at ${where} (KAFKA_BROKER): ${describeError(error)}`,
    );
  }
  const topics = kafkaTopics(options.topicPrefix);
  const configTopic = kafkaConfigTopic(options.topicPrefix);
  const refused = await log.createTopics([
    { topic: topics.jobs, partitions: options.partitions },
    { topic: topics.retry, partitions: options.partitions },
    { topic: topics.dead, partitions: options.partitions },
    { topic: topics.state, partitions: options.partitions, compactRetentionMs: STATE_RETENTION_MS },
    { topic: configTopic, partitions: 1, compact: true },
  ]);
  // Every topic as the relay needs it, or a start refused naming the topic and the fix (a topic with too few
  // partitions made intake answer 503 for ever, with nothing said at start).
  const described = await log.describeTopics([
    topics.jobs,
    topics.retry,
    topics.dead,
    topics.state,
    configTopic,
  ]).catch(async (error: unknown) => {
    await log.close();
    throw new ConfigError(
      "KAFKA_BROKER",
      `Cannot start: cannot describe the Kafka topics at ${where}: ${describeError(error)}`,
    );
  });
  const problems = checkKafkaTopics(topics, configTopic, described.topics);
  if (problems.length > 0) {
    await log.close();
    const why = refused === undefined ? "" : ` (creating them was refused: ${refused})`;
    throw new ConfigError(
      "KAFKA_TOPIC_PREFIX",
      `Cannot start: the Kafka topics of KAFKA_TOPIC_PREFIX=${options.topicPrefix} are not as the relay needs them${why}: ${
        problems.join("; ")
      }`,
    );
  }
  if (described.unjudged !== undefined) {
    options.log.info(
      `Relay queue: the brokers at ${where} would not describe the topics' cleanup policies (${described.unjudged}); partition counts checked`,
    );
  }
  const instanceId = uuidV4(options.random);
  // Both at once: each joins a consumer group, which takes seconds.
  const [queue, config] = await Promise.allSettled([
    KafkaQueue.open(log, {
      topics,
      groupId: options.groupId,
      instanceId,
      capacity: options.capacity,
    }),
    KafkaConfigStore.open(log, {
      topic: configTopic,
      groupId: options.groupId,
      instanceId,
      onError: (error) =>
        options.log.error(`Relay endpoints: Kafka at ${where}: ${describeError(error)}`),
    }),
  ]);
  if (queue.status === "fulfilled" && config.status === "fulfilled") {
    const probe: ReadinessProbe = {
      part: `queue: Kafka at ${where}`,
      check: () =>
        outage.watch((async () => {
          if ((await log.partitions(configTopic)) === 0) {
            throw new Error(`the brokers know no topic ${configTopic}`);
          }
        })()),
    };
    return { queue: queue.value, config: config.value, outage, probe };
  }
  // Whichever opened is closed (the queue with the connection), so that nothing keeps the process alive.
  if (config.status === "fulfilled") await config.value.close().catch(() => {});
  if (queue.status === "fulfilled") await queue.value.close().catch(() => {});
  else await log.close();
  const error: unknown = queue.status === "rejected"
    ? queue.reason
    : (config as PromiseRejectedResult).reason;
  const why = refused === undefined ? "" : ` (creating them was refused: ${refused})`;
  throw new ConfigError(
    "KAFKA_TOPIC_PREFIX",
    `Cannot start: cannot use the Kafka topics ${
      [...Object.values(topics), configTopic].join(", ")
    }${why}: ${describeError(error)}`,
  );
}
