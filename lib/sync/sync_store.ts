import type { RevisionFeed } from "./revision_feed.ts";
import type { Ticket, TicketResult } from "./ticket_store.ts";
import type { ObjectErrors, Revision, SyncData, SyncDiff, SyncPatch } from "./types.ts";

/** How long an `Idempotency-Key` of a user is kept: a day (Stripe's and the IETF draft's). */
export const IDEMPOTENCY_RETENTION_MS = 24 * 3600 * 1000;

/** A request's `Idempotency-Key` and what its body was, to tell a retry from another request under the same key. */
export interface Idempotency {
  readonly key: string;
  /** The SHA-256 of the parsed patch. */
  readonly fingerprint: string;
}

/** The user a context is made for. */
export interface SyncUser {
  readonly uuid: string;
  readonly username: string;
  readonly notifyLanguage: string | null;
}

/** What submitting a patch did. */
export interface SubmitResult {
  /** Why the patch was refused; empty when it was applied. */
  readonly errors: readonly ObjectErrors[];
  /** The revision it made; undefined when it was refused or changed nothing. */
  readonly revision: Revision | undefined;
}

/**
 * Work queued under a ticket, kept with it until it is done: a patch to
 * apply, or a snapshot or diff too large to compute in the answer (revisions
 * by id).
 */
export type TicketWork =
  | { readonly kind: "patch"; readonly patch: SyncPatch }
  | { readonly kind: "snapshot"; readonly at: string }
  | { readonly kind: "diff"; readonly base: string; readonly to: string };

/**
 * Where sync contexts and tickets live, one context per user (its owner):
 * in memory (on a journal to be durable) or in PostgreSQL, shared by
 * processes. Revisions past the retention answer `ERR_SYNC_REVISION_EXPIRED`
 * for ten retention periods, then `ERR_SYNC_UNKNOWN_REVISION` (their ids are
 * forgotten). Queued work lives in the store with its ticket, so that work
 * accepted before a crash is done after it, by this process or another.
 */
export interface SyncStore {
  /** Creates a user's context, its first revision holding `me`; false when it exists. */
  createContext(user: SyncUser): Promise<boolean>;
  /**
   * Erases a context for good (the account is deleted): its revisions,
   * objects, tickets with their results, and queued work.
   * @returns whether there was one
   */
  deleteContext(owner: string): Promise<boolean>;
  /** The newest revision of a context; undefined when the owner has no context. */
  head(owner: string): Promise<Revision | undefined>;
  /**
   * A revision of the owner's context.
   * @throws {SyncError} `ERR_SYNC_UNKNOWN_REVISION` (never issued to this context),
   * `ERR_SYNC_REVISION_EXPIRED` (past the retention), `ERR_SYNC_NO_CONTEXT`
   */
  revision(owner: string, uuid: string): Promise<Revision>;
  /** Objects a snapshot of the head lists. */
  size(owner: string): Promise<number>;
  /** Objects changed after `base`: the most a diff from it to the head lists. */
  changedSince(owner: string, base: Revision): Promise<number>;
  /** Every object at a revision (the head by default). */
  snapshot(owner: string, at?: Revision): Promise<SyncData>;
  /** What changed after `base` up to `to`; undefined when they are the same revision. */
  diff(owner: string, base: Revision, to: Revision): Promise<SyncDiff | undefined>;
  /** Checks a patch against the current objects and, when it passes, applies it as one revision, atomically. */
  submit(owner: string, patch: SyncPatch): Promise<SubmitResult>;
  /**
   * Queues work under a new ticket (status `new`); resolves once both are durable.
   * @param owner the context
   * @param clientSerial the patch's `serial`, shown on the ticket
   * @param work what to do
   * @param limit the unfinished tickets an owner may have
   * @param idempotency the request's `Idempotency-Key` and its body's fingerprint: the same key
   * (kept {@linkcode IDEMPOTENCY_RETENTION_MS}) gives the first ticket again, queuing nothing
   * @returns the ticket: new, or the first one of the key (as it is now, or as first answered once no longer kept)
   * @throws {SyncError} `ERR_SYNC_BUSY` when the owner has `limit` of them, `ERR_SYNC_NO_CONTEXT`,
   * `ERR_SYNC_IDEMPOTENCY_MISMATCH` when the key came with another body
   */
  enqueue(
    owner: string,
    clientSerial: number | null,
    work: TicketWork,
    limit: number,
    idempotency?: Idempotency,
  ): Promise<Ticket>;
  /**
   * Takes a patch as {@linkcode SyncStore.enqueue} does, but when the owner
   * has no queued work, checks and applies it at once, with its ticket, in
   * one durable step: the ticket then comes back ended (`done`, or `aborted`
   * with the errors) and nothing is queued. Otherwise (work waits, another
   * process is committing, or an `Idempotency-Key` came) it is queued behind
   * the rest, ticket `new`, for {@linkcode SyncStore.runWork}.
   * @param owner the context
   * @param clientSerial the patch's `serial`, shown on the ticket
   * @param patch the patch
   * @param limit the unfinished tickets an owner may have
   * @param idempotency as for {@linkcode SyncStore.enqueue}
   * @returns the ticket: ended when the patch was applied at once
   * @throws {SyncError} as {@linkcode SyncStore.enqueue} does
   */
  place(
    owner: string,
    clientSerial: number | null,
    patch: SyncPatch,
    limit: number,
    idempotency?: Idempotency,
  ): Promise<Ticket>;
  /**
   * Runs an owner's queued work, oldest first, until none is left: a
   * patch is checked and applied and its ticket finished in one step (`done`,
   * or `aborted` with the errors); a snapshot or diff is computed and kept
   * with its ticket (`done`, or `failed` when its revisions expired). Work
   * another runner holds is left to it.
   * @returns how many tickets it finished
   */
  runWork(owner: string): Promise<number>;
  /**
   * How many owners' queues are worth running at once: as many as wait on
   * the same commit together, without taking every connection requests need.
   */
  readonly workConcurrency: number;
  /**
   * Announces each revision committed to a context, once it is durable: in
   * the process for a store in memory, to every process for a shared one.
   */
  readonly feed: RevisionFeed;
  /** Owners with queued work: what a runner picks up at start, and from a process that stopped. */
  waitingOwners(): Promise<string[]>;
  /** An owner's ticket; `"expired"` past its retention; undefined when unknown or another's. */
  ticket(owner: string, uuid: string): Promise<TicketResult | "expired" | undefined>;
  /** Drops revisions and tickets past their retention. */
  sweep(): Promise<void>;
}
