import type { ChangeSink } from "../storage/mod.ts";

/**
 * One key's stored value in a {@linkcode ConfigStore}: for the relay, one
 * endpoint (or the tombstone of a deleted one), as JSON.
 */
export interface ConfigRecord {
  /** `<tenant>/<endpoint>`. */
  readonly key: string;
  /**
   * Given by the store, greater for a later change of any key: the order in
   * which every process applies changes, whichever told it first.
   */
  readonly revision: number;
  readonly value: string;
}

/** The answer of {@linkcode ConfigStore.put}: stored, or refused because another change came first. */
export type ConfigPut =
  | { readonly stored: true; readonly revision: number }
  | { readonly stored: false; readonly current: ConfigRecord | undefined };

/**
 * Where the relay keeps what its management API creates and changes, shared
 * by every relay process on the same backend: a key-value log with
 * revisions. In memory (journaled in `STATE_DIR`), Redis and Kafka implement
 * it; one contract suite checks them all.
 */
export interface ConfigStore {
  /** Every record, in revision order. */
  load(): Promise<ConfigRecord[]>;
  /**
   * Stores a value. A store that can compare (memory, Redis) stores it only
   * while the key's revision is still `expected` (0: no record yet) and
   * otherwise answers with the current record, so that a change made from a
   * stale view is made again from the current one. A log (Kafka) stores it
   * unconditionally: the last record in the log wins.
   * @param key the key
   * @param value the value
   * @param expected the revision the change was made from; 0 when there was none
   * @returns the new revision, or the record that came first
   * @throws {RelayError} `ERR_RELAY_QUEUE_UNAVAILABLE` (503) while the backend is away
   */
  put(key: string, value: string, expected: number): Promise<ConfigPut>;
  /**
   * Tells `listener` of records stored from now on by any process (this one's
   * own included, possibly again), in revision order, within a second.
   * @returns how to stop
   */
  watch(listener: (record: ConfigRecord) => void): () => void;
  close(): Promise<void>;
}

/** A {@linkcode MemoryConfigStore}'s whole state, as its journal's snapshot holds it. */
export interface ConfigSnapshot {
  readonly version: 1;
  readonly records: readonly ConfigRecord[];
}

/**
 * A {@linkcode ConfigStore} in one process's memory; with a sink (the
 * `relay-config` journal in `STATE_DIR`), every change is on disk before
 * `put` resolves, and {@linkcode MemoryConfigStore.restore} reads it back.
 * There is no other process to tell, so `watch` tells of this one's changes.
 * @example
 * ```ts
 * const store = new MemoryConfigStore();
 * await store.put("acme/orders", '{"url":"https://hooks.acme.example/in"}', 0); // { stored: true, revision: 1 }
 * ```
 */
export class MemoryConfigStore implements ConfigStore {
  readonly #records = new Map<string, ConfigRecord>();
  readonly #listeners = new Set<(record: ConfigRecord) => void>();
  readonly #sink: ChangeSink<ConfigRecord> | undefined;
  #revision = 0;

  /**
   * Creates an empty store.
   * @param sink where each change goes to be durable before `put` resolves
   */
  constructor(sink?: ChangeSink<ConfigRecord>) {
    this.#sink = sink;
  }

  /**
   * A store holding a snapshot and the changes recorded after it.
   * @param snapshot the journal's snapshot, or undefined for none
   * @param changes records in the order they were made
   * @param sink where further changes go
   * @throws {TypeError} when the snapshot or a change is not one this store wrote
   */
  static restore(
    snapshot: unknown,
    changes: readonly unknown[],
    sink?: ChangeSink<ConfigRecord>,
  ): MemoryConfigStore {
    const store = new MemoryConfigStore(sink);
    if (snapshot !== undefined) {
      const state = snapshot as Partial<ConfigSnapshot> | null;
      if (
        state === null || typeof state !== "object" || state.version !== 1 ||
        !Array.isArray(state.records)
      ) {
        throw new TypeError(
          "Cannot restore the relay's configuration: the snapshot is not one this version wrote",
        );
      }
      for (const record of state.records) store.#keep(checkedRecord(record));
    }
    for (const change of changes) store.#keep(checkedRecord(change));
    return store;
  }

  load(): Promise<ConfigRecord[]> {
    return Promise.resolve([...this.#records.values()].sort((a, b) => a.revision - b.revision));
  }

  async put(key: string, value: string, expected: number): Promise<ConfigPut> {
    const current = this.#records.get(key);
    if ((current?.revision ?? 0) !== expected) return { stored: false, current };
    const record: ConfigRecord = { key, revision: ++this.#revision, value };
    this.#records.set(key, record);
    // Recorded in the same step as applied, so a compaction's snapshot holds it.
    const durable = this.#sink?.record(record);
    for (const listener of this.#listeners) listener(record);
    await durable;
    return { stored: true, revision: record.revision };
  }

  watch(listener: (record: ConfigRecord) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  close(): Promise<void> {
    this.#listeners.clear();
    return Promise.resolve();
  }

  /** The whole state, for the journal's snapshot. */
  exportState(): ConfigSnapshot {
    return { version: 1, records: [...this.#records.values()] };
  }

  #keep(record: ConfigRecord): void {
    this.#records.set(record.key, record);
    if (record.revision > this.#revision) this.#revision = record.revision;
  }
}

function checkedRecord(value: unknown): ConfigRecord {
  const record = value as Partial<ConfigRecord> | null;
  if (
    record === null || typeof record !== "object" || typeof record.key !== "string" ||
    typeof record.value !== "string" ||
    !Number.isSafeInteger(record.revision) || record.revision! < 1
  ) {
    throw new TypeError(
      "Cannot restore the relay's configuration: a record is not one this version wrote",
    );
  }
  return { key: record.key, revision: record.revision!, value: record.value };
}
