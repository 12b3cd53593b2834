/** A record to append. */
export interface KafkaRecordOut {
  readonly topic: string;
  readonly partition: number;
  readonly key: string;
  /** null: a tombstone. */
  readonly value: string | null;
}

/** A record read. */
export interface KafkaRecordIn {
  readonly offset: number;
  readonly key: string | null;
  readonly value: string | null;
}

/** Records of one partition, in offset order. */
export interface KafkaBatch {
  readonly topic: string;
  readonly partition: number;
  readonly records: readonly KafkaRecordIn[];
}

/** A consumer-group member's hold on its partitions. */
export interface KafkaSubscription {
  /** Stops fetching a partition (its records wait in the log). */
  pause(topic: string, partition: number): void;
  resume(topic: string, partition: number): void;
  /** Commits, for each partition, the offset of the next record to read. */
  commit(
    offsets: readonly {
      readonly topic: string;
      readonly partition: number;
      readonly offset: number;
    }[],
  ): Promise<void>;
  close(): Promise<void>;
}

/** Options of {@linkcode KafkaLog.subscribe}. */
export interface KafkaSubscribeOptions {
  readonly groupId: string;
  readonly topics: readonly string[];
  /** Read a partition with no committed offset from its start (else from its end). */
  readonly fromBeginning: boolean;
  /** Told of records as they are fetched; the next fetch of the partition waits for it. */
  readonly onBatch: (batch: KafkaBatch) => void;
  /** Told of each new assignment: partitions by topic. */
  readonly onAssign: (assigned: ReadonlyMap<string, readonly number[]>) => void;
}

/**
 * What the Kafka queue (and the configuration store beside it) needs of
 * Kafka: kafka.ts implements it with `kafkajs`; nothing else in the
 * queue knows the client.
 */
export interface KafkaLog {
  /**
   * Appends records, acknowledged by every in-sync replica (`acks: -1`).
   * @returns each record's offset, in order
   */
  produce(records: readonly KafkaRecordOut[]): Promise<number[]>;
  /** Joins a consumer group; resolves once the first assignment is known. */
  subscribe(options: KafkaSubscribeOptions): Promise<KafkaSubscription>;
  /** Partitions of a topic. */
  partitions(topic: string): Promise<number>;
  /** The offset after the last record, by partition. */
  ends(topic: string): Promise<Map<number, number>>;
  close(): Promise<void>;
}
