// A model of the few IndexedDB calls indexedDbStorage makes (open with an
// upgrade, one object store, getAll/getAllKeys, put/delete in a transaction
// that completes or aborts as a whole), its events fired on a later turn as a
// browser fires them. Databases outlive their connections, by name. The
// real IndexedDB is tested in Chromium (test/sync_client/indexed_db.test.ts).
import type {
  IdbDatabaseLike,
  IdbFactoryLike,
  IdbRequestLike,
  IdbStoreLike,
  IdbTransactionLike,
} from "../../lib/sync_client/mod.ts";

type Stores = Map<string, Map<string, unknown>>;

class Request<T> implements IdbRequestLike<T> {
  result!: T;
  error: unknown = null;
  onsuccess: (() => void) | null = null;
  onerror: (() => void) | null = null;
  onupgradeneeded: (() => void) | null = null;
  onblocked: (() => void) | null = null;

  settle(value: () => T): this {
    setImmediate(() => {
      try {
        this.result = value();
        this.onsuccess?.();
      } catch (error) {
        this.error = error;
        this.onerror?.();
      }
    });
    return this;
  }
}

/** The fake factory; `failWrites` makes each readwrite transaction abort. */
export class FakeIndexedDb implements IdbFactoryLike {
  readonly databases = new Map<string, Stores>();
  failWrites = false;

  open(name: string, _version: number) {
    const request = new Request<IdbDatabaseLike>();
    setImmediate(() => {
      let stores = this.databases.get(name);
      const created = stores === undefined;
      stores ??= new Map();
      this.databases.set(name, stores);
      request.result = this.#database(stores);
      if (created) request.onupgradeneeded?.();
      request.onsuccess?.();
    });
    return request;
  }

  #database(stores: Stores): IdbDatabaseLike {
    const failWrites = (): boolean => this.failWrites;
    return {
      objectStoreNames: { contains: (store) => stores.has(store) },
      createObjectStore: (store) => stores.set(store, new Map()),
      close() {},
      transaction(names, mode): IdbTransactionLike {
        const data = stores.get(names)!;
        const staged = new Map(data);
        const transaction: IdbTransactionLike & { error: unknown } = {
          error: null,
          oncomplete: null,
          onerror: null,
          onabort: null,
          objectStore(): IdbStoreLike {
            return {
              put: (value, key) => staged.set(key, structuredClone(value)),
              delete: (key) => staged.delete(key),
              getAll: () => new Request<unknown[]>().settle(() => [...data.values()]),
              getAllKeys: () => new Request<unknown[]>().settle(() => [...data.keys()]),
            };
          },
        };
        if (mode === "readwrite") {
          setImmediate(() => {
            if (failWrites()) {
              transaction.error = new Error("QuotaExceededError");
              transaction.onabort?.();
              return;
            }
            data.clear();
            for (const [key, value] of staged) data.set(key, value);
            transaction.oncomplete?.();
          });
        }
        return transaction;
      },
    };
  }
}
