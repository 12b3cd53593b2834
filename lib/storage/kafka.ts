import { mendKafkajsFetchManager } from "./_kafkajs_fetch_fix.ts";
import { setTimeout as sleep } from "node:timers/promises";
import type { Consumer } from "kafkajs";
import { SharedConnections } from "./_shared_connections.ts";
import type {
  KafkaLog,
  KafkaRecordOut,
  KafkaSubscribeOptions,
  KafkaSubscription,
} from "./kafka_log.ts";

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

/** A topic as the brokers describe it. */
export interface TopicDescription {
  /** Its partitions; 0 when the brokers know no such topic. */
  readonly partitions: number;
  /** Its `cleanup.policy` (`delete`, `compact` or `compact,delete`); undefined when the brokers would not say. */
  readonly cleanupPolicy: string | undefined;
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
  /**
   * Keep the latest record per key and never drop it by time
   * (`cleanup.policy=compact` only): the configuration topic. Ignored when
   * `compactRetentionMs` is given.
   */
  readonly compact?: boolean;
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
export async function connectKafka(
  brokers: readonly string[],
  options: ConnectKafkaOptions = {},
): Promise<KafkaConnection> {
  let kafkajs: typeof import("kafkajs");
  try {
    mendKafkajsFetchManager();
    kafkajs = await import("kafkajs");
  } catch {
    throw new Error("the kafkajs package is not installed (npm install kafkajs)");
  }
  const { ConfigResourceTypes, Kafka, logLevel, Partitioners } = kafkajs;
  const onError = options.onError ?? (() => {});
  const settings = {
    clientId: options.clientId ?? "tributary",
    brokers: [...brokers],
    connectionTimeout: options.connectTimeoutMs ?? 5000,
    logLevel: logLevel.NOTHING,
  };
  // Producer and consumers ride out a broker's absence (each wait at most 2 s)...
  const kafka = new Kafka({
    ...settings,
    retry: { initialRetryTime: 100, maxRetryTime: 2000, retries: 30 },
  });
  // ...while the admin client, used at start-up, retries little: no broker at the address fails in seconds.
  const admin = new Kafka({ ...settings, retry: { initialRetryTime: 100, retries: 2 } }).admin();
  const producer = kafka.producer({
    createPartitioner: Partitioners.DefaultPartitioner,
    allowAutoTopicCreation: false,
  });
  await admin.connect();
  await producer.connect();
  const consumers: { disconnect(): Promise<void> }[] = [];
  return {
    produce(records) {
      let expired = false;
      const send = (topicMessages: ProduceRequest): Promise<ProduceAck[]> => {
        // Given up on (the time ran out): no more rounds behind the caller's back.
        if (expired) return Promise.reject(new Error("Kafka did not acknowledge in time"));
        return producer.sendBatch({ acks: -1, topicMessages });
      };
      const timeoutMs = options.produceTimeoutMs ?? 5000;
      return within(timeoutMs, produceAcknowledged(send, records), "acknowledge").finally(
        () => (expired = true),
      );
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
          subscription.onAssign(
            new Map<string, number[]>(Object.entries(event.payload.memberAssignment)),
          );
          joined();
        });
        consumer.on(consumer.events.CRASH, (event) => {
          onError(event.payload.error);
          // kafkajs restarts a consumer after most crashes; after the others it gives up, and a new one takes its place.
          if (!event.payload.restart && consumer === current && !closed) void replace(consumer);
        });
        await consumer.connect();
        await consumer.subscribe({
          topics: [...subscription.topics],
          fromBeginning: subscription.fromBeginning,
        });
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
        // Once only: splice(-1, 1) would drop another subscription's consumer from those `close` leaves.
        const at = consumers.indexOf(dead);
        if (at >= 0) consumers.splice(at, 1);
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
      // A consumer crashed (or still connecting) has no group to pause: it throws, and `start` applies `paused` to the next.
      const tell = (change: () => void): void => {
        try {
          change();
        } catch {
          // The next consumer starts with `paused` as it is now.
        }
      };
      await start();
      await first;
      return {
        pause: (topic, partition) => {
          paused.add(`${topic}\n${partition}`);
          tell(() => current?.pause([{ topic, partitions: [partition] }]));
        },
        resume: (topic, partition) => {
          paused.delete(`${topic}\n${partition}`);
          tell(() => current?.resume([{ topic, partitions: [partition] }]));
        },
        commit: (offsets) =>
          within(
            5000,
            current!.commitOffsets(
              offsets.map(({ topic, partition, offset }) => ({
                topic,
                partition,
                offset: String(offset),
              })),
            ),
            "commit",
          ),
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
      // kafkajs (2.2) fails this now and then while brokers are busy (an offsets answer comes back empty): a few more tries.
      for (let attempt = 1;; attempt++) {
        try {
          const offsets = await admin.fetchTopicOffsets(topic);
          return new Map(offsets.map((entry) => [entry.partition, Number(entry.high)]));
        } catch (error) {
          if (attempt === 5) throw error;
          onError(error);
          await sleep(100 * attempt);
        }
      }
    },
    async createTopics(topics) {
      try {
        await admin.createTopics({
          waitForLeaders: true,
          topics: topics.map((spec) => ({
            topic: spec.topic,
            numPartitions: spec.partitions,
            configEntries: topicConfig(spec),
          })),
        });
        return undefined;
      } catch (error) {
        // Some brokers (and test brokers) refuse the admin call; topics made beforehand serve as well.
        return (error as Error).message;
      }
    },
    async describeTopics(topics) {
      const found = new Map<string, TopicDescription>();
      for (const topic of topics) {
        // A topic the brokers do not know fails its metadata request: it has no partitions.
        const partitions = await admin.fetchTopicMetadata({ topics: [topic] }).then(
          (metadata) => metadata.topics[0]?.partitions.length ?? 0,
          () => 0,
        );
        found.set(topic, { partitions, cleanupPolicy: undefined });
      }
      let unjudged: string | undefined;
      try {
        const described = await admin.describeConfigs({
          includeSynonyms: false,
          resources: topics.filter((topic) => found.get(topic)!.partitions > 0).map((name) => ({
            type: ConfigResourceTypes.TOPIC,
            name,
            configNames: ["cleanup.policy"],
          })),
        });
        for (const resource of described.resources) {
          const policy = resource.configEntries.find((entry) =>
            entry.configName === "cleanup.policy"
          )?.configValue;
          const known = found.get(resource.resourceName);
          if (known !== undefined && resource.errorCode === 0 && typeof policy === "string") {
            found.set(resource.resourceName, { ...known, cleanupPolicy: policy });
          }
        }
      } catch (error) {
        // Some brokers (librdkafka's mock among them) do not answer DescribeConfigs.
        unjudged = (error as Error).message;
      }
      return { topics: found, unjudged };
    },
    async close() {
      await Promise.allSettled(
        consumers.map((consumer) =>
          within(3000, consumer.disconnect(), "leave the consumer group")
        ),
      );
      await Promise.allSettled([
        within(3000, producer.disconnect(), "disconnect"),
        within(3000, admin.disconnect(), "disconnect"),
      ]);
    },
  };
}

