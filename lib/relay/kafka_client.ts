import { setTimeout as sleep } from "node:timers/promises";
import type { Consumer } from "kafkajs";
import type { KafkaLog, KafkaSubscribeOptions, KafkaSubscription } from "./kafka_queue.ts";

/** Options of {@linkcode connectKafka}. */
export interface ConnectKafkaOptions {
  /** @default {"tributary"} */
  readonly clientId?: string;
  /** Told of errors the client survives (a broker away, a rebalance). */
  readonly onError?: (error: unknown) => void;
  /**
   * How long the first connection may take, milliseconds.
   * @default {5000}
   */
  readonly connectTimeoutMs?: number;
  /**
   * How long an append may wait for the brokers' acknowledgement,
   * milliseconds, before it fails (intake answers 503 rather than hang while
   * Kafka is away; the client keeps retrying it behind).
   * @default {5000}
   */
  readonly produceTimeoutMs?: number;
  /**
   * A consumer that sends no heartbeat for this long leaves the group and
   * its partitions go to the others, milliseconds.
   * @default {30000}
   */
  readonly sessionTimeoutMs?: number;
}

/** Topics to create at start-up, where the broker allows it. */
export interface KafkaTopicSpec {
  readonly topic: string;
  readonly partitions: number;
  /**
   * Keep the latest record per key (the state topic), and drop records
   * older than this many milliseconds, so the topic does not grow for ever.
   */
  readonly compactRetentionMs?: number;
}

/**
 * Connects to Kafka with `kafkajs`, an optional peer dependency imported
 * only here: one producer (`acks: -1`, retrying through a broker's absence)
 * and consumers as the queue subscribes.
 * @param brokers bootstrap addresses, `host:port` each
 * @param options client id, error hook and timeouts
 * @returns the connection, as {@linkcode KafkaLog}
 * @throws {Error} when `kafkajs` is missing or no broker answers
 */
