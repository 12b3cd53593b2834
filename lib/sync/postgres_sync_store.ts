// One cohesive structure, over 600 lines on purpose: PostgresSyncStore is one
// class whose methods share its pool, its batchers and its work queues, and
// keep the database and the waiting tickets in step. What stands alone lives
// beside it: the SQL text (_postgres_sync_sql.ts), the row mapping
// (_postgres_sync_rows.ts) and the work/ticket scheduler (_work_scheduler.ts).
import { Batcher } from "../storage/_internal.ts";
import { type SqlClient, type SqlPool, StorageError } from "../storage/mod.ts";
import { patchChanges } from "./apply_patch.ts";
import { baseErrors, checkPatch, conflictErrors, findConflicts } from "./check_patch.ts";
import { idempotencyMismatch, SyncError } from "./errors.ts";
import {
  type Idempotency,
  IDEMPOTENCY_RETENTION_MS,
  type SubmitResult,
  type SyncStore,
  type SyncUser,
  type TicketWork,
} from "./sync_store.ts";
import {
  newTicket,
  type Ticket,
  type TicketData,
  type TicketResult,
  type TicketStatus,
} from "./ticket_store.ts";
import type {
  Change,
  ObjectErrors,
  Revision,
  SyncData,
  SyncDiff,
  SyncObject,
  SyncPatch,
} from "./types.ts";
import { formatTimestamp } from "./_time.ts";
import { PostgresRevisionFeed } from "./postgres_revision_feed.ts";
import type { RevisionFeed } from "./revision_feed.ts";
import { drainOwnerQueue, runTicketWork } from "./_work_scheduler.ts";
import {
  CHANGED_SINCE_SQL,
  CLAIM_WORK_SQL,
  commitRevisionSql,
  CONFLICT_REVISIONS_SQL,
  CONTEXT_SIZE_SQL,
  CREATE_CONTEXT_SQL,
  CREATE_FIRST_CHANGE_SQL,
  CREATE_FIRST_OBJECT_SQL,
  CREATE_FIRST_REVISION_SQL,
  DELETE_CONTEXT_SQL,
  DELETE_OWNED_SQL,
  END_TICKET_SQL,
  ENQUEUE_SQL,
  PLACE_READ_SQL,
  PLACE_WRITE_SQL,
  QUEUED_WORK_SQL,
  READ_IDEMPOTENCY_KEY_SQL,
  RESOLVE_REVISION_SQL,
  SWEEP_BATCH,
  SWEEP_CHANGES_SQL,
  SWEEP_IDEMPOTENCY_SQL,
  SWEEP_OBJECTS_SQL,
  SWEEP_ORPHAN_TICKETS_SQL,
  SWEEP_TICKET_DATA_SQL,
  SWEEP_TICKETS_SQL,
  TAKE_IDEMPOTENCY_KEY_SQL,
  TICKET_SQL,
  WAITING_OWNERS_SQL,
} from "./_postgres_sync_sql.ts";
import {
  diffOf,
  ENTITIES,
  headOf,
  type HeadRow,
  loadView,
  lockContext,
  noContext,
  type ObjectRow,
  placedKeys,
  PlacementRows,
  revisionOf,
  revisionRows,
  RowView,
  snapshotOf,
  ticketOf,
  type TicketRow,
} from "./_postgres_sync_rows.ts";

// The store class; the SQL it runs is in _postgres_sync_sql.ts, the rows it
// reads and writes and what they map to in _postgres_sync_rows.ts.

/** Options of {@linkcode PostgresSyncStore}. */
export interface PostgresSyncStoreOptions {
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
   * Owners' queues run at once (see {@linkcode SyncStore.workConcurrency}): keep it below the pool's size, so that requests still get connections.
   * @default {4}
   */
  readonly workConcurrency?: number;
  /**
   * Where revisions are announced: the database's trigger notifies every commit.
   * @default a {@linkcode PostgresRevisionFeed} on the same pool
   */
  readonly feed?: RevisionFeed;
}

