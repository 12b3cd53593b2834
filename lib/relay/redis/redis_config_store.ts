import type { ConfigPut, ConfigRecord, ConfigStore } from "../config_store.ts";
import { RelayError } from "../errors.ts";
import type { RedisScripts } from "../../storage/mod.ts";

/** Options of {@linkcode RedisConfigStore}. */
export interface RedisConfigStoreOptions {
  /**
   * Prefix of every key; the queue's prefix, so that both share one cluster slot.
   * @default {"{tributary}"}
   */
  readonly prefix?: string;
  /**
   * How often a watching store asks Redis for changes, milliseconds: another
   * process's change is told within this and a round trip.
   * @default {250}
   */
  readonly pollMs?: number;
  /**
   * Told when a poll fails (once until one succeeds again: polling goes on)
   * and when a listener throws.
   */
  readonly onError?: (error: unknown) => void;
}

/** Records one `load` or poll script reads at most. */
const PAGE = 500;

// Keys, under the prefix P:
//   P:config        hash: value by key
//   P:config:revs   zset: keys by revision (a key's score is its revision)
//   P:config:rev    counter: the last revision given
// The value and the revision are kept apart, so a value holds any text and
// nothing is parsed in Lua. Every script takes P as ARGV[1].

// ARGV: P, key, value, expected revision ('0': no record yet). Replies
// {1, revision} when stored, else {0} (no record) or {0, revision, value}.
const PUT = `
local P, key = ARGV[1], ARGV[2]
local current = redis.call('ZSCORE', P .. ':config:revs', key)
if tonumber(current or '0') ~= tonumber(ARGV[4]) then
  if not current then return {0} end
  return {0, current, redis.call('HGET', P .. ':config', key)}
end
local revision = redis.call('INCR', P .. ':config:rev')
redis.call('HSET', P .. ':config', key, ARGV[3])
redis.call('ZADD', P .. ':config:revs', revision, key)
return {1, revision}
`;

// ARGV: P, revision, limit. Replies key, revision, value of the records
// after the revision, in revision order, at most limit of them.
const SINCE = `
local P = ARGV[1]
local found = redis.call('ZRANGEBYSCORE', P .. ':config:revs', '(' .. ARGV[2], '+inf', 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[3]))
if #found == 0 then return {} end
local keys = {}
for i = 1, #found, 2 do table.insert(keys, found[i]) end
local values = redis.call('HMGET', P .. ':config', unpack(keys))
local out = {}
for i, key in ipairs(keys) do
  table.insert(out, key)
  table.insert(out, found[2 * i])
  table.insert(out, values[i])
end
return out
`;

// ARGV: P. Replies the last revision given (0: none yet).
const LAST = `
return tonumber(redis.call('GET', ARGV[1] .. ':config:rev') or '0')
`;

/** A listener of {@linkcode RedisConfigStore.watch} and where its "from now on" begins. */
interface Watcher {
  readonly listener: (record: ConfigRecord) => void;
  /** The last revision given when the watch began; undefined until Redis has answered. */
  floor: number | undefined;
  /** Records told by the poll while the floor was not known yet. */
  held: ConfigRecord[];
}

/**
 * The relay's configuration on Redis, beside its queue: each key's value in
 * a hash, the keys in a sorted set by revision, and a counter that gives the
 * revisions. `put` is one Lua script that compares and stores, so two
 * processes changing one key cannot both succeed. A watching store polls for
 * the records after the last one it told of, so every process learns of
 * another's change within `pollMs` and a round trip, in revision order.
 * @example
 * ```ts
 * const redis = await connectRedis("redis://127.0.0.1:6379");
 * const store = new RedisConfigStore(redis, { prefix: "{tributary}" });
 * await store.put("acme/orders", '{"url":"https://hooks.acme.example/in"}', 0); // { stored: true, revision: 1 }
 * ```
 */
