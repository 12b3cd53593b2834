import type { ConfigPut, ConfigRecord, ConfigStore } from "../config_store.ts";
import { RelayError } from "../errors.ts";
import type { KafkaBatch, KafkaLog, KafkaSubscription } from "../../storage/_internal.ts";

/** The only partition of the configuration topic: its offsets order every key's changes. */
const PARTITION = 0;

/**
 * The configuration topic's name for a prefix.
 * @param prefix e.g. `tributary`
 * @returns `<prefix>.config`
 */
export function kafkaConfigTopic(prefix: string): string {
  return `${prefix}.config`;
}

/** Options of {@linkcode KafkaConfigStore.open}. */
export interface KafkaConfigStoreOptions {
  /**
   * The configuration topic: one partition, compacted and never deleted by
   * time (see {@linkcode kafkaConfigTopic} and `KafkaTopicSpec.compact`).
   */
  readonly topic: string;
  /** The consumer group the relay processes share; this store reads in `<groupId>.config.<instanceId>`. */
  readonly groupId: string;
  /** Distinguishes this process's reader from the others': each reads the whole topic. */
  readonly instanceId: string;
  /**
   * Told when a listener throws (the others are told all the same, and reading goes on).
   * @default nothing
   */
  readonly onError?: (error: unknown) => void;
}

/** A listener of {@linkcode KafkaConfigStore.watch} and the offsets it is not told of. */
interface Watcher {
  readonly listener: (record: ConfigRecord) => void;
  /** This process's own writes, applied before the watch began and not read back yet: `load` gave them already. */
  readonly skip: Set<number>;
}

/**
 * The relay's configuration on Kafka: a compacted topic of one partition
 * that every relay process reads whole, in a consumer group of its own. A
 * record's key is the configuration key, its value the value, and its
 * revision the offset plus one, so revisions are one order over every key
 * and every process applies the changes in that order. A log cannot compare,
 * so `put` appends whatever it is given and the last record of a key in the
 * log wins; compaction keeps that one only.
 * @example
 * ```ts
 * const log = await connectKafka(["127.0.0.1:9092"]);
 * const store = await KafkaConfigStore.open(log, { topic: kafkaConfigTopic("tributary"), groupId: "tributary-relay", instanceId: crypto.randomUUID() });
 * await store.put("acme/orders", '{"url":"https://hooks.acme.example/in"}', 0); // { stored: true, revision: 18 }
 * ```
 */
export class KafkaConfigStore implements ConfigStore {
  readonly #log: KafkaLog;
  readonly #topic: string;
  readonly #onError: (error: unknown) => void;
  /** The latest record of each key: read from the log, or written by this process. */
  readonly #records = new Map<string, ConfigRecord>();
  readonly #watchers = new Set<Watcher>();
  /** The offset after the last record read from the log. */
  #next = 0;
  /** Offsets this process appended and has not read back yet. */
  readonly #ownAhead = new Set<number>();
  #reader: KafkaSubscription | undefined;
  /** Told each time records are read, while `open` waits for the end. */
  #onRead: () => void = () => {};

  private constructor(log: KafkaLog, topic: string, onError: (error: unknown) => void) {
    this.#log = log;
    this.#topic = topic;
    this.#onError = onError;
  }