/** Kafka connections shared by whoever asks for one: what {@linkcode shareKafka} gives. */
export interface SharedKafka {
  /**
   * A connection as {@linkcode connectKafka} gives one, on the one
   * connection of its brokers and settings, opened when first asked for:
   * its `onError` hears of that connection, its subscriptions are its own,
   * and its `close` leaves them and stops telling it, leaving the
   * connection open for the others.
   */
  readonly connect: typeof connectKafka;
  /** Closes every connection opened; a later `connect` opens anew. */
  close(): Promise<void>;
}

/**
 * Kafka connections opened once per broker list (and settings) and shared:
 * the producer and the admin client are the connection's, one for every
 * caller. A subscription stays its caller's own, as a consumer group's
 * member must be: each `subscribe` makes a consumer of its own (its own
 * connections to the brokers, its group's heartbeats), left at the
 * subscription's close or the caller's, whichever comes first.
 * @param connect opens a connection
 * @returns the shared connections, none opened yet
 */
export function shareKafka(connect: typeof connectKafka = connectKafka): SharedKafka {
  const shared = new SharedConnections<KafkaConnection>();
  return {
    async connect(brokers, options = {}) {
      const { onError, ...settings } = options;
      const key = JSON.stringify([
        brokers,
        settings.clientId,
        settings.connectTimeoutMs,
        settings.produceTimeoutMs,
        settings.sessionTimeoutMs,
      ]);
      const lease = await shared.lease(
        key,
        (hooks) => connect(brokers, { ...settings, onError: hooks.onError }),
        { onError },
      );
      const kafka = lease.connection;
      const subscriptions = new Set<KafkaSubscription>();
      return {
        produce: (records) => kafka.produce(records),
        async subscribe(subscription) {
          const joined = await kafka.subscribe(subscription);
          const mine: KafkaSubscription = {
            pause: (topic, partition) => joined.pause(topic, partition),
            resume: (topic, partition) => joined.resume(topic, partition),
            commit: (offsets) => joined.commit(offsets),
            close: () => {
              subscriptions.delete(mine);
              return joined.close();
            },
          };
          subscriptions.add(mine);
          return mine;
        },
        partitions: (topic) => kafka.partitions(topic),
        ends: (topic) => kafka.ends(topic),
        createTopics: (topics) => kafka.createTopics(topics),
        describeTopics: (topics) => kafka.describeTopics(topics),
        async close() {
          await Promise.allSettled([...subscriptions].map((subscription) => subscription.close()));
          lease.release();
        },
      };
    },
    close: () => shared.close(),
  };
}

