import type { Revision } from "./types.ts";

/** Hears the revisions of one context, as a {@linkcode RevisionFeed} announces them. */
export type RevisionListener = (revision: Revision) => void;

/**
 * Announces each revision of a context as it commits, to whoever listens
 * for that context: in the process for a store in memory (or on its
 * journal), through PostgreSQL's `LISTEN`/`NOTIFY` for a store shared by
 * processes, so that a commit through one process is heard in every other.
 * An announcement says "the head is at least this revision"; listeners
 * ignore one older than what they have. A feed that may have missed some
 * (its connection was lost) says so through {@linkcode RevisionFeed.onGap}.
 */
export interface RevisionFeed {
  /**
   * Listens for the revisions of an owner's context committed from now on.
   * @param owner the context's owner
   * @param listener hears each revision
   * @returns once listening (a commit after that is heard), a function that stops it
   * @throws {StorageError} `ERR_STORAGE_UNAVAILABLE` when a shared feed cannot listen now
   */
  subscribe(owner: string, listener: RevisionListener): Promise<() => void>;
  /**
   * Announces a committed revision to the owner's listeners, in every process the feed reaches.
   * @param owner the context's owner
   * @param revision the revision
   */
  publish(owner: string, revision: Revision): Promise<void>;
  /**
   * Tells when announcements may have been missed (a lost connection made
   * again): the listener then looks the heads up itself.
   * @param listener told of each gap
   * @returns a function that stops telling it
   */
  onGap(listener: () => void): () => void;
  /** Stops listening; no listener hears anything after it. */
  close(): Promise<void>;
}
