// One cohesive structure, over 600 lines on purpose: MemorySyncStore is one
// class whose methods share its private state (the contexts' revision logs,
// the tickets, the idempotency keys, the owners' work queues) and keep it and
// its journal in step through every patch, ticket, prune and restore. Its
// parts that stand alone live beside it: the work/ticket scheduler
// (_work_scheduler.ts), the patch checks and their application.
import type { ChangeSink } from "../storage/mod.ts";
import { baseErrors, checkPatch, conflictErrors, findConflicts } from "./check_patch.ts";
import { patchChanges } from "./apply_patch.ts";
import { idempotencyMismatch, SyncError } from "./errors.ts";
import { MemoryRevisionFeed } from "./memory_revision_feed.ts";
import type { RevisionFeed } from "./revision_feed.ts";
import { RevisionLog, type RevisionLogState } from "./revision_log.ts";
import { drainOwnerQueue, runTicketWork } from "./_work_scheduler.ts";
import {
  type Idempotency,
  IDEMPOTENCY_RETENTION_MS,
  type SubmitResult,
  type SyncStore,
  type SyncUser,
  type TicketWork,
} from "./sync_store.ts";
import {
  type Ticket,
  type TicketData,
  type TicketResult,
  type TicketStatus,
  TicketStore,
  type TicketStoreState,
} from "./ticket_store.ts";
import type { Change, ObjectErrors, Revision, SyncData, SyncDiff, SyncPatch } from "./types.ts";

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
  /**
   * Where each change goes before its call resolves (a journal makes the store durable).
   * @default nowhere: the state lives and dies with the process
   */
  readonly sink?: ChangeSink<SyncChange>;
  /**
   * Where each revision is announced once its commit is durable.
   * @default a new {@linkcode MemoryRevisionFeed}
   */
  readonly feed?: RevisionFeed;
}

/** The ids and times a change drew, in the order it drew them: what makes its replay give the same result. */
interface Draws {
  readonly uuids: readonly string[];
  readonly times: readonly number[];
}

/** A change to the sync state, as the journal records it. */
export type SyncChange =
  | ({ readonly op: "context"; readonly user: SyncUser } & Draws)
  | ({ readonly op: "erase"; readonly owner: string } & Draws)
  | ({
    readonly op: "ticket";
    readonly owner: string;
    readonly serial: number | null;
    readonly work: TicketWork;
    readonly idempotency?: Idempotency;
  } & Draws)
  | ({
    readonly op: "status";
    readonly ticket: string;
    readonly status: TicketStatus;
    readonly errors?: readonly ObjectErrors[];
    readonly data?: TicketData;
  } & Draws)
  | ({
    readonly op: "commit";
    readonly owner: string;
    readonly changes: readonly Change[];
    readonly ticket?: string;
  } & Draws);

/** The whole sync state, as a journal snapshot holds it. */
export interface SyncSnapshot {
  readonly contexts: readonly (readonly [owner: string, log: RevisionLogState])[];
  readonly tickets: TicketStoreState;
  readonly work: readonly (readonly [ticket: string, owner: string, work: TicketWork])[];
  /** Idempotency keys by owner, oldest first (absent in snapshots written before they existed). */
  readonly keys?: readonly (readonly [owner: string, key: string, kept: KeptKey])[];
}

/** What an idempotency key holds: its body's fingerprint, the ticket first answered, and when. */
interface KeptKey {
  readonly fingerprint: string;
  readonly ticket: Ticket;
  readonly at: number;
}

const DAY = 24 * 3600 * 1000;
const FINAL: ReadonlySet<TicketStatus> = new Set(["done", "aborted", "failed"]);