/** Ids of pruned revisions answer 410 for this many retention periods, then 404. */
const FORGET_FACTOR = 10;
/** Times a placed patch is checked again after another writer moved the head first, before it is queued instead. */
const PLACE_ATTEMPTS = 3;
/** Patches placed by one statement at most. */
const PLACE_BATCH = 64;
/** Batches of patches being placed at once: one reading while another writes. */
const PLACE_RUNNING = 2;
/** Patches waiting to be placed at most (each for a statement's deadline at most). */
const PLACE_WAITING = 10_000;
/** Queued tickets of one owner run in one transaction at most. */
const WORK_BATCH = 32;

/**
 * The {@linkcode SyncStore} on PostgreSQL (`DATABASE_URL`), shared by every
 * process. A context's head serial lives in its row, which a commit locks, so
 * that serials stay strictly increasing whichever process commits. Every
 * change keeps the object before and after; a diff reads the changes after
 * its base through their primary key, so its cost follows the changes, not
 * the history. Queued work lives with its ticket: a runner takes an owner's
 * queue under an advisory lock that a second runner skips, and applies each
 * patch with its ticket's end in one transaction, so that the work of a
 * process that stopped is picked up by another and done once. Revisions and
 * tickets past their retention are answered as expired from their times,
 * and swept in bounded batches.
 * @example
 * ```ts
 * await migrate(pool, "sync", SYNC_MIGRATIONS);
 * const store = new PostgresSyncStore(pool, { now: Date.now, uuid: () => crypto.randomUUID() });
 * ```
 */
export class PostgresSyncStore implements SyncStore {
  readonly #db: SqlPool;
  readonly #now: () => number;
  readonly #uuid: () => string;
  readonly #retention: number;
  readonly #ticketRetention: number;
  readonly workConcurrency: number;
  readonly feed: RevisionFeed;
  /** Patches being placed, batched: the writers waiting share one read and one write statement. */
  readonly #placer: Batcher<Placement>;

