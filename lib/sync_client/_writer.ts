import { SyncClientError } from "./errors.ts";
import type { SyncStorage } from "./types.ts";

/**
 * Writes to a storage one call at a time, in order: changes asked for while
 * a write runs go together in the next one (a later change of a key wins),
 * so many `put`s in a burst cost one durable write. Each caller learns when
 * its own changes are durable.
 */
export class StorageWriter {
  readonly #storage: SyncStorage;
  #next = new Map<string, unknown>();
  #waiting: { resolve: () => void; reject: (error: unknown) => void }[] = [];
  #running: Promise<void> | undefined;

  constructor(storage: SyncStorage) {
    this.#storage = storage;
  }

  /**
   * Writes changes (a value) and deletions (`undefined`).
   * @param changes by key
   * @returns resolved once they are durable
   */
  write(changes: ReadonlyMap<string, unknown>): Promise<void> {
    if (changes.size === 0) return this.#running ?? Promise.resolve();
    for (const [key, value] of changes) this.#next.set(key, value);
    const done = new Promise<void>((resolve, reject) => this.#waiting.push({ resolve, reject }));
    if (this.#running === undefined) this.#running = this.#drain();
    return done;
  }

  /** @returns resolved once every write asked for so far has ended */
  async idle(): Promise<void> {
    while (this.#running !== undefined) await this.#running;
  }

  async #drain(): Promise<void> {
    // A microtask first, so that the writes of one synchronous burst go together.
    await Promise.resolve();
    while (this.#next.size > 0) {
      const batch = this.#next;
      const waiting = this.#waiting;
      this.#next = new Map();
      this.#waiting = [];
      try {
        await this.#storage.write(batch);
        for (const waiter of waiting) waiter.resolve();
      } catch (cause) {
        const error = new SyncClientError(
          "ERR_SYNC_CLIENT_STORAGE",
          `Cannot write to the storage: ${cause instanceof Error ? cause.message : String(cause)}`,
          { cause },
        );
        for (const waiter of waiting) waiter.reject(error);
      }
    }
    this.#running = undefined;
  }
}