/**
 * The in-memory {@linkcode SyncStore}: one {@linkcode RevisionLog} per user and a {@linkcode TicketStore}.
 * A revision is pruned once the retention has passed since the next one was
 * made (since it stopped being the head); its id answers "expired" for good. Given a sink (a
 * journal), every change is applied in memory at once and its call resolves
 * once the sink has it; a change records the ids and times it drew, so that
 * {@linkcode MemorySyncStore.restore} replays it to the same revisions. A
 * patch's revision and its ticket's end are one change, so that a crash
 * never leaves a patch applied with its work still queued.
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
  readonly #sink: ChangeSink<SyncChange> | undefined;
  readonly feed: RevisionFeed;
  readonly #logs = new Map<string, RevisionLog>();
  #tickets: TicketStore;
  /** Queued work by ticket, oldest first. */
  readonly #work = new Map<string, { readonly owner: string; readonly work: TicketWork }>();
  /** Queued tickets by owner, oldest first. */
  readonly #queues = new Map<string, string[]>();
  /** Idempotency keys by owner, then key; each owner's oldest first. */
  readonly #keys = new Map<string, Map<string, KeptKey>>();
  /** Owners whose work a runner is doing now. */
  readonly #running = new Set<string>();
  /**
   * Owners' queues run at once: each waits only for its journal's group
   * commit, and the more wait together, the fewer commits (checks and
   * applies take the CPU in turn whatever this is).
   */
  readonly workConcurrency = 32;
  /** What a live change has drawn so far; undefined outside one. */
  #capture: { uuids: string[]; times: number[] } | undefined;
  /** What a replayed change draws; undefined outside a replay. */
  #forced: { uuids: string[]; times: number[] } | undefined;

  /**
   * Creates an empty store.
   * @param options clock, UUID source, retention periods and the sink of changes
   */
  constructor(options: MemorySyncStoreOptions) {
    this.#now = options.now;
    this.#uuid = options.uuid;
    this.#retention = options.revisionRetention ?? 30 * DAY;
    this.#sink = options.sink;
    this.feed = options.feed ?? new MemoryRevisionFeed();
    this.#tickets = new TicketStore(this.#ticketOptions(options));
  }

  /**
   * Rebuilds a store from a snapshot and the changes recorded after it.
   * @param snapshot a {@linkcode SyncSnapshot}, or undefined for none
   * @param changes the {@linkcode SyncChange}s after it, oldest first
   * @param options clock, UUID source, retention periods and where new changes go; `onUnreplayable`
   * takes a change that refers to what is not there (a user's context lost with a damaged journal's
   * records, which `state repair` leaves out), instead of the restore failing on it
   * @returns the store
   * @throws {TypeError} when the snapshot or a change is not one this store wrote
   * @throws {SyncError} for a change that refers to what is not there, without `onUnreplayable`
   */
  static restore(
    snapshot: unknown,
    changes: readonly unknown[],
    options: MemorySyncStoreOptions & {
      readonly onUnreplayable?: (change: SyncChange, error: SyncError) => void;
    },
  ): MemorySyncStore {
    const store = new MemorySyncStore(options);
    if (snapshot !== undefined) store.#take(snapshot as SyncSnapshot, options);
    for (const change of changes) {
      try {
        store.#replay(change as SyncChange);
      } catch (error) {
        if (!(error instanceof SyncError) || options.onUnreplayable === undefined) throw error;
        options.onUnreplayable(change as SyncChange, error);
      }
    }
    return store;
  }

  /**
   * The whole state, for a journal's snapshot.
   * @returns the contexts, tickets and queued work
   */
  exportState(): SyncSnapshot {
    return {
      contexts: [...this.#logs].map(([key, log]) => [key, log.export()] as const),
      tickets: this.#tickets.export(),
      work: [...this.#work].map(([ticket, queued]) => [ticket, queued.owner, queued.work] as const),
      keys: [...this.#keys].flatMap(([owner, keys]) =>
        [...keys].map(([key, kept]) => [owner, key, kept] as const)
      ),
    };
  }

  snapshot(owner: string, at?: Revision): Promise<SyncData> {
    return attempt(() => this.#log(owner).snapshot(at));
  }

  createContext(user: SyncUser): Promise<boolean> {
    if (this.#logs.has(user.uuid)) return Promise.resolve(false);
    const drawn = this.#draw(() => this.#openLog(user));
    return this.#record({ op: "context", user, ...drawn }).then(() => true);
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

  diff(owner: string, base: Revision, to: Revision): Promise<SyncDiff | undefined> {
    return attempt(() => this.#pruned(owner).diff(base, to));
  }

  deleteContext(owner: string): Promise<boolean> {
    if (!this.#logs.has(owner)) return Promise.resolve(false);
    const drawn = this.#draw(() => this.#erase(owner));
    return this.#record({ op: "erase", owner, ...drawn }).then(() => true);
  }

  async submit(owner: string, patch: SyncPatch): Promise<SubmitResult> {
    const log = this.#log(owner);
    const errors = this.#check(owner, patch);
    if (errors.length > 0) return { errors, revision: undefined };
    const changes = patchChanges(patch, log);
    if (changes.length === 0) return { errors: [], revision: undefined };
    const drawn = this.#draw(() => log.commit(changes));
    const made = log.head;
    await this.#record({ op: "commit", owner, changes, ...drawn });
    await this.feed.publish(owner, made);
    return { errors: [], revision: made };
  }

  async enqueue(
    owner: string,
    clientSerial: number | null,
    work: TicketWork,
    limit: number,
    idempotency?: Idempotency,
  ): Promise<Ticket> {
    this.#log(owner);
    if (idempotency !== undefined) {
      const kept = this.#keys.get(owner)?.get(idempotency.key);
      if (kept !== undefined && this.#now() - kept.at <= IDEMPOTENCY_RETENTION_MS) {
        if (kept.fingerprint !== idempotency.fingerprint) {
          throw idempotencyMismatch(idempotency.key);
        }
        const now = this.#tickets.get(owner, kept.ticket.uuid);
        return now === undefined || now === "expired" ? kept.ticket : now.ticket;
      }
    }
    const waiting = this.#queues.get(owner)?.length ?? 0;
    if (waiting >= limit) {
      throw new SyncError(
        "ERR_SYNC_BUSY",
        `Cannot queue more work: ${waiting} requests of this user are queued; poll their tickets first`,
        {
          retryAfterMs: 1000,
        },
      );
    }
    let ticket: Ticket | undefined;
    const drawn = this.#draw(() => (ticket = this.#queue(owner, clientSerial, work, idempotency)));
    await this.#record({
      op: "ticket",
      owner,
      serial: clientSerial,
      work,
      ...(idempotency === undefined ? {} : { idempotency }),
      ...drawn,
    });
    return ticket!;
  }

  async place(
    owner: string,
    clientSerial: number | null,
    patch: SyncPatch,
    limit: number,
    idempotency?: Idempotency,
  ): Promise<Ticket> {
    this.#log(owner);
    if (idempotency !== undefined || this.#queues.has(owner) || this.#running.has(owner)) {
      return this.enqueue(owner, clientSerial, { kind: "patch", patch }, limit, idempotency);
    }
    let ticket: Ticket | undefined;
    const drawn = this.#draw(
      () => (ticket = this.#queue(owner, clientSerial, { kind: "patch", patch })),
    );
    // The ticket and the patch's end are recorded in the same turn: one journal commit holds both.
    const queued = this.#record({
      op: "ticket",
      owner,
      serial: clientSerial,
      work: { kind: "patch", patch },
      ...drawn,
    });
    const applied = this.#run(ticket!.uuid);
    await Promise.all([queued, applied]);
    const now = this.#tickets.get(owner, ticket!.uuid);
    return now === undefined || now === "expired" ? ticket! : now.ticket;
  }

  async runWork(owner: string): Promise<number> {
    if (this.#running.has(owner)) return 0;
    this.#running.add(owner);
    try {
      // One ticket at a time: each is its own change, and the first failure ends the run.
      return await drainOwnerQueue({
        batch: 1,
        run: async () => {
          const next = this.#queues.get(owner)?.[0];
          if (next === undefined) return 0;
          await this.#run(next);
          return 1;
        },
      });
    } finally {
      this.#running.delete(owner);
    }
  }

  waitingOwners(): Promise<string[]> {
    return Promise.resolve([...this.#queues.keys()]);
  }

  ticket(owner: string, uuid: string): Promise<TicketResult | "expired" | undefined> {
    return attempt(() => this.#tickets.get(owner, uuid));
  }

  /** Drops what is past its retention (not journaled: a replay followed by the next sweep comes to the same state). */
  sweep(): Promise<void> {
    const now = this.#now();
    for (const log of this.#logs.values()) log.prune(now - this.#retention);
    this.#tickets.sweep();
    for (const [owner, keys] of this.#keys) {
      for (const [key, kept] of keys) {
        if (now - kept.at <= IDEMPOTENCY_RETENTION_MS) break;
        keys.delete(key);
      }
      if (keys.size === 0) this.#keys.delete(owner);
    }
    return Promise.resolve();
  }

  /** Runs one queued ticket's work to its end. */
  async #run(ticket: string): Promise<void> {
    const queued = this.#work.get(ticket)!;
    const { owner, work } = queued;
    try {
      // At work until it ends: shown, not journaled (the end is), so a ticket the process stopped at is new again after a restart, and run then.
      const current = this.#tickets.get(owner, ticket);
      if (current !== undefined && current !== "expired" && current.ticket.status === "new") {
        this.#setStatus(ticket, "work", {});
      }
      return await runTicketWork(work, {
        applyPatch: (patch) => this.#applyQueued(ticket, owner, patch),
        snapshot: (at) =>
          attempt(() => this.#pruned(owner).snapshot(this.#pruned(owner).resolve(at))),
        diff: (base, to) =>
          attempt(() => {
            const log = this.#pruned(owner);
            return log.diff(log.resolve(base), log.resolve(to));
          }),
        end: (status, update) => this.#status(ticket, status, update),
      });
    } catch (error) {
      // A ticket that expired while queued, or a failure: the work ends either way.
      if (this.#work.has(ticket)) {
        await this.#status(ticket, "failed").catch(() => this.#unqueue(ticket));
      }
      if (!(error instanceof SyncError)) throw error;
    }
  }

  /** The errors of a patch: conflicts with its base first (none of it applies then), else the rules. */
  #check(owner: string, patch: SyncPatch): ObjectErrors[] {
    const log = this.#pruned(owner);
    if (patch.base_revision !== null) {
      const status = log.status(patch.base_revision);
      if (status !== "known") {
        return baseErrors(patch.base_revision, status === "pruned" ? "expired" : "unknown");
      }
      const conflicts = findConflicts(patch, log, log.resolve(patch.base_revision).serial);
      if (conflicts.length > 0) return conflictErrors(conflicts, (serial) => log.at(serial).uuid);
    }
    return checkPatch(patch, log, userOf(owner, log));
  }

  /** Checks and applies a queued patch; its revision and its ticket's end are one change. */
  async #applyQueued(ticket: string, owner: string, patch: SyncPatch): Promise<SubmitResult> {
    const log = this.#log(owner);
    const errors = this.#check(owner, patch);
    if (errors.length > 0) return { errors, revision: undefined };
    const changes = patchChanges(patch, log);
    if (changes.length === 0) return { errors: [], revision: undefined };
    // The revision and the ticket's end in one change: replayed together or not at all.
    const drawn = this.#draw(() => this.#commit(owner, changes, ticket));
    const made = log.head;
    await this.#record({ op: "commit", owner, changes, ticket, ...drawn });
    await this.feed.publish(owner, made);
    return { errors: [], revision: made };
  }

  async #status(
    ticket: string,
    status: TicketStatus,
    update: { errors?: readonly ObjectErrors[]; data?: TicketData } = {},
  ): Promise<void> {
    const drawn = this.#draw(() => this.#setStatus(ticket, status, update));
    return this.#record({ op: "status", ticket, status, ...update, ...drawn });
  }

  // The state changes themselves: run live (drawing fresh ids and times) and in replays (drawing the recorded ones).

  #openLog(user: SyncUser): void {
    const me = { uuid: user.uuid, username: user.username, notify_language: user.notifyLanguage };
    this.#logs.set(user.uuid, new RevisionLog({ now: this.#clock, uuid: this.#newUuid, me }));
  }

  #erase(owner: string): void {
    this.#logs.delete(owner);
    this.#keys.delete(owner);
    this.#tickets.dropOwner(owner);
    for (const ticket of this.#queues.get(owner) ?? []) this.#work.delete(ticket);
    this.#queues.delete(owner);
  }

  #queue(
    owner: string,
    clientSerial: number | null,
    work: TicketWork,
    idempotency?: Idempotency,
  ): Ticket {
    const ticket = this.#tickets.create(owner, clientSerial);
    if (idempotency !== undefined) {
      let keys = this.#keys.get(owner);
      if (keys === undefined) this.#keys.set(owner, keys = new Map());
      // Again at the newest end: each owner's keys stay oldest first.
      keys.delete(idempotency.key);
      keys.set(idempotency.key, {
        fingerprint: idempotency.fingerprint,
        ticket,
        at: this.#clock(),
      });
    }
    this.#work.set(ticket.uuid, { owner, work });
    const queue = this.#queues.get(owner);
    if (queue === undefined) this.#queues.set(owner, [ticket.uuid]);
    else queue.push(ticket.uuid);
    return ticket;
  }

  #setStatus(
    ticket: string,
    status: TicketStatus,
    update: { errors?: readonly ObjectErrors[]; data?: TicketData },
  ): void {
    this.#tickets.update(ticket, status, update);
    if (FINAL.has(status)) this.#unqueue(ticket);
  }

  #commit(owner: string, changes: readonly Change[], ticket: string | undefined): void {
    const log = this.#log(owner);
    if (ticket !== undefined) {
      // Checked first, so that the commit below cannot be left without its ticket's end.
      const found = this.#tickets.get(owner, ticket);
      if (found === undefined || found === "expired" || FINAL.has(found.ticket.status)) {
        throw new TypeError(`Cannot finish ticket ${ticket} with a commit: it is not waiting`);
      }
    }
    log.commit(changes);
    if (ticket !== undefined) this.#setStatus(ticket, "done", { errors: [] });
  }

  #unqueue(ticket: string): void {
    const queued = this.#work.get(ticket);
    if (queued === undefined) return;
    this.#work.delete(ticket);
    const queue = this.#queues.get(queued.owner) ?? [];
    const at = queue.indexOf(ticket);
    if (at !== -1) queue.splice(at, 1);
    if (queue.length === 0) this.#queues.delete(queued.owner);
  }

  #replay(change: SyncChange): void {
    if (
      typeof change !== "object" || change === null || !Array.isArray(change.uuids) ||
      !Array.isArray(change.times)
    ) {
      throw new TypeError("Cannot restore the sync store: a change is not one it wrote");
    }
    this.#forced = { uuids: [...change.uuids], times: [...change.times] };
    try {
      switch (change.op) {
        case "context":
          return this.#openLog(change.user);
        case "erase":
          return this.#erase(change.owner);
        case "ticket":
          return void this.#queue(change.owner, change.serial, change.work, change.idempotency);
        case "status":
          return this.#setStatus(change.ticket, change.status, {
            ...(change.errors === undefined ? {} : { errors: change.errors }),
            ...(change.data === undefined ? {} : { data: change.data }),
          });
        case "commit":
          return this.#commit(change.owner, change.changes, change.ticket);
        default:
          throw new TypeError("Cannot restore the sync store: a change is not one it wrote");
      }
    } finally {
      this.#forced = undefined;
    }
  }

  #take(snapshot: SyncSnapshot, options: MemorySyncStoreOptions): void {
    if (
      !Array.isArray(snapshot.contexts) || !Array.isArray(snapshot.work) ||
      typeof snapshot.tickets !== "object"
    ) {
      throw new TypeError("Cannot restore the sync store: the snapshot is not one it wrote");
    }
    for (const [owner, state] of snapshot.contexts) {
      this.#logs.set(
        owner,
        RevisionLog.restore(state, { now: this.#clock, uuid: this.#newUuid, me: { uuid: owner } }),
      );
    }
    this.#tickets = TicketStore.restore(snapshot.tickets, this.#ticketOptions(options));
    for (const [owner, key, kept] of snapshot.keys ?? []) {
      let keys = this.#keys.get(owner);
      if (keys === undefined) this.#keys.set(owner, keys = new Map());
      keys.set(key, kept);
    }
    for (const [ticket, owner, work] of snapshot.work) {
      this.#work.set(ticket, { owner, work });
      const queue = this.#queues.get(owner);
      if (queue === undefined) this.#queues.set(owner, [ticket]);
      else queue.push(ticket);
    }
  }

  /** Runs a state change, returning the ids and times it drew. */
  #draw(change: () => unknown): Draws {
    const capture = { uuids: [] as string[], times: [] as number[] };
    this.#capture = capture;
    try {
      change();
    } finally {
      this.#capture = undefined;
    }
    return capture;
  }

  #record(change: SyncChange): Promise<void> {
    return this.#sink === undefined ? Promise.resolve() : this.#sink.record(change);
  }

  readonly #clock = (): number => this.#next(this.#forced?.times, this.#capture?.times, this.#now);

  readonly #newUuid = (): string =>
    this.#next(this.#forced?.uuids, this.#capture?.uuids, this.#uuid);

  /** The next value a change draws: the recorded one in a replay, else a fresh one, recorded when a change is live. */
  #next<T>(forced: T[] | undefined, captured: T[] | undefined, fresh: () => T): T {
    if (this.#forced !== undefined) {
      const value = forced?.shift();
      if (value === undefined) {
        throw new TypeError("Cannot restore the sync store: a change lacks a value it drew");
      }
      return value;
    }
    const value = fresh();
    captured?.push(value);
    return value;
  }

  #ticketOptions(options: MemorySyncStoreOptions): ConstructorParameters<typeof TicketStore>[0] {
    return {
      now: this.#clock,
      uuid: this.#newUuid,
      ...(options.ticketRetention === undefined ? {} : { retention: options.ticketRetention }),
    };
  }

  #log(owner: string): RevisionLog {
    const log = this.#logs.get(owner);
    if (log === undefined) {
      throw new SyncError("ERR_SYNC_NO_CONTEXT", "Cannot sync: this user has no sync context");
    }
    return log;
  }

  /** The owner's log with the revisions past the retention dropped: cheap when there are none. */
  #pruned(owner: string): RevisionLog {
    const log = this.#log(owner);
    const now = this.#now();
    log.prune(now - this.#retention);
    return log;
  }
}

function userOf(owner: string, log: RevisionLog): { uuid: string; username: string } {
  const me = log.me;
  return { uuid: owner, username: typeof me?.["username"] === "string" ? me["username"] : "" };
}

/** Runs `fn`, turning what it throws into a rejection. */
function attempt<T>(fn: () => T): Promise<T> {
  try {
    return Promise.resolve(fn());
  } catch (error) {
    return Promise.reject(error);
  }
}
