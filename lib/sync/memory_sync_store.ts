import { applyPatch } from "./apply_patch.ts";
import { checkPatch } from "./check_patch.ts";
import { SyncError } from "./errors.ts";
import { RevisionLog } from "./revision_log.ts";
import type { SubmitResult, SyncStore, SyncUser } from "./sync_store.ts";
import { type Ticket, type TicketResult, type TicketStatus, TicketStore, type TicketUpdate } from "./ticket_store.ts";
import type { Revision, SyncData, SyncDiff, SyncPatch } from "./types.ts";

/** Options of {@linkcode MemorySyncStore}. */
export interface MemorySyncStoreOptions {
  /** The clock, in epoch milliseconds. */
  readonly now: () => number;
  /** Gives fresh UUIDs for revisions and tickets. */
  readonly uuid: () => string;
  /**
   * How long a revision serves as a diff base, in milliseconds.
   * @default {30 days}
   */
  readonly revisionRetention?: number;
  /**
   * How long a ticket and its result are kept, in milliseconds.
   * @default {600000}
   */
  readonly ticketRetention?: number;
}

const DAY = 24 * 3600 * 1000;
/** Ids of pruned revisions answer 410 for this many retention periods, then 404. */
const FORGET_FACTOR = 10;

/**
 * The in-memory {@linkcode SyncStore}: one {@linkcode RevisionLog} per user and a {@linkcode TicketStore}.
 * Revisions past the retention are pruned; their ids answer "expired" for ten
 * retention periods (300 days by default), then "unknown".
 * @example
 * ```ts
 * const store = new MemorySyncStore({ now: Date.now, uuid: () => crypto.randomUUID(), revisionRetention: 30 * 86_400_000 });
 * await store.createContext({ uuid: userId, username: "ada", notifyLanguage: "en" });
 * ```
 */
export class MemorySyncStore implements SyncStore {
  readonly #now: () => number;
  readonly #uuid: () => string;
  readonly #retention: number;
  readonly #logs = new Map<string, RevisionLog>();
  readonly #tickets: TicketStore;

  /**
   * Creates an empty store.
   * @param options clock, UUID source and retention periods
   */
  constructor(options: MemorySyncStoreOptions) {
    this.#now = options.now;
    this.#uuid = options.uuid;
    this.#retention = options.revisionRetention ?? 30 * DAY;
    this.#tickets = new TicketStore({
      now: options.now,
      uuid: options.uuid,
      ...(options.ticketRetention === undefined ? {} : { retention: options.ticketRetention }),
    });
  }

  createContext(user: SyncUser): Promise<boolean> {
    if (this.#logs.has(user.uuid)) return Promise.resolve(false);
    const me = { uuid: user.uuid, username: user.username, notify_language: user.notifyLanguage };
    this.#logs.set(user.uuid, new RevisionLog({ now: this.#now, uuid: this.#uuid, me }));
    return Promise.resolve(true);
  }

  head(owner: string): Promise<Revision | undefined> {
    return Promise.resolve(this.#logs.get(owner)?.head);
  }

  revision(owner: string, uuid: string): Promise<Revision> {
    return attempt(() => this.#pruned(owner).resolve(uuid));
  }

  size(owner: string): Promise<number> {
    return attempt(() => this.#log(owner).size);
  }

  changedSince(owner: string, base: Revision): Promise<number> {
    return attempt(() => this.#log(owner).changedSince(base));
  }

  snapshot(owner: string, at?: Revision): Promise<SyncData> {
    return attempt(() => this.#log(owner).snapshot(at));
  }

  diff(owner: string, base: Revision, to: Revision): Promise<SyncDiff | undefined> {
    return attempt(() => this.#pruned(owner).diff(base, to));
  }

  submit(owner: string, patch: SyncPatch): Promise<SubmitResult> {
    return attempt(() => {
      const log = this.#log(owner);
      const me = log.me;
      const user = { uuid: owner, username: typeof me?.["username"] === "string" ? me["username"] : "" };
      const errors = checkPatch(patch, log, user);
      if (errors.length > 0) return { errors, revision: undefined };
      return { errors: [], revision: applyPatch(patch, log) };
    });
  }

  createTicket(owner: string, clientSerial: number | null): Promise<Ticket> {
    return attempt(() => this.#tickets.create(owner, clientSerial));
  }

  updateTicket(uuid: string, status: TicketStatus, update?: TicketUpdate): Promise<Ticket> {
    return attempt(() => this.#tickets.update(uuid, status, update));
  }

  ticket(owner: string, uuid: string): Promise<TicketResult | "expired" | undefined> {
    return attempt(() => this.#tickets.get(owner, uuid));
  }

  sweep(): Promise<void> {
    const now = this.#now();
    for (const log of this.#logs.values()) log.prune(now - this.#retention, now - FORGET_FACTOR * this.#retention);
    this.#tickets.sweep();
    return Promise.resolve();
  }

  #log(owner: string): RevisionLog {
    const log = this.#logs.get(owner);
    if (log === undefined) throw new SyncError("ERR_SYNC_NO_CONTEXT", "Cannot sync: this user has no sync context");
    return log;
  }

  /** The owner's log with the revisions past the retention dropped: cheap when there are none. */
  #pruned(owner: string): RevisionLog {
    const log = this.#log(owner);
    const now = this.#now();
    log.prune(now - this.#retention, now - FORGET_FACTOR * this.#retention);
    return log;
  }
}

/** Runs `fn`, turning what it throws into a rejection. */
function attempt<T>(fn: () => T): Promise<T> {
  try {
    return Promise.resolve(fn());
  } catch (error) {
    return Promise.reject(error);
  }
}
