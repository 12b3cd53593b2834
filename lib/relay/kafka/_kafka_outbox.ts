import { RelayError } from "../errors.ts";
import type { KafkaLog, KafkaRecordOut } from "../../storage/_internal.ts";

/** Appends waiting for the next request, with how to answer each. */
interface Pending {
  readonly records: KafkaRecordOut[];
  readonly resolve: (offsets: number[]) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * The Kafka queue's appends awaiting acknowledgement: those of one turn of
 * the event loop go to the log as one request (a group commit), and each
 * caller learns its records' offsets, or that the log could not take them.
 */
export class KafkaOutbox {
  readonly #log: KafkaLog;
  readonly #onProduced: (record: KafkaRecordOut, offset: number) => void;
  #pending: Pending[] = [];

  /**
   * Appends to a log.
   * @param log the Kafka connection
   * @param onProduced told of each record appended, with its offset, before its caller is answered
   */
  constructor(log: KafkaLog, onProduced: (record: KafkaRecordOut, offset: number) => void) {
    this.#log = log;
    this.#onProduced = onProduced;
  }

  /**
   * Appends records with those of the same turn, in one request.
   * @param records the records, in order
   * @returns their offsets, in order
   * @throws {RelayError} `ERR_RELAY_QUEUE_UNAVAILABLE` when the log does not take them
   */
  append(records: KafkaRecordOut[]): Promise<number[]> {
    return new Promise((resolve, reject) => {
      if (this.#pending.length === 0) setImmediate(() => void this.#flush());
      this.#pending.push({ records, resolve, reject });
    });
  }

  async #flush(): Promise<void> {
    const outbox = this.#pending;
    this.#pending = [];
    const all = outbox.flatMap((entry) => entry.records);
    let offsets: number[];
    try {
      offsets = await this.#log.produce(all);
    } catch (error) {
      const unavailable = new RelayError(
        "ERR_RELAY_QUEUE_UNAVAILABLE",
        `Cannot use the Kafka queue: ${(error as Error).message}`,
        {
          retryAfterMs: 1000,
          cause: error,
        },
      );
      for (const entry of outbox) entry.reject(unavailable);
      return;
    }
    all.forEach((record, i) => this.#onProduced(record, offsets[i]!));
    let at = 0;
    for (const entry of outbox) {
      entry.resolve(offsets.slice(at, at + entry.records.length));
      at += entry.records.length;
    }
  }
}
