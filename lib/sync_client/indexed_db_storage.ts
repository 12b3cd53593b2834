// A storage in the browser's IndexedDB. The few IndexedDB calls it makes are
// named by narrow interfaces of its own, so that the package's declarations
// need no DOM library.
import type { SyncStorage } from "./types.ts";

/** An IndexedDB request (`IDBRequest`), as far as the storage uses it. */
export interface IdbRequestLike<T> {
  readonly result: T;
  readonly error: unknown;
  onsuccess: (() => void) | null;
  onerror: (() => void) | null;
}

/** An object store (`IDBObjectStore`), as far as the storage uses it. */
export interface IdbStoreLike {
  put(value: unknown, key: string): unknown;
  delete(key: string): unknown;
  getAll(): IdbRequestLike<unknown[]>;
  getAllKeys(): IdbRequestLike<unknown[]>;
}

/** A transaction (`IDBTransaction`), as far as the storage uses it. */
export interface IdbTransactionLike {
  objectStore(name: string): IdbStoreLike;
  readonly error: unknown;
  oncomplete: (() => void) | null;
  onerror: (() => void) | null;
  onabort: (() => void) | null;
}

/** A database (`IDBDatabase`), as far as the storage uses it. */
export interface IdbDatabaseLike {
  readonly objectStoreNames: { contains(name: string): boolean };
  createObjectStore(name: string): unknown;
  transaction(
    names: string,
    mode: "readonly" | "readwrite",
    options?: { durability: "strict" | "relaxed" | "default" },
  ): IdbTransactionLike;
  close(): void;
}

/** The factory (`IDBFactory`, the global `indexedDB`), as far as the storage uses it. */
export interface IdbFactoryLike {
  open(name: string, version: number): IdbRequestLike<IdbDatabaseLike> & {
    onupgradeneeded: (() => void) | null;
    onblocked: (() => void) | null;
  };
}

/** Options of {@linkcode indexedDbStorage}. */
export interface IndexedDbStorageOptions {
  /**
   * The IndexedDB factory.
   * @default the global `indexedDB`
   */
  readonly indexedDB?: IdbFactoryLike;
}

const STORE = "entries";

function requestResult<T>(request: IdbRequestLike<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

function transactionDone(transaction: IdbTransactionLike): Promise<void> {
  return new Promise((resolve, reject) => {
    transaction.oncomplete = () => resolve();
    transaction.onerror = () => reject(transaction.error);
    transaction.onabort = () => reject(transaction.error ?? new Error("Transaction aborted"));
  });
}

/**
 * A storage in an IndexedDB database of the page's origin, for browsers: one
 * object store of entries, each write one transaction (all or none), resolved
 * once the transaction completes with strict durability where the browser
 * offers it.
 * @param name the database's name (one per client: per user or per app)
 * @param options the IndexedDB factory
 * @returns the storage
 * @throws {TypeError} when `name` is empty; when used where there is no IndexedDB
 * @example
 * ```ts
 * const client = createSyncClient({ baseUrl: location.origin, clientId: "my-app", storage: indexedDbStorage("my-app-sync") });
 * ```
 */
export function indexedDbStorage(name: string, options: IndexedDbStorageOptions = {}): SyncStorage {
  if (typeof name !== "string" || name === "") {
    throw new TypeError("Cannot use an IndexedDB storage: name must name a database");
  }
  let database: Promise<IdbDatabaseLike> | undefined;

  function open(): Promise<IdbDatabaseLike> {
    const found: unknown = options.indexedDB ?? Reflect.get(globalThis, "indexedDB");
    if (typeof found !== "object" || found === null || !("open" in found)) {
      throw new TypeError("Cannot use an IndexedDB storage: this platform has no indexedDB");
    }
    // The platform's IDBFactory: its `open` is the one the interface names.
    const factory = found as IdbFactoryLike;
    const request = factory.open(name, 1);
    request.onupgradeneeded = () => {
      const db = request.result;
      if (!db.objectStoreNames.contains(STORE)) db.createObjectStore(STORE);
    };
    request.onblocked = () => {};
    return requestResult(request);
  }

  return {
    async load() {
      database ??= open();
      const db = await database;
      const transaction = db.transaction(STORE, "readonly");
      const store = transaction.objectStore(STORE);
      const [keys, values] = await Promise.all([
        requestResult(store.getAllKeys()),
        requestResult(store.getAll()),
      ]);
      const entries = new Map<string, unknown>();
      keys.forEach((key, i) => entries.set(String(key), values[i]));
      return entries;
    },
    async write(changes) {
      database ??= open();
      const db = await database;
      const transaction = db.transaction(STORE, "readwrite", { durability: "strict" });
      const done = transactionDone(transaction);
      const store = transaction.objectStore(STORE);
      for (const [key, value] of changes) {
        if (value === undefined) store.delete(key);
        // Stored as JSON's plain data, as the other storages keep it.
        else store.put(JSON.parse(JSON.stringify(value)), key);
      }
      await done;
    },
    async close() {
      const db = database;
      database = undefined;
      if (db !== undefined) (await db.catch(() => undefined))?.close();
    },
  };
}
