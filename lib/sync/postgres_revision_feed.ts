import type { SqlPool } from "../storage/mod.ts";
import type { RevisionFeed, RevisionListener } from "./revision_feed.ts";
import type { Revision } from "./types.ts";

/**
 * The channel revisions are announced on: the sync tables' trigger (the
 * third migration) notifies it in every transaction that moves a context's
 * head, so that the announcement leaves when the commit does, and never
 * for a commit rolled back.
 */
export const REVISION_CHANNEL = "tributary_sync_revisions";

/**
 * The {@linkcode RevisionFeed} of the store on PostgreSQL: `LISTEN` on the
 * pool's one listening connection (made at the first subscription), and
 * `NOTIFY` from the commit's own transaction (the trigger), so that a
 * commit through any process on the database is heard by every process
 * listening. A payload is `<owner> <serial> <revision> <created_at>`. When
 * the listening connection was lost and made again, it tells of a gap.
 * @example
 * ```ts
 * const feed = new PostgresRevisionFeed(pool);
 * const stop = await feed.subscribe(owner, (revision) => console.log(revision.serial));
 * ```
 */
export class PostgresRevisionFeed implements RevisionFeed {
  readonly #db: SqlPool;
  readonly #listeners = new Map<string, Set<RevisionListener>>();
  readonly #gaps = new Set<() => void>();
  /** Listening on the channel, once asked; undefined before, or after it failed. */
  #listening: Promise<() => void> | undefined;
  #closed = false;

  /**
   * Uses a pool whose database has the sync tables.
   * @param db the pool
   */
  constructor(db: SqlPool) {
    this.#db = db;
  }

  async subscribe(owner: string, listener: RevisionListener): Promise<() => void> {
    if (this.#closed) return () => {};
    this.#listening ??= this.#db.listen(REVISION_CHANNEL, {
      onNotify: (payload) => this.#heard(payload),
      onRelisten: () => {
        for (const gap of [...this.#gaps]) gap();
      },
    });
    try {
      await this.#listening;
    } catch (error) {
      // Asked again by the next subscription.
      this.#listening = undefined;
      throw error;
    }
    let set = this.#listeners.get(owner);
    if (set === undefined) this.#listeners.set(owner, set = new Set());
    const entry: RevisionListener = (revision) => listener(revision);
    set.add(entry);
    return () => {
      set.delete(entry);
      if (set.size === 0 && this.#listeners.get(owner) === set) this.#listeners.delete(owner);
    };
  }

  async publish(owner: string, revision: Revision): Promise<void> {
    await this.#db.query("SELECT pg_notify($1, $2)", [
      REVISION_CHANNEL,
      `${owner} ${revision.serial} ${revision.uuid} ${revision.createdAt}`,
    ]);
  }

  onGap(listener: () => void): () => void {
    const entry = (): void => listener();
    this.#gaps.add(entry);
    return () => void this.#gaps.delete(entry);
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#listeners.clear();
    this.#gaps.clear();
    const listening = this.#listening;
    this.#listening = undefined;
    (await listening?.catch(() => undefined))?.();
  }

  #heard(payload: string): void {
    const [owner = "", serial, uuid, createdAt] = payload.split(" ");
    const set = this.#listeners.get(owner);
    if (set === undefined || uuid === undefined) return;
    const revision: Revision = Object.freeze({
      uuid,
      serial: Number(serial),
      createdAt: Number(createdAt),
    });
    for (const listener of [...set]) listener(revision);
  }
}
