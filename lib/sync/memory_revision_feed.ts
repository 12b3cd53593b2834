import type { RevisionFeed, RevisionListener } from "./revision_feed.ts";
import type { Revision } from "./types.ts";

/**
 * The in-process {@linkcode RevisionFeed}: what the store in memory (or on
 * its journal) publishes once a commit is durable is heard at once by this
 * process's listeners. It never misses anything, so it tells of no gap.
 * @example
 * ```ts
 * const feed = new MemoryRevisionFeed();
 * const stop = await feed.subscribe(owner, (revision) => console.log(revision.serial));
 * await feed.publish(owner, head);
 * stop();
 * ```
 */
export class MemoryRevisionFeed implements RevisionFeed {
  readonly #listeners = new Map<string, Set<RevisionListener>>();
  #closed = false;

  subscribe(owner: string, listener: RevisionListener): Promise<() => void> {
    if (this.#closed) return Promise.resolve(() => {});
    let set = this.#listeners.get(owner);
    if (set === undefined) this.#listeners.set(owner, set = new Set());
    // One entry per subscription, so that the same function subscribed twice is stopped once per call.
    const entry: RevisionListener = (revision) => listener(revision);
    set.add(entry);
    return Promise.resolve(() => {
      set.delete(entry);
      if (set.size === 0 && this.#listeners.get(owner) === set) this.#listeners.delete(owner);
    });
  }

  publish(owner: string, revision: Revision): Promise<void> {
    for (const listener of [...(this.#listeners.get(owner) ?? [])]) listener(revision);
    return Promise.resolve();
  }

  onGap(_listener: () => void): () => void {
    return () => {};
  }

  close(): Promise<void> {
    this.#closed = true;
    this.#listeners.clear();
    return Promise.resolve();
  }
}