  /**
   * Opens the store: reads the topic from its start, in a consumer group of
   * this process alone, up to its end at the time of opening, then keeps
   * reading it.
   * @param log the Kafka connection, which the store uses but does not own
   * @param options the topic, the relay's group and this process's instance id
   * @returns the store, holding every record stored before it was opened
   * @throws {TypeError} when the topic does not have exactly one partition
   */
  static async open(log: KafkaLog, options: KafkaConfigStoreOptions): Promise<KafkaConfigStore> {
    const partitions = await log.partitions(options.topic);
    if (partitions !== 1) {
      throw new TypeError(
        `Cannot use the Kafka topic ${options.topic} for the relay's configuration: it has ${partitions} partitions; it needs exactly 1, whose offsets order every change`,
      );
    }
    const ends = await log.ends(options.topic);
    const store = new KafkaConfigStore(log, options.topic, options.onError ?? (() => {}));
    const end = ends.get(PARTITION) ?? 0;
    const caughtUp = new Promise<void>((resolve) => {
      store.#onRead = () => {
        if (store.#next < end) return;
        store.#onRead = () => {};
        resolve();
      };
    });
    store.#reader = await log.subscribe({
      groupId: `${options.groupId}.config.${options.instanceId}`,
      topics: [options.topic],
      fromBeginning: true,
      onBatch: (batch) => store.#read(batch),
      onAssign: () => {},
    });
    store.#onRead();
    await caughtUp;
    return store;
  }

  load(): Promise<ConfigRecord[]> {
    return Promise.resolve([...this.#records.values()].sort((a, b) => a.revision - b.revision));
  }

  /**
   * Appends the value to the log, whatever the key's revision is now: a log
   * cannot compare, and the last record of a key in the log wins. The record
   * is in `load` at once; watchers are told of it as it is read back.
   * @param key the key
   * @param value the value
   * @param _expected not compared
   * @returns the record's revision: its offset plus one
   * @throws {RelayError} `ERR_RELAY_QUEUE_UNAVAILABLE` (503) when Kafka does not acknowledge the record
   */
  async put(key: string, value: string, _expected: number): Promise<ConfigPut> {
    let offset: number;
    try {
      const [acknowledged] = await this.#log.produce([{
        topic: this.#topic,
        partition: PARTITION,
        key,
        value,
      }]);
      if (acknowledged === undefined) throw new Error("Kafka acknowledged no offset");
      offset = acknowledged;
    } catch (error) {
      throw new RelayError(
        "ERR_RELAY_QUEUE_UNAVAILABLE",
        `Cannot use the relay's configuration in Kafka: ${(error as Error).message}`,
        {
          retryAfterMs: 1000,
          cause: error,
        },
      );
    }
    const record: ConfigRecord = { key, revision: offset + 1, value };
    this.#keep(record);
    if (offset >= this.#next) this.#ownAhead.add(offset);
    return { stored: true, revision: record.revision };
  }

  /**
   * Tells `listener` of every record read from the log from now on, in
   * offset (revision) order, once each: other processes' records and this
   * one's own writes. This process's writes made before the call and not read
   * back yet are left out, as `load` has them already; another process's
   * records not read yet are told, whatever their revision, as `load` does
   * not have them. A listener that throws stops neither the others nor the
   * reading: its error goes to `onError`.
   * @param listener told of each record
   * @returns how to stop
   */
  watch(listener: (record: ConfigRecord) => void): () => void {
    const watcher: Watcher = { listener, skip: new Set(this.#ownAhead) };
    this.#watchers.add(watcher);
    return () => this.#watchers.delete(watcher);
  }

  /**
   * Stops reading the topic and telling watchers. The {@linkcode KafkaLog}
   * stays open: it is shared (with the queue) and closed by its owner.
   */
  async close(): Promise<void> {
    this.#watchers.clear();
    await this.#reader?.close();
  }

  /** Takes records read from the log: each once, in offset order. */
  #read(batch: KafkaBatch): void {
    for (const record of batch.records) {
      // Read again (a replaced consumer starts over): known already.
      if (record.offset < this.#next) continue;
      this.#next = record.offset + 1;
      this.#ownAhead.delete(record.offset);
      if (record.key === null) continue;
      const revision = record.offset + 1;
      if (record.value === null) {
        // A tombstone, written by no relay: compaction removes the key, so the memory does too.
        if ((this.#records.get(record.key)?.revision ?? 0) < revision) {
          this.#records.delete(record.key);
        }
        continue;
      }
      const read: ConfigRecord = { key: record.key, revision, value: record.value };
      // This process's own write, applied when it was acknowledged, is held already (or a later one).
      this.#keep(read);
      // Those who start watching during a listener's call are told from the next record on; those who stop, no more.
      for (const watcher of [...this.#watchers]) {
        if (!this.#watchers.has(watcher) || watcher.skip.delete(record.offset)) continue;
        try {
          watcher.listener(read);
        } catch (error) {
          this.#onError(error);
        }
      }
    }
    // An own write compacted away before it was read back is not coming.
    for (const offset of this.#ownAhead) if (offset < this.#next) this.#ownAhead.delete(offset);
    for (const watcher of this.#watchers) {
      for (const offset of watcher.skip) if (offset < this.#next) watcher.skip.delete(offset);
    }
    this.#onRead();
  }

  /** Takes a record into the memory, unless it holds a later one of the key. */
  #keep(record: ConfigRecord): void {
    if ((this.#records.get(record.key)?.revision ?? 0) < record.revision) {
      this.#records.set(record.key, record);
    }
  }
}