/** What {@linkcode connectKafka} gives: the queue's view of Kafka, and the admin calls of start-up. */
export interface KafkaConnection extends KafkaLog {
  /**
   * Creates topics where the brokers allow it.
   * @returns why the brokers refused, or undefined
   */
  createTopics(topics: readonly KafkaTopicSpec[]): Promise<string | undefined>;
  /**
   * Describes topics: partitions (0 for an unknown topic) and cleanup policy.
   * @returns the descriptions, and why the policies are unknown when the brokers would not describe them
   */
  describeTopics(
    topics: readonly string[],
  ): Promise<{ topics: Map<string, TopicDescription>; unjudged: string | undefined }>;
}

/**
 * The configuration entries a topic is created with.
 * @param spec the topic
 * @returns `cleanup.policy` (and `retention.ms`) as the spec asks, or none
 */
export function topicConfig(spec: KafkaTopicSpec): { name: string; value: string }[] {
  if (spec.compactRetentionMs !== undefined) {
    return [{ name: "cleanup.policy", value: "compact,delete" }, {
      name: "retention.ms",
      value: String(spec.compactRetentionMs),
    }];
  }
  return spec.compact === true ? [{ name: "cleanup.policy", value: "compact" }] : [];
}

/** Records to append, by topic, as `kafkajs` takes them. */
export type ProduceRequest = {
  topic: string;
  messages: { key: string; value: string | null; partition: number }[];
}[];

/** One partition's acknowledgement, as `kafkajs` gives it. */
export interface ProduceAck {
  readonly topicName: string;
  readonly partition: number;
  readonly baseOffset?: string;
}

/**
 * Appends records with `send` until every partition has acknowledged them,
 * and returns each record's offset. `kafkajs` (2.2) can resolve a send with
 * some partitions missing from its answer, their records never appended:
 * when a broker fails mid-request and its partitions move to a broker that
 * already answered, its retry skips them. Here a partition missing from the
 * answer is sent again (a record may then be appended twice; the queue reads
 * a job once), for at most `rounds` sends in all.
 * @param send appends, resolving with the partitions' acknowledgements
 * @param records the records, in order
 * @param rounds sends at most
 * @returns each record's offset, in order
 * @throws {Error} naming the partitions still unacknowledged after `rounds` sends
 */
export async function produceAcknowledged(
  send: (request: ProduceRequest) => Promise<readonly ProduceAck[]>,
  records: readonly KafkaRecordOut[],
  rounds = 5,
): Promise<number[]> {
  const offsets: number[] = new Array<number>(records.length).fill(-1);
  let pending = records.map((record, index) => ({ record, index }));
  for (let round = 0; pending.length > 0; round++) {
    if (round === rounds) {
      const partitions = [
        ...new Set(pending.map(({ record }) => `${record.topic}[${record.partition}]`)),
      ];
      throw new Error(
        `Kafka acknowledged no offset for ${partitions.join(", ")} after ${rounds} sends`,
      );
    }
    const byTopic = new Map<string, { key: string; value: string | null; partition: number }[]>();
    for (const { record } of pending) {
      let messages = byTopic.get(record.topic);
      if (messages === undefined) byTopic.set(record.topic, messages = []);
      messages.push({ key: record.key, value: record.value, partition: record.partition });
    }
    const acks = await send([...byTopic].map(([topic, messages]) => ({ topic, messages })));
    // Each partition's records were appended together, from its base offset, in the order given.
    const base = new Map<string, number>();
    for (const ack of acks) {
      if (ack.baseOffset !== undefined) {
        base.set(`${ack.topicName}\n${ack.partition}`, Number(ack.baseOffset));
      }
    }
    const next = new Map<string, number>();
    const missing: typeof pending = [];
    for (const item of pending) {
      const key = `${item.record.topic}\n${item.record.partition}`;
      const from = base.get(key);
      if (from === undefined) {
        missing.push(item);
        continue;
      }
      const index = next.get(key) ?? 0;
      next.set(key, index + 1);
      offsets[item.index] = from + index;
    }
    pending = missing;
  }
  return offsets;
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