export class RedisConfigStore implements ConfigStore {
  readonly #redis: RedisScripts;
  readonly #prefix: string;
  readonly #pollMs: number;
  readonly #onError: (error: unknown) => void;
  readonly #watchers = new Set<Watcher>();
  /** Counts starts and stops of the poll loop: a poll of a loop stopped since is dropped. */
  #loop = 0;
  /** The last revision the loop told of; undefined until the loop's first read of the counter. */
  #cursor: number | undefined;
  #timer: NodeJS.Timeout | undefined;
  /** The last poll failed: its failure was reported, the next ones are not until one succeeds. */
  #failing = false;
  #closed = false;

  /**
   * Uses a Redis connection, which the store does not own: {@linkcode close}
   * leaves it open for the queue that shares it, which closes it.
   * @param redis the connection's scripts
   * @param options key prefix, poll period and error hook
   */
  constructor(redis: RedisScripts, options: RedisConfigStoreOptions = {}) {
    this.#redis = redis;
    this.#prefix = options.prefix ?? "{tributary}";
    this.#pollMs = options.pollMs ?? 250;
    this.#onError = options.onError ?? (() => {});
  }

  /**
   * Reads every record, a page at a time; a key changed while the pages are
   * read is given once, with its latest value.
   * @returns every record, in revision order
   * @throws {RelayError} `ERR_RELAY_QUEUE_UNAVAILABLE` (503) while Redis is away
   */
  async load(): Promise<ConfigRecord[]> {
    const records = new Map<string, ConfigRecord>();
    let since = 0;
    for (;;) {
      const page = await this.#since(since);
      for (const record of page) {
        // A later page holds later revisions: the key moves to the end.
        records.delete(record.key);
        records.set(record.key, record);
      }
      if (page.length < PAGE) return [...records.values()];
      since = page.at(-1)!.revision;
    }
  }

  /**
   * Stores the value while the key's revision is still `expected`, in one
   * script, and otherwise answers with the current record.
   * @param key the key
   * @param value the value, any text
   * @param expected the revision the change was made from; 0 when there was none
   * @returns the new revision, or the record that came first
   * @throws {RangeError} when `expected` is not a revision (an integer, 0 or more)
   * @throws {RelayError} `ERR_RELAY_QUEUE_UNAVAILABLE` (503) while Redis is away
   */
  async put(key: string, value: string, expected: number): Promise<ConfigPut> {
    if (!Number.isSafeInteger(expected) || expected < 0) {
      throw new RangeError(
        `Cannot store the relay's configuration for ${key}: expected revision ${expected} is not an integer of 0 or more`,
      );
    }
    const reply = (await this.#run(PUT, [this.#prefix, key, value, String(expected)])) as [
      number,
      (number | string)?,
      string?,
    ];
    if (reply[0] === 1) return { stored: true, revision: Number(reply[1]) };
    return {
      stored: false,
      current: reply.length === 1
        ? undefined
        : { key, revision: Number(reply[1]), value: reply[2]! },
    };
  }

