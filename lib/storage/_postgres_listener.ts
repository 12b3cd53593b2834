// The PostgreSQL pool's one listening connection (LISTEN/NOTIFY).
import { StorageError } from "./errors.ts";
import { late, type Reachability, unavailable, within } from "./_postgres_faults.ts";
/** What hears a channel's notifications (see `SqlPool.listen`). */
export interface SqlNotificationHandlers {
  /** A notification's payload. */
  onNotify(payload: string): void;
  /** Listening again after the connection was lost and made again: notifications sent meanwhile were missed. */
  onRelisten?(): void;
}

/**
 * The listening connection's client, as {@linkcode Listener} uses it (a
 * `pg` Client is one): said here rather than named from `pg`, so that the
 * package's declarations need no `pg` types.
 */
export interface ListeningClient {
  connect(): Promise<unknown>;
  query(text: string): Promise<unknown>;
  end(): Promise<unknown>;
  on(event: "error", listener: (error: Error) => void): unknown;
  on(event: "end", listener: () => void): unknown;
  on(
    event: "notification",
    listener: (
      message: { readonly channel: string; readonly payload?: string | undefined },
    ) => void,
  ): unknown;
}

/** How often the listening connection is asked a statement, so that one that hangs is found and made again. */
export const LISTEN_PING_MS = 15_000;
/** The first wait before the listening connection is made again; doubled at each failure, up to the most. */
export const RELISTEN_FIRST_MS = 100;
export const RELISTEN_MOST_MS = 5000;
export const CHANNEL = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * The pool's one listening connection (see {@linkcode SqlPool.listen}): made
 * at the first listen, made again after a loss (waiting longer after each
 * failure), asked `SELECT 1` now and then so that one that hangs is found.
 */
export class Listener {
  readonly #make: () => ListeningClient;
  readonly #deadlineMs: number;
  readonly #reach: Reachability;
  readonly #channels = new Map<string, Set<SqlNotificationHandlers>>();
  #client: ListeningClient | undefined;
  #connecting: Promise<ListeningClient> | undefined;
  #retry: ReturnType<typeof setTimeout> | undefined;
  #ping: ReturnType<typeof setInterval> | undefined;
  #delay = RELISTEN_FIRST_MS;
  #closed = false;

  constructor(make: () => ListeningClient, deadlineMs: number, reach: Reachability) {
    this.#make = make;
    this.#deadlineMs = deadlineMs;
    this.#reach = reach;
  }

  async listen(channel: string, handlers: SqlNotificationHandlers): Promise<() => void> {
    if (!CHANNEL.test(channel)) {
      throw new RangeError(
        `Cannot listen on channel ${JSON.stringify(channel)}: use lower-case letters, digits and _`,
      );
    }
    if (this.#closed) throw unavailable(new Error("the pool is closed"));
    let set = this.#channels.get(channel);
    const added = set === undefined;
    if (set === undefined) this.#channels.set(channel, set = new Set());
    set.add(handlers);
    const stop = (): void => {
      set.delete(handlers);
      if (set.size > 0 || this.#channels.get(channel) !== set) return;
      this.#channels.delete(channel);
      this.#client?.query(`UNLISTEN ${channel}`).catch(() => {});
    };
    try {
      // Listened to again when the connection was just made: harmless, and it may have been made without it.
      const client = this.#client ?? (await this.#connect());
      if (added) await this.#statement(client, `LISTEN ${channel}`);
    } catch (error) {
      stop();
      this.#reach.failed(error);
      this.#again();
      throw error instanceof StorageError ? error : unavailable(error);
    }
    return stop;
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#retry);
    clearInterval(this.#ping);
    this.#channels.clear();
    const client = this.#client ?? (await this.#connecting?.catch(() => undefined));
    this.#client = undefined;
    await client?.end().catch(() => {});
  }

  /** The connection, made (and every channel listened to) unless it is there or being made. */
  #connect(): Promise<ListeningClient> {
    if (this.#client !== undefined) return Promise.resolve(this.#client);
    this.#connecting ??= this.#open().then(
      (client) => {
        this.#connecting = undefined;
        if (this.#closed) {
          client.end().catch(() => {});
          throw unavailable(new Error("the pool is closed"));
        }
        this.#client = client;
        this.#delay = RELISTEN_FIRST_MS;
        clearInterval(this.#ping);
        this.#ping = setInterval(() => this.#check(client), LISTEN_PING_MS);
        this.#ping.unref();
        this.#reach.answered();
        return client;
      },
      (error: unknown) => {
        this.#connecting = undefined;
        throw error;
      },
    );
    return this.#connecting;
  }

  async #open(): Promise<ListeningClient> {
    const client = this.#make();
    // Kept after a loss too: a late error of a dropped connection must not end the process.
    client.on("error", (error) => this.#lost(client, error));
    client.on("end", () => this.#lost(client, new Error("the listening connection ended")));
    client.on("notification", (message) => {
      if (message.payload === undefined) return;
      for (const handlers of this.#channels.get(message.channel) ?? []) {
        handlers.onNotify(message.payload);
      }
    });
    try {
      await within(
        client.connect(),
        this.#deadlineMs,
        () => late(this.#deadlineMs, "connection"),
        () => {},
      );
      for (const channel of this.#channels.keys()) {
        await this.#statement(client, `LISTEN ${channel}`);
      }
    } catch (error) {
      client.end().catch(() => {});
      throw error;
    }
    return client;
  }

  /** A statement on the listening connection, given up (and the connection closed) at the deadline. */
  #statement(client: ListeningClient, text: string): Promise<unknown> {
    return within(
      client.query(text),
      this.#deadlineMs,
      () => late(this.#deadlineMs, "answer"),
      () => {
        (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream
          ?.destroy();
      },
    );
  }

  #check(client: ListeningClient): void {
    if (client !== this.#client) return;
    this.#statement(client, "SELECT 1").catch((error: unknown) => this.#lost(client, error));
  }

  #lost(client: ListeningClient, error: unknown): void {
    if (client !== this.#client) return;
    this.#client = undefined;
    clearInterval(this.#ping);
    client.end().catch(() => {});
    if (this.#closed) return;
    this.#reach.failed(error);
    this.#again();
  }

  /** Makes the connection again after a wait, then tells every channel's handlers that they listen again. */
  #again(): void {
    if (this.#closed || this.#retry !== undefined || this.#channels.size === 0) return;
    this.#retry = setTimeout(() => {
      this.#retry = undefined;
      this.#connect().then(
        () => {
          for (const set of this.#channels.values()) {
            for (const handlers of [...set]) handlers.onRelisten?.();
          }
        },
        (error: unknown) => {
          this.#reach.failed(error);
          this.#delay = Math.min(this.#delay * 2, RELISTEN_MOST_MS);
          this.#again();
        },
      );
    }, this.#delay);
    this.#retry.unref();
  }
}