export async function connectKafka(brokers: readonly string[], options: ConnectKafkaOptions = {}): Promise<KafkaLog & { createTopics(topics: readonly KafkaTopicSpec[]): Promise<string | undefined> }> {
  let kafkajs: typeof import("kafkajs");
  try {
    kafkajs = await import("kafkajs");
  } catch {
    throw new Error("the kafkajs package is not installed (npm install kafkajs)");
  }
  const { Kafka, logLevel, Partitioners } = kafkajs;
  const onError = options.onError ?? (() => {});
  const settings = {
    clientId: options.clientId ?? "tributary",
    brokers: [...brokers],
    connectionTimeout: options.connectTimeoutMs ?? 5000,
    logLevel: logLevel.NOTHING,
  };
  // Producer and consumers ride out a broker's absence (each wait at most 2 s)...
  const kafka = new Kafka({ ...settings, retry: { initialRetryTime: 100, maxRetryTime: 2000, retries: 30 } });
  // ...while the admin client, used at start-up, retries little: no broker at the address fails in seconds.
  const admin = new Kafka({ ...settings, retry: { initialRetryTime: 100, retries: 2 } }).admin();
  const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner, allowAutoTopicCreation: false });
  await admin.connect();
  await producer.connect();
  const consumers: { disconnect(): Promise<void> }[] = [];
  return {
    async produce(records) {
      const byTopic = new Map<string, { key: string; value: string | null; partition: number }[]>();
      const placeOf: { topic: string; partition: number; index: number }[] = [];
      const perPartition = new Map<string, number>();
      for (const record of records) {
        const list = byTopic.get(record.topic) ?? [];
        byTopic.set(record.topic, list);
        list.push({ key: record.key, value: record.value, partition: record.partition });
        const key = `${record.topic}\n${record.partition}`;
        const index = perPartition.get(key) ?? 0;
        perPartition.set(key, index + 1);
        placeOf.push({ topic: record.topic, partition: record.partition, index });
      }
      const timeoutMs = options.produceTimeoutMs ?? 5000;
      const sent = await within(
        timeoutMs,
        producer.sendBatch({ acks: -1, topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })) }),
        "acknowledge",
      );
      // Each partition's records were appended together, from its base offset, in the order given.
      const base = new Map<string, number>();
      for (const result of sent) base.set(`${result.topicName}\n${result.partition}`, Number(result.baseOffset));
      return placeOf.map((place) => (base.get(`${place.topic}\n${place.partition}`) ?? 0) + place.index);
    },
    async subscribe(subscription: KafkaSubscribeOptions): Promise<KafkaSubscription> {
      let closed = false;
      let current: Consumer | undefined;
      const paused = new Set<string>();
      let joined: () => void = () => {};
      const first = new Promise<void>((resolve) => (joined = resolve));
      const start = async (): Promise<void> => {
        const consumer = kafka.consumer({
          groupId: subscription.groupId,
          sessionTimeout: options.sessionTimeoutMs ?? 30_000,
          heartbeatInterval: Math.min(3000, Math.floor((options.sessionTimeoutMs ?? 30_000) / 3)),
          // A fetch comes back soon when there is nothing, so new records are read within 100 ms.
          maxWaitTimeInMs: 100,
          retry: { initialRetryTime: 100, maxRetryTime: 2000, retries: 30 },
        });
        current = consumer;
        consumers.push(consumer);
        consumer.on(consumer.events.GROUP_JOIN, (event) => {
          if (consumer !== current) return;
          subscription.onAssign(new Map<string, number[]>(Object.entries(event.payload.memberAssignment)));
          joined();
        });
        consumer.on(consumer.events.CRASH, (event) => {
          onError(event.payload.error);
          // kafkajs restarts a consumer after most crashes; after the others it gives up, and a new one takes its place.
          if (!event.payload.restart && consumer === current && !closed) void replace(consumer);
        });
        await consumer.connect();
        await consumer.subscribe({ topics: [...subscription.topics], fromBeginning: subscription.fromBeginning });
        await consumer.run({
          autoCommit: false,
          eachBatchAutoResolve: true,
          partitionsConsumedConcurrently: 8,
          eachBatch: async ({ batch }) => {
            subscription.onBatch({
              topic: batch.topic,
              partition: batch.partition,
              records: batch.messages.map((message) => ({
                offset: Number(message.offset),
                key: message.key === null ? null : message.key.toString(),
                value: message.value === null ? null : message.value.toString(),
              })),
            });
          },
        });
        for (const key of paused) {
          const [topic, partition] = key.split("\n") as [string, string];
          consumer.pause([{ topic, partitions: [Number(partition)] }]);
        }
      };
      const replace = async (dead: Consumer): Promise<void> => {
        consumers.splice(consumers.indexOf(dead), 1);
        await within(3000, dead.disconnect(), "leave the consumer group").catch(() => {});
        for (let attempt = 0; !closed; attempt++) {
          await sleep(Math.min(5000, 500 * 2 ** Math.min(attempt, 4)));
          if (closed) return;
          try {
            await start();
            return;
          } catch (error) {
            onError(error);
          }
        }
      };
      await start();
      await first;
      return {
        pause: (topic, partition) => {
          paused.add(`${topic}\n${partition}`);
          current?.pause([{ topic, partitions: [partition] }]);
        },
        resume: (topic, partition) => {
          paused.delete(`${topic}\n${partition}`);
          current?.resume([{ topic, partitions: [partition] }]);
        },
        commit: (offsets) =>
          within(5000, current!.commitOffsets(offsets.map(({ topic, partition, offset }) => ({ topic, partition, offset: String(offset) }))), "commit"),
        // Leaving the group tells the others to take the partitions now rather than after the session times out; not for ever.
        close: () => {
          closed = true;
          return within(3000, current!.disconnect(), "leave the consumer group").catch(onError);
        },
      };
    },
    async partitions(topic) {
      const metadata = await admin.fetchTopicMetadata({ topics: [topic] });
      return metadata.topics[0]?.partitions.length ?? 0;
    },
    async ends(topic) {
      const offsets = await admin.fetchTopicOffsets(topic);
      return new Map(offsets.map((entry) => [entry.partition, Number(entry.high)]));
    },
    async createTopics(topics) {
      try {
        await admin.createTopics({
          waitForLeaders: true,
          topics: topics.map((spec) => ({
            topic: spec.topic,
            numPartitions: spec.partitions,
            configEntries: spec.compactRetentionMs === undefined
              ? []
              : [{ name: "cleanup.policy", value: "compact,delete" }, { name: "retention.ms", value: String(spec.compactRetentionMs) }],
          })),
        });
        return undefined;
      } catch (error) {
        // Some brokers (and test brokers) refuse the admin call; topics made beforehand serve as well.
        return (error as Error).message;
      }
    },
    async close() {
      await Promise.allSettled(consumers.map((consumer) => within(3000, consumer.disconnect(), "leave the consumer group")));
      await Promise.allSettled([within(3000, producer.disconnect(), "disconnect"), within(3000, admin.disconnect(), "disconnect")]);
    },
  };
}

/**
 * Waits for `promise`, at most `ms` milliseconds.
 * @throws {Error} naming `what` when the time runs out
 */
function within<T>(ms: number, promise: Promise<T>, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  // Given up on here, it may still fail later: that is no one's to hear.
  promise.catch(() => {});
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`Kafka did not ${what} within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}