  /**
   * Tells `listener` of the records stored from now on by any process, this
   * one's included, in revision order, within `pollMs` and a round trip. "Now"
   * is the last revision given when Redis answers the watch's first read,
   * which is sent at once, so a `put` or `load` of this store made after the
   * call comes after it; while Redis is away, "now" is when it is back. One
   * poll loop serves every listener of the store; it starts with the first
   * and stops with the last. A failed poll is reported through `onError` and
   * tried again at the next period; a listener that throws is reported there
   * too, and stops neither the others nor the loop. Once the store is closed,
   * nothing is told.
   * @param listener told of each record
   * @returns how to stop
   */
  watch(listener: (record: ConfigRecord) => void): () => void {
    if (this.#closed) return () => {};
    const watcher: Watcher = { listener, floor: undefined, held: [] };
    this.#watchers.add(watcher);
    if (this.#watchers.size === 1) this.#start();
    else if (this.#cursor !== undefined) this.#readFloor(watcher, this.#cursor);
    // Otherwise the loop's first read, still waited for, gives the floor.
    return () => {
      if (this.#watchers.delete(watcher) && this.#watchers.size === 0) this.#stop();
    };
  }

  /**
   * Stops polling and telling listeners. The Redis connection stays open: it
   * is shared with the queue, which closes it.
   */
  close(): Promise<void> {
    this.#closed = true;
    this.#watchers.clear();
    this.#stop();
    return Promise.resolve();
  }

  #start(): void {
    const loop = ++this.#loop;
    this.#cursor = undefined;
    this.#failing = false;
    // At once, so that the read is sent before whatever the caller does next.
    void this.#poll(loop);
  }

  #stop(): void {
    this.#loop++;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** One turn of the loop: reads the counter first, then the records after the cursor; never rejects. */
  async #poll(loop: number): Promise<void> {
    try {
      if (this.#cursor === undefined) {
        const last = await this.#last();
        if (loop !== this.#loop) return;
        this.#cursor = last;
        for (const watcher of this.#watchers) this.#setFloor(watcher, last);
      } else {
        for (;;) {
          const page = await this.#since(this.#cursor);
          if (loop !== this.#loop) return;
          for (const record of page) {
            this.#cursor = record.revision;
            this.#tell(record);
            // A listener stopped the loop.
            if (loop !== this.#loop) return;
          }
          if (page.length < PAGE) break;
        }
      }
      this.#failing = false;
    } catch (error) {
      if (loop !== this.#loop) return;
      if (!this.#failing) {
        this.#failing = true;
        this.#report(error);
      }
    }
    this.#timer = setTimeout(() => void this.#poll(loop), this.#pollMs);
    this.#timer.unref();
  }

  /** A listener that joined a running loop: its floor is read on its own (Redis away: the loop's cursor when it joined). */
  #readFloor(watcher: Watcher, fallback: number): void {
    this.#last().then(
      (last) => this.#setFloor(watcher, last),
      () => this.#setFloor(watcher, fallback),
    );
  }

  #setFloor(watcher: Watcher, floor: number): void {
    if (watcher.floor !== undefined || !this.#watchers.has(watcher)) return;
    watcher.floor = floor;
    const held = watcher.held;
    watcher.held = [];
    for (const record of held) {
      if (!this.#watchers.has(watcher)) return;
      if (record.revision > floor) this.#call(watcher, record);
    }
  }

  #tell(record: ConfigRecord): void {
    for (const watcher of [...this.#watchers]) {
      // Stopped by a listener told before it.
      if (!this.#watchers.has(watcher)) continue;
      if (watcher.floor === undefined) watcher.held.push(record);
      else if (record.revision > watcher.floor) this.#call(watcher, record);
    }
  }

  #call(watcher: Watcher, record: ConfigRecord): void {
    try {
      watcher.listener(record);
    } catch (error) {
      this.#report(error);
    }
  }

  /** Tells `onError`, which must not end the loop by throwing. */
  #report(error: unknown): void {
    try {
      this.#onError(error);
    } catch {
      // Nowhere else to tell: a timer must not throw.
    }
  }

  async #last(): Promise<number> {
    return Number(await this.#run(LAST, [this.#prefix]));
  }

  /** One page of the records after `revision`, in revision order. */
  async #since(revision: number): Promise<ConfigRecord[]> {
    const reply =
      (await this.#run(SINCE, [this.#prefix, String(revision), String(PAGE)])) as string[];
    const records: ConfigRecord[] = [];
    for (let i = 0; i < reply.length; i += 3) {
      records.push({ key: reply[i]!, revision: Number(reply[i + 1]), value: reply[i + 2]! });
    }
    return records;
  }

  async #run(script: string, args: readonly string[]): Promise<unknown> {
    try {
      return await this.#redis.run(script, args);
    } catch (error) {
      throw new RelayError(
        "ERR_RELAY_QUEUE_UNAVAILABLE",
        `Cannot use the relay's configuration in Redis: ${(error as Error).message}`,
        {
          retryAfterMs: 1000,
          cause: error,
        },
      );
    }
  }
}
