// One connection per key, opened when first asked for and shared by every
// caller: what shareRedis and shareKafka keep. Private to storage.

/** What a caller of a shared connection is told: the failures the connection survives, and its return. */
export interface ConnectionHooks {
  readonly onError?: ((error: unknown) => void) | undefined;
  readonly onReady?: (() => void) | undefined;
}

/** A caller's hold on a shared connection. */
export interface ConnectionLease<C> {
  readonly connection: C;
  /** Stops telling this caller's hooks; the connection stays open for the others. */
  release(): void;
}

interface Entry<C> {
  readonly opening: Promise<C>;
  readonly hooks: Set<ConnectionHooks>;
}

/**
 * Connections by key (a server and the settings of its connection), each
 * opened once, when first asked for, for every caller. The one connection's
 * hooks tell every caller's: a lost connection is each caller's outage.
 * {@linkcode SharedConnections.close} closes them all.
 */
export class SharedConnections<C extends { close(): Promise<void> }> {
  readonly #entries = new Map<string, Entry<C>>();

  /**
   * The connection of `key`, opened by `open` unless it is open or opening.
   * @param key the server and settings: callers with one key share a connection
   * @param open opens it, with the hooks that tell every caller's
   * @param hooks this caller's, told until it releases the lease
   * @returns the lease
   * @throws what `open` throws (a later call opens anew)
   */
  async lease(
    key: string,
    open: (hooks: {
      readonly onError: (error: unknown) => void;
      readonly onReady: () => void;
    }) => Promise<C>,
    hooks: ConnectionHooks,
  ): Promise<ConnectionLease<C>> {
    let entry = this.#entries.get(key);
    if (entry === undefined) {
      const told = new Set<ConnectionHooks>();
      const opening = open({
        onError: (error) => {
          for (const each of told) each.onError?.(error);
        },
        onReady: () => {
          for (const each of told) each.onReady?.();
        },
      });
      const opened: Entry<C> = { opening, hooks: told };
      entry = opened;
      this.#entries.set(key, opened);
      // A connection that could not be opened is not kept: the next caller tries again.
      opening.catch(() => {
        if (this.#entries.get(key) === opened) this.#entries.delete(key);
      });
    }
    // A copy: two leases given one hooks object stay two.
    const mine: ConnectionHooks = { onError: hooks.onError, onReady: hooks.onReady };
    const held = entry;
    held.hooks.add(mine);
    try {
      return { connection: await held.opening, release: () => void held.hooks.delete(mine) };
    } catch (error) {
      held.hooks.delete(mine);
      throw error;
    }
  }

  /**
   * Closes every connection opened (one still opening once it is), whoever
   * holds a lease on it; a later lease opens anew.
   * @throws the first failure to close, once every connection has been closed
   */
  async close(): Promise<void> {
    const entries = [...this.#entries.values()];
    this.#entries.clear();
    const closed = await Promise.allSettled(entries.map(async (entry) => {
      const connection = await entry.opening.catch(() => undefined);
      entry.hooks.clear();
      await connection?.close();
    }));
    const failed = closed.find((result) => result.status === "rejected");
    if (failed !== undefined) throw failed.reason;
  }
}