  /**
   * Uses a pool whose database has the sync tables (see {@linkcode SYNC_MIGRATIONS}).
   * @param db the pool
   * @param options clock, UUID source and retention periods
   */
  constructor(db: SqlPool, options: PostgresSyncStoreOptions) {
    this.#db = db;
    this.#now = options.now;
    this.#uuid = options.uuid;
    this.#retention = options.revisionRetention ?? 30 * 86_400_000;
    this.#ticketRetention = options.ticketRetention ?? 600_000;
    this.workConcurrency = options.workConcurrency ?? 4;
    this.feed = options.feed ?? new PostgresRevisionFeed(db);
    this.#placer = new Batcher({
      run: (placements) => this.#placeBatch(placements),
      keyOf: (placement) => placement.owner,
      maxBatch: PLACE_BATCH,
      maxRunning: PLACE_RUNNING,
      // A patch waits for its answer as long as one statement may take, at most, however long the batches ahead hang.
      timeoutMs: db.deadlineMs,
      maxWaiting: PLACE_WAITING,
      expire: (placement, why) => {
        placement.expired = true;
        placement.reject(
          new StorageError(
            "ERR_STORAGE_UNAVAILABLE",
            why === "timeout"
              ? `Cannot place the patch now: the database did not take it within ${db.deadlineMs} ms`
              : `Cannot place the patch now: ${PLACE_WAITING} patches wait for the database`,
          ),
        );
      },
    });
  }

  createContext(user: SyncUser): Promise<boolean> {
    return this.#db.transaction((db) => this.createContextIn(db, user));
  }

  /**
   * Makes a user's context, as {@linkcode createContext} does, inside a
   * transaction the caller holds: a sign-up writes the user and its context
   * in one.
   * @param db the transaction's client
   * @param user the user
   * @returns whether it was made (false: the user had one)
   */
  async createContextIn(db: SqlClient, user: SyncUser): Promise<boolean> {
    const [uuid, createdAt] = [this.#uuid(), this.#now()];
    const { rowCount } = await db.query(
      CREATE_CONTEXT_SQL,
      [user.uuid, uuid, createdAt],
    );
    if (rowCount === 0) return false;
    const me: SyncObject = {
      uuid: user.uuid,
      username: user.username,
      notify_language: user.notifyLanguage,
    };
    await db.query(CREATE_FIRST_REVISION_SQL, [user.uuid, uuid, createdAt]);
    await db.query(CREATE_FIRST_CHANGE_SQL, [user.uuid, user.uuid, me]);
    await db.query(CREATE_FIRST_OBJECT_SQL, [user.uuid, user.uuid, me]);
    return true;
  }

  async head(owner: string): Promise<Revision | undefined> {
    return headOf(this.#db, owner);
  }

  async revision(owner: string, uuid: string): Promise<Revision> {
    return this.#resolve(this.#db, owner, uuid);
  }

  async size(owner: string): Promise<number> {
    const { rows } = await this.#db.query<{ size: number }>(CONTEXT_SIZE_SQL, [owner]);
    if (rows[0] === undefined) throw noContext();
    return rows[0].size;
  }

  async changedSince(owner: string, base: Revision): Promise<number> {
    await this.#resolve(this.#db, owner, base.uuid);
    const { rows } = await this.#db.query<{ count: string }>(CHANGED_SINCE_SQL, [
      owner,
      base.serial,
    ]);
    return Number(rows[0]!.count);
  }

  snapshot(owner: string, at?: Revision): Promise<SyncData> {
    return snapshotOf(this.#db, owner, at, (db, uuid) => this.#resolve(db, owner, uuid));
  }

  diff(owner: string, base: Revision, to: Revision): Promise<SyncDiff | undefined> {
    return diffOf(this.#db, owner, base, to, (db, uuid) => this.#resolve(db, owner, uuid));
  }

  submit(owner: string, patch: SyncPatch): Promise<SubmitResult> {
    return this.#db.transaction((db) => this.#apply(db, owner, patch, undefined));
  }

  deleteContext(owner: string): Promise<boolean> {
    return this.#db.transaction(async (db) => {
      // The context's row first: a runner holding it finishes before the rest goes.
      const { rowCount } = await db.query(DELETE_CONTEXT_SQL, [owner]);
      for (const text of DELETE_OWNED_SQL) await db.query(text, [owner]);
      return rowCount === 1;
    });
  }

  enqueue(
    owner: string,
    clientSerial: number | null,
    work: TicketWork,
    limit: number,
    idempotency?: Idempotency,
  ): Promise<Ticket> {
    if (idempotency === undefined) return this.#enqueue(this.#db, owner, clientSerial, work, limit);
    return this.#db.transaction(async (db) => {
      const now = this.#now();
      const uuid = this.#uuid();
      const ticket = newTicket(uuid, clientSerial, now);
      // The key is taken (or taken over from a key past its day) by one request; a racing one waits for its commit, then finds it.
      const { rowCount } = await db.query(
        TAKE_IDEMPOTENCY_KEY_SQL,
        [
          owner,
          idempotency.key,
          idempotency.fingerprint,
          ticket,
          now,
          now - IDEMPOTENCY_RETENTION_MS,
        ],
      );
      if (rowCount === 1) return this.#enqueue(db, owner, clientSerial, work, limit, ticket);
      const { rows } = await db.query<
        { fingerprint: string; ticket: Ticket; now: TicketRow | null }
      >(
        READ_IDEMPOTENCY_KEY_SQL,
        [owner, idempotency.key],
      );
      const kept = rows[0]!;
      if (kept.fingerprint !== idempotency.fingerprint) throw idempotencyMismatch(idempotency.key);
      return kept.now === null || now - Number(kept.now.created_at) > this.#ticketRetention
        ? Object.freeze(kept.ticket)
        : ticketOf(kept.now);
    });
  }

  async #enqueue(
    db: SqlClient,
    owner: string,
    clientSerial: number | null,
    work: TicketWork,
    limit: number,
    made?: Ticket,
  ): Promise<Ticket> {
    const uuid = made?.uuid ?? this.#uuid();
    const now = this.#now();
    const { rowCount } = await db.query(
      ENQUEUE_SQL,
      [uuid, owner, clientSerial, now, work, limit],
    );
    if (rowCount === 0) {
      if ((await headOf(db, owner)) === undefined) throw noContext();
      throw new SyncError(
        "ERR_SYNC_BUSY",
        `Cannot queue more work: ${limit} requests of this user are queued; poll their tickets first`,
        {
          retryAfterMs: 1000,
        },
      );
    }
    return made ?? newTicket(uuid, clientSerial, now);
  }

  place(
    owner: string,
    clientSerial: number | null,
    patch: SyncPatch,
    limit: number,
    idempotency?: Idempotency,
  ): Promise<Ticket> {
    if (idempotency !== undefined) {
      return this.enqueue(owner, clientSerial, { kind: "patch", patch }, limit, idempotency);
    }
    return new Promise((resolve, reject) =>
      this.#placer.add({
        owner,
        clientSerial,
        patch,
        limit,
        attempts: 0,
        expired: false,
        resolve,
        reject,
      })
    );
  }

  /**
   * Places a batch of patches (one per owner), optimistically and without a
   * transaction: one statement reads each owner's head and the objects its
   * patch names, the patches are checked, and one statement writes the
   * revisions and the ended tickets of every owner whose head is still the
   * one read and who has nothing queued, locking their rows in owner order.
   * The others are placed again, or queued once they have tried
   * {@linkcode PLACE_ATTEMPTS} times or when work waits. Settles every placement.
   */
  async #placeBatch(placements: readonly Placement[]): Promise<void> {
    let outcomes: (Ticket | "queue" | "again" | SyncError)[];
    try {
      outcomes = await this.#tryPlace(placements);
    } catch (error) {
      // A failure not of the database: each alone, so that the patch at fault fails alone.
      if (placements.length > 1 && !(error instanceof StorageError)) {
        for (const placement of placements) await this.#placeBatch([placement]);
        return;
      }
      for (const placement of placements) placement.reject(error);
      return;
    }
    for (const [i, placement] of placements.entries()) {
      const outcome = outcomes[i]!;
      if (outcome === "again" && ++placement.attempts < PLACE_ATTEMPTS) this.#placer.add(placement);
      else if (outcome === "again" || outcome === "queue") {
        if (placement.expired) continue;
        this.enqueue(placement.owner, placement.clientSerial, {
          kind: "patch",
          patch: placement.patch,
        }, placement.limit).then(placement.resolve, placement.reject);
      } else if (outcome instanceof SyncError) placement.reject(outcome);
      else placement.resolve(outcome);
    }
  }

  async #tryPlace(
    placements: readonly Placement[],
  ): Promise<(Ticket | "queue" | "again" | SyncError)[]> {
    const owners = placements.map((placement) => placement.owner);
    const named = placedKeys(placements);
    const { rows } = await this.#db.query<
      HeadRow & { owner: string; queued: boolean; objects: ObjectRow[] | null }
    >(
      PLACE_READ_SQL,
      [owners, named.owners, named.entities, named.keys],
    );
    const found = new Map(rows.map((row) => [row.owner, row]));
    const outcomes: (Ticket | "queue" | "again" | SyncError)[] = [];
    const written = new PlacementRows();
    for (const placement of placements) {
      const { owner, patch, clientSerial } = placement;
      const row = found.get(owner);
      if (row === undefined) {
        outcomes.push(noContext());
        continue;
      }
      if (row.queued) {
        outcomes.push("queue");
        continue;
      }
      const view = new RowView();
      for (const [entity, key, value, serial] of row.objects ?? []) {
        view.set(ENTITIES[entity]!, key, value, serial);
      }
      const head = revisionOf(row);
      const now = Math.max(this.#now(), head.createdAt);
      const errors = await this.#check(this.#db, owner, patch, view);
      const made = errors.length > 0 ? [] : patchChanges(patch, view);
      if (made.length > 0) {
        const serial = head.serial + 1;
        written.addRevision(owner, serial, this.#uuid(), now, revisionRows(view, made, serial));
      }
      const status: TicketStatus = errors.length > 0 ? "aborted" : "done";
      const uuid = this.#uuid();
      written.addTicket({
        uuid,
        owner,
        clientSerial,
        status,
        at: now,
        errors,
        expected: head.serial,
      });
      const stamp = formatTimestamp(now);
      outcomes.push(
        Object.freeze({
          uuid,
          client_serial: clientSerial,
          status,
          created_at: stamp,
          status_changed_at: stamp,
          errors: Object.freeze(errors),
        }),
      );
    }
    if (written.tickets === 0) return outcomes;
    // One statement, one commit: the rows of the owners whose head is the one read and who have
    // nothing queued are locked in owner order (two batches never wait on each other in a circle);
    // then their heads, revisions, changes, objects and ended tickets are written. The rest: again.
    const { rows: placed } = await this.#db.query<{ owner: string }>(
      PLACE_WRITE_SQL,
      written.params(),
    );
    const done = new Set(placed.map((row) => row.owner));
    return outcomes.map((
      outcome,
      i,
    ) => (typeof outcome === "object" && !(outcome instanceof SyncError) &&
        !done.has(placements[i]!.owner)
      ? "again"
      : outcome)
    );
  }

  runWork(owner: string): Promise<number> {
    // Up to a batch of an owner's queue in one transaction (one commit for them all); after a
    // failure, one ticket at a time, so that the ticket at fault fails alone.
    return drainOwnerQueue({
      batch: WORK_BATCH,
      isOutage: (error) => error instanceof StorageError,
      // A look before another transaction: most queues are empty by now.
      more: async () => (await this.#db.query(QUEUED_WORK_SQL, [owner])).rows.length > 0,
      run: (batch) =>
        this.#db.transaction(async (db) => {
          // One runner per owner over every process: a runner that does not get the lock finds no rows, and leaves the queue to the one that has it.
          // In one round trip: the tickets and the context's row, locked together (the batch's commits go
          // after this head), and the objects the batch's patches read (me, the teams, the messages they name).
          const { rows } = await db.query<
            TicketRow & HeadRow & { seen_serial: number; objects: ObjectRow[] | null }
          >(
            CLAIM_WORK_SQL,
            [owner, `tributary-sync-run:${owner}`, batch],
          );
          if (rows.length === 0) return 0;
          let view = new RowView();
          for (const [entity, key, value, serial] of rows[0]!.objects ?? []) {
            view.set(ENTITIES[entity]!, key, value, serial);
          }
          // The objects were read as of the statement's start; a commit that landed before the lock was
          // taken moved the head (the locked row is the newest): then they are read again, under the lock.
          if (rows[0]!.seen_serial !== rows[0]!.head_serial) {
            view = await loadView(
              db,
              owner,
              rows.flatMap((row) => (row.work?.kind === "patch" ? [row.work.patch] : [])),
            );
          }
          const locked: Locked = { head: revisionOf(rows[0]!), view };
          for (const row of rows) {
            await this.#run(db, row, locked);
          }
          return rows.length;
        }),
    });
  }

  async waitingOwners(): Promise<string[]> {
    const { rows } = await this.#db.query<{ owner: string }>(WAITING_OWNERS_SQL);
    return rows.map((row) => row.owner);
  }

  async ticket(owner: string, uuid: string): Promise<TicketResult | "expired" | undefined> {
    const { rows } = await this.#db.query<TicketRow>(TICKET_SQL, [uuid]);
    const row = rows[0];
    if (row === undefined || row.owner !== owner) return undefined;
    const age = this.#now() - Number(row.created_at);
    if (age > FORGET_FACTOR * this.#ticketRetention) return undefined;
    if (age > this.#ticketRetention) return "expired";
    return { ticket: ticketOf(row), data: row.data };
  }

  async sweep(): Promise<void> {
    const now = this.#now();
    const pruned = now - this.#retention;
    // A revision is pruned once its successor is older than the retention (it stopped being the
    // head that long ago). Its row stays, so that its id answers "expired" for good.
    const batches = [
      [SWEEP_CHANGES_SQL, [pruned]],
      [SWEEP_OBJECTS_SQL, [pruned]],
      [SWEEP_ORPHAN_TICKETS_SQL, []],
      [SWEEP_IDEMPOTENCY_SQL, [now - IDEMPOTENCY_RETENTION_MS]],
      [SWEEP_TICKET_DATA_SQL, [now - this.#ticketRetention]],
      [SWEEP_TICKETS_SQL, [now - FORGET_FACTOR * this.#ticketRetention]],
    ] as const;
    for (const [text, params] of batches) {
      while ((await this.#db.query(text, params)).rowCount === SWEEP_BATCH);
    }
  }

  /** Runs one queued ticket's work, in the runner's transaction, and ends the ticket. */
  async #run(db: SqlClient, row: TicketRow, locked: Locked): Promise<void> {
    const work = row.work!;
    const owner = row.owner;
    const end = (
      status: TicketStatus,
      errors: readonly ObjectErrors[],
      data: TicketData | null = null,
    ) =>
      db.query(END_TICKET_SQL, [
        row.uuid,
        status,
        JSON.stringify(errors),
        data,
        Math.max(this.#now(), Number(row.created_at)),
      ]);
    if (this.#now() - Number(row.created_at) > this.#ticketRetention) {
      // Expired while queued: no one can read its result; the work is dropped (a patch is not applied).
      await end("failed", []);
      return;
    }
    const resolve = (client: SqlClient, uuid: string) => this.#resolve(client, owner, uuid);
    await runTicketWork(work, {
      // A revision made ends the ticket in the same statement.
      applyPatch: (patch) =>
        this.#apply(
          db,
          owner,
          patch,
          { uuid: row.uuid, createdAt: Number(row.created_at) },
          locked,
        ),
      snapshot: async (at) => await snapshotOf(db, owner, await resolve(db, at), resolve),
      diff: async (base, to) =>
        await diffOf(db, owner, await resolve(db, base), await resolve(db, to), resolve),
      end: async (status, update) =>
        void (await end(status, update.errors ?? [], update.data ?? null)),
    });
  }

  /**
   * Checks and applies a patch in a transaction, locking the context's row
   * first unless the caller has; a queued patch's ticket ends `done` with the revision.
   */
  async #apply(
    db: SqlClient,
    owner: string,
    patch: SyncPatch,
    ticket: { uuid: string; createdAt: number } | undefined,
    locked?: Locked,
  ): Promise<SubmitResult> {
    const held = locked ??
      { head: await lockContext(db, owner), view: await loadView(db, owner, [patch]) };
    const errors = await this.#check(db, owner, patch, held.view);
    if (errors.length > 0) return { errors, revision: undefined };
    const changes = patchChanges(patch, held.view);
    if (changes.length === 0) return { errors: [], revision: undefined };
    held.head = await this.#commit(db, owner, held.head, held.view, changes, ticket);
    return { errors: [], revision: held.head };
  }

  /** The errors of a patch against the objects it reads: conflicts with its base first (none of it applies then), else the rules. */
  async #check(
    db: SqlClient,
    owner: string,
    patch: SyncPatch,
    view: RowView,
  ): Promise<ObjectErrors[]> {
    if (patch.base_revision !== null) {
      const conflicts = await this.#conflicts(db, owner, patch, patch.base_revision, view);
      if (conflicts.length > 0) return conflicts;
    }
    const me = view.me;
    return checkPatch(patch, view, {
      uuid: owner,
      username: typeof me?.["username"] === "string" ? me["username"] : "",
    });
  }

  /** What makes a patch with a base a conflict, as ticket errors: the objects changed after the base, or a base past the retention. */
  async #conflicts(
    db: SqlClient,
    owner: string,
    patch: SyncPatch,
    base: string,
    view: RowView,
  ): Promise<ObjectErrors[]> {
    let serial: number;
    try {
      serial = (await this.#resolve(db, owner, base)).serial;
    } catch (error) {
      if (error instanceof SyncError && error.code === "ERR_SYNC_REVISION_EXPIRED") {
        return baseErrors(base, "expired");
      }
      if (error instanceof SyncError && error.code === "ERR_SYNC_UNKNOWN_REVISION") {
        return baseErrors(base, "unknown");
      }
      throw error;
    }
    const conflicts = findConflicts(patch, view, serial);
    if (conflicts.length === 0) return [];
    const { rows } = await db.query<{ serial: number; uuid: string }>(
      CONFLICT_REVISIONS_SQL,
      [owner, conflicts.map((conflict) => conflict.serial)],
    );
    const uuids = new Map(rows.map((row) => [row.serial, row.uuid]));
    return conflictErrors(conflicts, (at) => uuids.get(at) ?? "");
  }

  /** Appends a revision holding `changes` after the locked head, in one statement, with its queued ticket's end. */
  async #commit(
    db: SqlClient,
    owner: string,
    head: Revision,
    view: RowView,
    changes: readonly Change[],
    ticket: { uuid: string; createdAt: number } | undefined,
  ): Promise<Revision> {
    const serial = head.serial + 1;
    const createdAt = Math.max(this.#now(), head.createdAt);
    const uuid = this.#uuid();
    const { seqs, entities, keys, prevs, nexts, finals, sizeDelta } = revisionRows(
      view,
      changes,
      serial,
    );
    const params: unknown[] = [
      owner,
      serial,
      uuid,
      createdAt,
      seqs,
      entities,
      keys,
      prevs,
      nexts,
      finals.map((i) => entities[i]),
      finals.map((i) => keys[i]),
      finals.map((i) => nexts[i]),
      sizeDelta,
    ];
    if (ticket !== undefined) params.push(ticket.uuid, Math.max(this.#now(), ticket.createdAt));
    // One round trip: the revision, its changes, the objects' new values, the context's head and the ticket's end.
    await db.query(commitRevisionSql(ticket !== undefined), params);
    return Object.freeze({ uuid, serial, createdAt });
  }

  /** A revision of the owner's context, or why there is none, as of now. */
  async #resolve(db: SqlClient, owner: string, uuid: string): Promise<Revision> {
    const { rows } = await db.query<
      { serial: number; created_at: string; ended_at: string | null }
    >(
      RESOLVE_REVISION_SQL,
      [uuid, owner],
    );
    const row = rows[0];
    if (row === undefined) {
      if ((await headOf(db, owner)) === undefined) throw noContext();
      throw new SyncError(
        "ERR_SYNC_UNKNOWN_REVISION",
        `Cannot find revision ${uuid}: it was never issued here`,
      );
    }
    const createdAt = Number(row.created_at);
    const now = this.#now();
    // Retained until the retention has passed since the next revision was made (the head always is);
    // revisions are in time order, so those past it are a prefix. Expired for good, never unknown.
    if (row.ended_at !== null && Number(row.ended_at) < now - this.#retention) {
      throw new SyncError(
        "ERR_SYNC_REVISION_EXPIRED",
        `Cannot use revision ${uuid}: it is past the retention window`,
      );
    }
    return Object.freeze({ uuid, serial: row.serial, createdAt });
  }
}

/** A patch waiting to be placed, with how to answer its caller. */
interface Placement {
  readonly owner: string;
  readonly clientSerial: number | null;
  readonly patch: SyncPatch;
  readonly limit: number;
  /** Batches it was in whose write found its head moved. */
  attempts: number;
  /** Answered 503 already, having waited too long: what its batch does with it is for no one (and it is not queued). */
  expired: boolean;
  readonly resolve: (ticket: Ticket) => void;
  readonly reject: (error: unknown) => void;
}

/** A context's row locked for a transaction: its head, and the objects its patches read. */
interface Locked {
  head: Revision;
  readonly view: RowView;
}
