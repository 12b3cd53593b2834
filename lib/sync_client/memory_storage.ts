import type { SyncStorage } from "./types.ts";

/**
 * A storage in memory: nothing outlives the process. The default; also what
 * tests and short-lived scripts use. Values are copied as JSON, as a durable
 * storage would keep them.
 * @returns the storage
 * @example
 * ```ts
 * const client = createSyncClient({ baseUrl, clientId: "my-app", storage: memoryStorage() });
 * ```
 */
export function memoryStorage(): SyncStorage {
  const entries = new Map<string, string>();
  return {
    load() {
      const copy = new Map<string, unknown>();
      for (const [key, text] of entries) copy.set(key, JSON.parse(text));
      return Promise.resolve(copy);
    },
    write(changes) {
      for (const [key, value] of changes) {
        if (value === undefined) entries.delete(key);
        else entries.set(key, JSON.stringify(value));
      }
      return Promise.resolve();
    },
    close: () => Promise.resolve(),
  };
}
