import type { TicketResult, Ticket, TicketStatus, TicketUpdate } from "./ticket_store.ts";
import type { ObjectErrors, Revision, SyncData, SyncDiff, SyncPatch } from "./types.ts";

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
 * Where sync contexts and tickets live, one context per user (its owner).
 * In memory by default; a shared database can implement the same interface.
 * Revisions past the retention answer `ERR_SYNC_REVISION_EXPIRED` for ten
 * retention periods, then `ERR_SYNC_UNKNOWN_REVISION` (their ids are forgotten).
 */
export interface SyncStore {
  /** Creates a user's context, its first revision holding `me`; false when it exists. */
  createContext(user: SyncUser): Promise<boolean>;
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
  /** Creates a ticket with status `new`. */
  createTicket(owner: string, clientSerial: number | null): Promise<Ticket>;
  /** Moves a ticket on; see `TicketStore.update`. */
  updateTicket(uuid: string, status: TicketStatus, update?: TicketUpdate): Promise<Ticket>;
  /** An owner's ticket; `"expired"` past its retention; undefined when unknown or another's. */
  ticket(owner: string, uuid: string): Promise<TicketResult | "expired" | undefined>;
  /** Drops revisions and tickets past their retention. */
  sweep(): Promise<void>;
}
