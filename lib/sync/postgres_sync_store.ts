import { Batcher } from "../storage/_internal.ts";
import { type SqlClient, type SqlPool, StorageError } from "../storage/mod.ts";
import { patchChanges } from "./apply_patch.ts";
import { baseErrors, checkPatch, conflictErrors, findConflicts } from "./check_patch.ts";
import { idempotencyMismatch, SyncError } from "./errors.ts";
import { buildDiff, buildSnapshot, type Seen, type Tables } from "./_revision_data.ts";
import type { ObjectView } from "./revision_log.ts";
import { type Idempotency, IDEMPOTENCY_RETENTION_MS, type SubmitResult, type SyncStore, type SyncUser, type TicketWork } from "./sync_store.ts";
import type { Ticket, TicketData, TicketResult, TicketStatus } from "./ticket_store.ts";
import type { Change, EntityName, ObjectErrors, Revision, SyncData, SyncDiff, SyncObject, SyncPatch } from "./types.ts";
import { formatTimestamp } from "./_time.ts";
import { drainOwnerQueue, runTicketWork } from "./_work_scheduler.ts";

/** The sync domain's tables, one migration a version: released steps are never edited. */
export const SYNC_MIGRATIONS: readonly string[] = [
  `CREATE TABLE sync_contexts (
     owner uuid PRIMARY KEY,
     head_serial integer NOT NULL,
     head_uuid uuid NOT NULL,
     head_created_at bigint NOT NULL,
     size integer NOT NULL);
   CREATE TABLE sync_revisions (
     owner uuid NOT NULL,
     serial integer NOT NULL,
     uuid uuid NOT NULL UNIQUE,
     created_at bigint NOT NULL,
     PRIMARY KEY (owner, serial));
   CREATE TABLE sync_changes (
     owner uuid NOT NULL,
     serial integer NOT NULL,
     seq integer NOT NULL,
     entity smallint NOT NULL,
     key text NOT NULL,
     prev jsonb,
     next jsonb,
     PRIMARY KEY (owner, serial, seq));
   CREATE TABLE sync_objects (
     owner uuid NOT NULL,
     entity smallint NOT NULL,
     key text NOT NULL,
     value jsonb,
     last_serial integer NOT NULL,
     PRIMARY KEY (owner, entity, key));
   CREATE INDEX sync_objects_last_serial ON sync_objects (owner, last_serial);
   CREATE TABLE sync_tickets (
     uuid uuid PRIMARY KEY,
     owner uuid NOT NULL,
     seq bigserial,
     client_serial bigint,
     status text NOT NULL,
     created_at bigint NOT NULL,
     status_changed_at bigint NOT NULL,
     errors jsonb NOT NULL,
     data jsonb,
     work jsonb);
   CREATE INDEX sync_tickets_work ON sync_tickets (owner, seq) WHERE work IS NOT NULL;
   CREATE INDEX sync_tickets_created_at ON sync_tickets (created_at);`,
  // 2: Idempotency-Key of patches, a day per user.
  `CREATE TABLE sync_idempotency (
     owner uuid NOT NULL,
     key text NOT NULL,
     fingerprint text NOT NULL,
     ticket jsonb NOT NULL,
     created_at bigint NOT NULL,
     PRIMARY KEY (owner, key));
   CREATE INDEX sync_idempotency_created_at ON sync_idempotency (created_at);`,
];

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
}

const ENTITIES: readonly EntityName[] = ["me", "messages", "teams"];
const INDEX: Readonly<Record<EntityName, number>> = { me: 0, messages: 1, teams: 2 };
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
/** Rows changed at most by one statement of a sweep, so that a sweep never holds locks for long. */
const SWEEP_BATCH = 5000;

interface TicketRow {
  uuid: string;
  owner: string;
  client_serial: string | null;
  status: TicketStatus;
  created_at: string;
  status_changed_at: string;
  errors: ObjectErrors[];
  data: TicketData | null;
  work: TicketWork | null;
}

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
        placement.reject(new StorageError(
          "ERR_STORAGE_UNAVAILABLE",
          why === "timeout"
            ? `Cannot place the patch now: the database did not take it within ${db.deadlineMs} ms`
            : `Cannot place the patch now: ${PLACE_WAITING} patches wait for the database`,
        ));
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
      "INSERT INTO sync_contexts (owner, head_serial, head_uuid, head_created_at, size) VALUES ($1, 1, $2, $3, 1) ON CONFLICT DO NOTHING",
      [user.uuid, uuid, createdAt],
    );
    if (rowCount === 0) return false;
    const me: SyncObject = { uuid: user.uuid, username: user.username, notify_language: user.notifyLanguage };
    await db.query("INSERT INTO sync_revisions (owner, serial, uuid, created_at) VALUES ($1, 1, $2, $3)", [user.uuid, uuid, createdAt]);
    await db.query("INSERT INTO sync_changes (owner, serial, seq, entity, key, prev, next) VALUES ($1, 1, 0, 0, $2, NULL, $3)", [user.uuid, user.uuid, me]);
    await db.query("INSERT INTO sync_objects (owner, entity, key, value, last_serial) VALUES ($1, 0, $2, $3, 1)", [user.uuid, user.uuid, me]);
    return true;
  }

  async head(owner: string): Promise<Revision | undefined> {
    return headOf(this.#db, owner);
  }

  async revision(owner: string, uuid: string): Promise<Revision> {
    return this.#resolve(this.#db, owner, uuid);
  }

  async size(owner: string): Promise<number> {
    const { rows } = await this.#db.query<{ size: number }>("SELECT size FROM sync_contexts WHERE owner = $1", [owner]);
    if (rows[0] === undefined) throw noContext();
    return rows[0].size;
  }

  async changedSince(owner: string, base: Revision): Promise<number> {
    await this.#resolve(this.#db, owner, base.uuid);
    const { rows } = await this.#db.query<{ count: string }>("SELECT count(*) AS count FROM sync_objects WHERE owner = $1 AND last_serial > $2", [owner, base.serial]);
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
      const { rowCount } = await db.query("DELETE FROM sync_contexts WHERE owner = $1", [owner]);
      for (const table of ["sync_changes", "sync_objects", "sync_revisions", "sync_tickets", "sync_idempotency"]) {
        await db.query(`DELETE FROM ${table} WHERE owner = $1`, [owner]);
      }
      return rowCount === 1;
    });
  }

  enqueue(owner: string, clientSerial: number | null, work: TicketWork, limit: number, idempotency?: Idempotency): Promise<Ticket> {
    if (idempotency === undefined) return this.#enqueue(this.#db, owner, clientSerial, work, limit);
    return this.#db.transaction(async (db) => {
      const now = this.#now();
      const uuid = this.#uuid();
      const stamp = formatTimestamp(now);
      const ticket: Ticket = Object.freeze({ uuid, client_serial: clientSerial, status: "new", created_at: stamp, status_changed_at: stamp, errors: Object.freeze([]) });
      // The key is taken (or taken over from a key past its day) by one request; a racing one waits for its commit, then finds it.
      const { rowCount } = await db.query(
        `INSERT INTO sync_idempotency (owner, key, fingerprint, ticket, created_at) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (owner, key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, ticket = EXCLUDED.ticket, created_at = EXCLUDED.created_at
         WHERE sync_idempotency.created_at < $6`,
        [owner, idempotency.key, idempotency.fingerprint, ticket, now, now - IDEMPOTENCY_RETENTION_MS],
      );
      if (rowCount === 1) return this.#enqueue(db, owner, clientSerial, work, limit, ticket);
      const { rows } = await db.query<{ fingerprint: string; ticket: Ticket; now: TicketRow | null }>(
        `SELECT k.fingerprint, k.ticket, (SELECT to_jsonb(t) FROM sync_tickets t WHERE t.uuid = (k.ticket->>'uuid')::uuid) AS now
         FROM sync_idempotency k WHERE k.owner = $1 AND k.key = $2`,
        [owner, idempotency.key],
      );
      const kept = rows[0]!;
      if (kept.fingerprint !== idempotency.fingerprint) throw idempotencyMismatch(idempotency.key);
      return kept.now === null || now - Number(kept.now.created_at) > this.#ticketRetention ? Object.freeze(kept.ticket) : ticketOf(kept.now);
    });
  }

  async #enqueue(db: SqlClient, owner: string, clientSerial: number | null, work: TicketWork, limit: number, made?: Ticket): Promise<Ticket> {
    const uuid = made?.uuid ?? this.#uuid();
    const now = this.#now();
    const { rowCount } = await db.query(
      `INSERT INTO sync_tickets (uuid, owner, client_serial, status, created_at, status_changed_at, errors, work)
       SELECT $1, $2, $3, 'new', $4, $4, '[]', $5
       WHERE EXISTS (SELECT 1 FROM sync_contexts WHERE owner = $2)
         AND (SELECT count(*) FROM (SELECT 1 FROM sync_tickets WHERE owner = $2 AND work IS NOT NULL LIMIT $6) AS queued) < $6`,
      [uuid, owner, clientSerial, now, work, limit],
    );
    if (rowCount === 0) {
      if ((await headOf(db, owner)) === undefined) throw noContext();
      throw new SyncError("ERR_SYNC_BUSY", `Cannot queue more work: ${limit} requests of this user are queued; poll their tickets first`, {
        retryAfterMs: 1000,
      });
    }
    const stamp = formatTimestamp(now);
    return made ?? Object.freeze({ uuid, client_serial: clientSerial, status: "new", created_at: stamp, status_changed_at: stamp, errors: Object.freeze([]) });
  }

  place(owner: string, clientSerial: number | null, patch: SyncPatch, limit: number, idempotency?: Idempotency): Promise<Ticket> {
    if (idempotency !== undefined) return this.enqueue(owner, clientSerial, { kind: "patch", patch }, limit, idempotency);
    return new Promise((resolve, reject) => this.#placer.add({ owner, clientSerial, patch, limit, attempts: 0, expired: false, resolve, reject }));
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
        this.enqueue(placement.owner, placement.clientSerial, { kind: "patch", patch: placement.patch }, placement.limit).then(placement.resolve, placement.reject);
      } else if (outcome instanceof SyncError) placement.reject(outcome);
      else placement.resolve(outcome);
    }
  }

  async #tryPlace(placements: readonly Placement[]): Promise<(Ticket | "queue" | "again" | SyncError)[]> {
    const owners = placements.map((placement) => placement.owner);
    const named = { owners: [] as string[], entities: [] as number[], keys: [] as string[] };
    for (const placement of placements) {
      const { entities, keys } = namedKeys([placement.patch]);
      for (const [i, key] of keys.entries()) {
        named.owners.push(placement.owner);
        named.entities.push(entities[i]!);
        named.keys.push(key);
      }
    }
    const { rows } = await this.#db.query<HeadRow & { owner: string; queued: boolean; objects: ObjectRow[] | null }>(
      `SELECT x.owner, x.head_serial, x.head_uuid, x.head_created_at,
         EXISTS (SELECT 1 FROM sync_tickets t WHERE t.owner = x.owner AND t.work IS NOT NULL) AS queued,
         (SELECT jsonb_agg(jsonb_build_array(entity, key, value, last_serial)) FROM (
            SELECT entity, key, value, last_serial FROM sync_objects WHERE owner = x.owner AND entity IN (0, 2) AND value IS NOT NULL
            UNION ALL
            SELECT o.entity, o.key, o.value, o.last_serial
            FROM unnest($2::uuid[], $3::smallint[], $4::text[]) AS named(owner, entity, key) CROSS JOIN LATERAL (
              SELECT entity, key, value, last_serial FROM sync_objects
              WHERE owner = named.owner AND entity = named.entity AND key = named.key LIMIT 1) AS o
            WHERE named.owner = x.owner) AS read) AS objects
       FROM sync_contexts x WHERE x.owner = ANY($1::uuid[])`,
      [owners, named.owners, named.entities, named.keys],
    );
    const found = new Map(rows.map((row) => [row.owner, row]));
    const outcomes: (Ticket | "queue" | "again" | SyncError)[] = [];
    const heads = { owners: [] as string[], serials: [] as number[], uuids: [] as string[], times: [] as number[], sizes: [] as number[] };
    const changes = { owners: [] as string[], serials: [] as number[], seqs: [] as number[], entities: [] as number[], keys: [] as string[], prevs: [] as (string | null)[], nexts: [] as (string | null)[] };
    const objects = { owners: [] as string[], entities: [] as number[], keys: [] as string[], values: [] as (string | null)[], serials: [] as number[] };
    const tickets = { uuids: [] as string[], owners: [] as string[], serials: [] as (number | null)[], statuses: [] as TicketStatus[], times: [] as number[], errors: [] as string[], expected: [] as number[] };
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
      for (const [entity, key, value, serial] of row.objects ?? []) view.set(ENTITIES[entity]!, key, value, serial);
      const head = revisionOf(row);
      const now = Math.max(this.#now(), head.createdAt);
      const errors = await this.#check(this.#db, owner, patch, view);
      const made = errors.length > 0 ? [] : patchChanges(patch, view);
      if (made.length > 0) {
        const serial = head.serial + 1;
        const rows = revisionRows(view, made, serial);
        heads.owners.push(owner);
        heads.serials.push(serial);
        heads.uuids.push(this.#uuid());
        heads.times.push(now);
        heads.sizes.push(rows.sizeDelta);
        for (const [i, seq] of rows.seqs.entries()) {
          changes.owners.push(owner);
          changes.serials.push(serial);
          changes.seqs.push(seq);
          changes.entities.push(rows.entities[i]!);
          changes.keys.push(rows.keys[i]!);
          changes.prevs.push(rows.prevs[i]!);
          changes.nexts.push(rows.nexts[i]!);
        }
        for (const i of rows.finals) {
          objects.owners.push(owner);
          objects.entities.push(rows.entities[i]!);
          objects.keys.push(rows.keys[i]!);
          objects.values.push(rows.nexts[i]!);
          objects.serials.push(serial);
        }
      }
      const status: TicketStatus = errors.length > 0 ? "aborted" : "done";
      const uuid = this.#uuid();
      tickets.uuids.push(uuid);
      tickets.owners.push(owner);
      tickets.serials.push(clientSerial);
      tickets.statuses.push(status);
      tickets.times.push(now);
      tickets.errors.push(JSON.stringify(errors));
      tickets.expected.push(head.serial);
      const stamp = formatTimestamp(now);
      outcomes.push(Object.freeze({ uuid, client_serial: clientSerial, status, created_at: stamp, status_changed_at: stamp, errors: Object.freeze(errors) }));
    }
    if (tickets.uuids.length === 0) return outcomes;
    // One statement, one commit: the rows of the owners whose head is the one read and who have
    // nothing queued are locked in owner order (two batches never wait on each other in a circle);
    // then their heads, revisions, changes, objects and ended tickets are written. The rest: again.
    const { rows: placed } = await this.#db.query<{ owner: string }>(
      `WITH k AS (SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::bigint[], $4::text[], $5::bigint[], $6::jsonb[], $7::integer[])
                    AS k(uuid, owner, client_serial, status, at, errors, expected)),
         l AS (SELECT x.owner FROM sync_contexts x JOIN k ON k.owner = x.owner
               WHERE x.head_serial = k.expected AND NOT EXISTS (SELECT 1 FROM sync_tickets t WHERE t.owner = x.owner AND t.work IS NOT NULL)
               ORDER BY x.owner FOR UPDATE OF x),
         u AS (SELECT * FROM unnest($8::uuid[], $9::integer[], $10::uuid[], $11::bigint[], $12::integer[])
                    AS u(owner, serial, uuid, created_at, size_delta) WHERE owner IN (SELECT owner FROM l)),
         h AS (UPDATE sync_contexts x SET head_serial = u.serial, head_uuid = u.uuid, head_created_at = u.created_at, size = x.size + u.size_delta
               FROM u WHERE x.owner = u.owner),
         r AS (INSERT INTO sync_revisions (owner, serial, uuid, created_at) SELECT owner, serial, uuid, created_at FROM u),
         c AS (INSERT INTO sync_changes (owner, serial, seq, entity, key, prev, next)
               SELECT * FROM unnest($13::uuid[], $14::integer[], $15::integer[], $16::smallint[], $17::text[], $18::jsonb[], $19::jsonb[])
                 AS c(owner, serial, seq, entity, key, prev, next) WHERE owner IN (SELECT owner FROM l)),
         o AS (INSERT INTO sync_objects (owner, entity, key, value, last_serial)
               SELECT * FROM unnest($20::uuid[], $21::smallint[], $22::text[], $23::jsonb[], $24::integer[])
                 AS o(owner, entity, key, value, last_serial) WHERE owner IN (SELECT owner FROM l)
               ON CONFLICT (owner, entity, key) DO UPDATE SET value = EXCLUDED.value, last_serial = EXCLUDED.last_serial),
         t AS (INSERT INTO sync_tickets (uuid, owner, client_serial, status, created_at, status_changed_at, errors, work)
               SELECT uuid, owner, client_serial, status, at, at, errors, NULL FROM k WHERE owner IN (SELECT owner FROM l))
       SELECT owner FROM l`,
      [
        tickets.uuids, tickets.owners, tickets.serials, tickets.statuses, tickets.times, tickets.errors, tickets.expected,
        heads.owners, heads.serials, heads.uuids, heads.times, heads.sizes,
        changes.owners, changes.serials, changes.seqs, changes.entities, changes.keys, changes.prevs, changes.nexts,
        objects.owners, objects.entities, objects.keys, objects.values, objects.serials,
      ],
    );
    const done = new Set(placed.map((row) => row.owner));
    return outcomes.map((outcome, i) => (typeof outcome === "object" && !(outcome instanceof SyncError) && !done.has(placements[i]!.owner) ? "again" : outcome));
  }

  runWork(owner: string): Promise<number> {
    // Up to a batch of an owner's queue in one transaction (one commit for them all); after a
    // failure, one ticket at a time, so that the ticket at fault fails alone.
    return drainOwnerQueue({
      batch: WORK_BATCH,
      isOutage: (error) => error instanceof StorageError,
      // A look before another transaction: most queues are empty by now.
      more: async () => (await this.#db.query("SELECT 1 FROM sync_tickets WHERE owner = $1 AND work IS NOT NULL LIMIT 1", [owner])).rows.length > 0,
      run: (batch) =>
        this.#db.transaction(async (db) => {
          // One runner per owner over every process: a runner that does not get the lock finds no rows, and leaves the queue to the one that has it.
          // In one round trip: the tickets and the context's row, locked together (the batch's commits go
          // after this head), and the objects the batch's patches read (me, the teams, the messages they name).
          const { rows } = await db.query<TicketRow & HeadRow & { seen_serial: number; objects: ObjectRow[] | null }>(
            `WITH claimed AS (
               SELECT t.*, x.head_serial, x.head_uuid, x.head_created_at FROM sync_tickets t JOIN sync_contexts x ON x.owner = t.owner
               WHERE t.owner = $1 AND t.work IS NOT NULL AND pg_try_advisory_xact_lock(hashtext($2))
               ORDER BY t.seq LIMIT $3 FOR UPDATE),
             named AS (
               SELECT 1 AS entity, jsonb_array_elements(work->'patch'->'objects'->'messages')->>'uuid' AS key FROM claimed WHERE work->>'kind' = 'patch'
               UNION
               SELECT 1, jsonb_array_elements_text(work->'patch'->'deleted_objects'->'messages') FROM claimed WHERE work->>'kind' = 'patch'
               UNION
               SELECT 2, jsonb_array_elements(work->'patch'->'objects'->'teams')->>'uuid' FROM claimed WHERE work->>'kind' = 'patch'
               UNION
               SELECT 2, jsonb_array_elements_text(work->'patch'->'deleted_objects'->'teams') FROM claimed WHERE work->>'kind' = 'patch')
             SELECT claimed.*, (SELECT head_serial FROM sync_contexts WHERE owner = $1) AS seen_serial, (SELECT jsonb_agg(jsonb_build_array(entity, key, value, last_serial)) FROM (
                 SELECT entity, key, value, last_serial FROM sync_objects WHERE owner = $1 AND entity IN (0, 2) AND value IS NOT NULL
                 UNION ALL
                 SELECT o.entity, o.key, o.value, o.last_serial FROM named CROSS JOIN LATERAL (
                   SELECT entity, key, value, last_serial FROM sync_objects WHERE owner = $1 AND entity = named.entity AND key = named.key LIMIT 1) AS o) AS read
               ) AS objects
             FROM claimed ORDER BY seq`,
            [owner, `tributary-sync-run:${owner}`, batch],
          );
          if (rows.length === 0) return 0;
          let view = new RowView();
          for (const [entity, key, value, serial] of rows[0]!.objects ?? []) view.set(ENTITIES[entity]!, key, value, serial);
          // The objects were read as of the statement's start; a commit that landed before the lock was
          // taken moved the head (the locked row is the newest): then they are read again, under the lock.
          if (rows[0]!.seen_serial !== rows[0]!.head_serial) {
            view = await loadView(db, owner, rows.flatMap((row) => (row.work?.kind === "patch" ? [row.work.patch] : [])));
          }
          const locked: Locked = { head: revisionOf(rows[0]!), view };
          for (const row of rows) await this.#run(db, row, locked);
          return rows.length;
        }),
    });
  }

  async waitingOwners(): Promise<string[]> {
    const { rows } = await this.#db.query<{ owner: string }>("SELECT DISTINCT owner FROM sync_tickets WHERE work IS NOT NULL");
    return rows.map((row) => row.owner);
  }

  async ticket(owner: string, uuid: string): Promise<TicketResult | "expired" | undefined> {
    const { rows } = await this.#db.query<TicketRow>("SELECT * FROM sync_tickets WHERE uuid = $1", [uuid]);
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
      // Changes of pruned revisions: no retained base needs them.
      [`DELETE FROM sync_changes WHERE ctid IN (
          SELECT c.ctid FROM sync_changes c
          JOIN sync_revisions n ON n.owner = c.owner AND n.serial = c.serial + 1
          WHERE n.created_at < $1 LIMIT ${SWEEP_BATCH})`, [pruned]],
      // Deleted keys last changed in a pruned revision: no retained base counts them.
      [`DELETE FROM sync_objects WHERE ctid IN (
          SELECT o.ctid FROM sync_objects o
          JOIN sync_revisions n ON n.owner = o.owner AND n.serial = o.last_serial + 1
          WHERE o.value IS NULL AND n.created_at < $1 LIMIT ${SWEEP_BATCH})`, [pruned]],
      // Tickets a patch queued while its account was being deleted (its insert saw the context before the delete committed).
      [`DELETE FROM sync_tickets WHERE ctid IN (
          SELECT t.ctid FROM sync_tickets t WHERE NOT EXISTS (SELECT 1 FROM sync_contexts x WHERE x.owner = t.owner) LIMIT ${SWEEP_BATCH})`, []],
      [`DELETE FROM sync_idempotency WHERE ctid IN (
          SELECT ctid FROM sync_idempotency WHERE created_at < $1 LIMIT ${SWEEP_BATCH})`, [now - IDEMPOTENCY_RETENTION_MS]],
      [`UPDATE sync_tickets SET data = NULL WHERE ctid IN (
          SELECT ctid FROM sync_tickets WHERE created_at < $1 AND data IS NOT NULL LIMIT ${SWEEP_BATCH})`, [now - this.#ticketRetention]],
      [`DELETE FROM sync_tickets WHERE ctid IN (
          SELECT ctid FROM sync_tickets WHERE created_at < $1 AND work IS NULL LIMIT ${SWEEP_BATCH})`, [now - FORGET_FACTOR * this.#ticketRetention]],
    ] as const;
    for (const [text, params] of batches) {
      while ((await this.#db.query(text, params)).rowCount === SWEEP_BATCH);
    }
  }

  /** Runs one queued ticket's work, in the runner's transaction, and ends the ticket. */
  async #run(db: SqlClient, row: TicketRow, locked: Locked): Promise<void> {
    const work = row.work!;
    const owner = row.owner;
    const end = (status: TicketStatus, errors: readonly ObjectErrors[], data: TicketData | null = null) =>
      db.query("UPDATE sync_tickets SET status = $2, errors = $3, data = $4, work = NULL, status_changed_at = $5 WHERE uuid = $1", [
        row.uuid, status, JSON.stringify(errors), data, Math.max(this.#now(), Number(row.created_at)),
      ]);
    if (this.#now() - Number(row.created_at) > this.#ticketRetention) {
      // Expired while queued: no one can read its result; the work is dropped (a patch is not applied).
      await end("failed", []);
      return;
    }
    const resolve = (client: SqlClient, uuid: string) => this.#resolve(client, owner, uuid);
    await runTicketWork(work, {
      // A revision made ends the ticket in the same statement.
      applyPatch: (patch) => this.#apply(db, owner, patch, { uuid: row.uuid, createdAt: Number(row.created_at) }, locked),
      snapshot: async (at) => await snapshotOf(db, owner, await resolve(db, at), resolve),
      diff: async (base, to) => await diffOf(db, owner, await resolve(db, base), await resolve(db, to), resolve),
      end: async (status, update) => void (await end(status, update.errors ?? [], update.data ?? null)),
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
    const held = locked ?? { head: await lockContext(db, owner), view: await loadView(db, owner, [patch]) };
    const errors = await this.#check(db, owner, patch, held.view);
    if (errors.length > 0) return { errors, revision: undefined };
    const changes = patchChanges(patch, held.view);
    if (changes.length === 0) return { errors: [], revision: undefined };
    held.head = await this.#commit(db, owner, held.head, held.view, changes, ticket);
    return { errors: [], revision: held.head };
  }

  /** The errors of a patch against the objects it reads: conflicts with its base first (none of it applies then), else the rules. */
  async #check(db: SqlClient, owner: string, patch: SyncPatch, view: RowView): Promise<ObjectErrors[]> {
    if (patch.base_revision !== null) {
      const conflicts = await this.#conflicts(db, owner, patch, patch.base_revision, view);
      if (conflicts.length > 0) return conflicts;
    }
    const me = view.me;
    return checkPatch(patch, view, { uuid: owner, username: typeof me?.["username"] === "string" ? me["username"] : "" });
  }

  /** What makes a patch with a base a conflict, as ticket errors: the objects changed after the base, or a base past the retention. */
  async #conflicts(db: SqlClient, owner: string, patch: SyncPatch, base: string, view: RowView): Promise<ObjectErrors[]> {
    let serial: number;
    try {
      serial = (await this.#resolve(db, owner, base)).serial;
    } catch (error) {
      if (error instanceof SyncError && error.code === "ERR_SYNC_REVISION_EXPIRED") return baseErrors(base, "expired");
      if (error instanceof SyncError && error.code === "ERR_SYNC_UNKNOWN_REVISION") return baseErrors(base, "unknown");
      throw error;
    }
    const conflicts = findConflicts(patch, view, serial);
    if (conflicts.length === 0) return [];
    const { rows } = await db.query<{ serial: number; uuid: string }>(
      "SELECT serial, uuid FROM sync_revisions WHERE owner = $1 AND serial = ANY($2::integer[])",
      [owner, conflicts.map((conflict) => conflict.serial)],
    );
    const uuids = new Map(rows.map((row) => [row.serial, row.uuid]));
    return conflictErrors(conflicts, (at) => uuids.get(at) ?? "");
  }

  /** Appends a revision holding `changes` after the locked head, in one statement, with its queued ticket's end. */
  async #commit(db: SqlClient, owner: string, head: Revision, view: RowView, changes: readonly Change[], ticket: { uuid: string; createdAt: number } | undefined): Promise<Revision> {
    const serial = head.serial + 1;
    const createdAt = Math.max(this.#now(), head.createdAt);
    const uuid = this.#uuid();
    const { seqs, entities, keys, prevs, nexts, finals, sizeDelta } = revisionRows(view, changes, serial);
    const params: unknown[] = [
      owner, serial, uuid, createdAt, seqs, entities, keys, prevs, nexts,
      finals.map((i) => entities[i]), finals.map((i) => keys[i]), finals.map((i) => nexts[i]), sizeDelta,
    ];
    const endTicket = ticket === undefined
      ? ""
      : `, t AS (UPDATE sync_tickets SET status = 'done', errors = '[]', data = NULL, work = NULL, status_changed_at = $15 WHERE uuid = $14)`;
    if (ticket !== undefined) params.push(ticket.uuid, Math.max(this.#now(), ticket.createdAt));
    // One round trip: the revision, its changes, the objects' new values, the context's head and the ticket's end.
    await db.query(
      `WITH r AS (INSERT INTO sync_revisions (owner, serial, uuid, created_at) VALUES ($1, $2, $3, $4)),
         c AS (INSERT INTO sync_changes (owner, serial, seq, entity, key, prev, next)
               SELECT $1, $2, * FROM unnest($5::integer[], $6::smallint[], $7::text[], $8::jsonb[], $9::jsonb[])),
         o AS (INSERT INTO sync_objects (owner, entity, key, value, last_serial)
               SELECT $1, e, k, v, $2 FROM unnest($10::smallint[], $11::text[], $12::jsonb[]) AS u(e, k, v)
               ON CONFLICT (owner, entity, key) DO UPDATE SET value = EXCLUDED.value, last_serial = EXCLUDED.last_serial)${endTicket}
       UPDATE sync_contexts SET head_serial = $2, head_uuid = $3, head_created_at = $4, size = size + $13 WHERE owner = $1`,
      params,
    );
    return Object.freeze({ uuid, serial, createdAt });
  }

  /** A revision of the owner's context, or why there is none, as of now. */
  async #resolve(db: SqlClient, owner: string, uuid: string): Promise<Revision> {
    const { rows } = await db.query<{ serial: number; created_at: string; ended_at: string | null }>(
      `SELECT r.serial, r.created_at, n.created_at AS ended_at FROM sync_revisions r
       LEFT JOIN sync_revisions n ON n.owner = r.owner AND n.serial = r.serial + 1
       WHERE r.uuid = $1 AND r.owner = $2`,
      [uuid, owner],
    );
    const row = rows[0];
    if (row === undefined) {
      if ((await headOf(db, owner)) === undefined) throw noContext();
      throw new SyncError("ERR_SYNC_UNKNOWN_REVISION", `Cannot find revision ${uuid}: it was never issued here`);
    }
    const createdAt = Number(row.created_at);
    const now = this.#now();
    // Retained until the retention has passed since the next revision was made (the head always is);
    // revisions are in time order, so those past it are a prefix. Expired for good, never unknown.
    if (row.ended_at !== null && Number(row.ended_at) < now - this.#retention) {
      throw new SyncError("ERR_SYNC_REVISION_EXPIRED", `Cannot use revision ${uuid}: it is past the retention window`);
    }
    return Object.freeze({ uuid, serial: row.serial, createdAt });
  }
}

/** Objects of a context loaded for a patch: `me`, the keys the patch names, every team (names are unique). */
class RowView implements ObjectView {
  readonly #tables: Tables<Map<string, SyncObject>> = [new Map(), new Map(), new Map()];
  /** The serial of each loaded key's last change, deleted ones included. */
  readonly #serials: Tables<Map<string, number>> = [new Map(), new Map(), new Map()];

  get me(): SyncObject | null {
    const first = this.#tables[0].values().next();
    return first.done === true ? null : first.value;
  }

  get(entity: EntityName, key: string): SyncObject | undefined {
    return this.#tables[INDEX[entity]]!.get(key);
  }

  objects(entity: EntityName): Iterable<SyncObject> {
    return this.#tables[INDEX[entity]]!.values();
  }

  lastChange(entity: EntityName, key: string): number | undefined {
    return this.#serials[INDEX[entity]]!.get(key);
  }

  /** Sets a key's value (null: deleted) as of the revision `serial` that last changed it. */
  set(entity: EntityName, key: string, value: SyncObject | null, serial: number): void {
    if (value === null) this.#tables[INDEX[entity]]!.delete(key);
    else this.#tables[INDEX[entity]]!.set(key, value);
    this.#serials[INDEX[entity]]!.set(key, serial);
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

/** An object as a patch's view loads it: entity, key, value (null once deleted), the serial of its last change. */
type ObjectRow = [number, string, SyncObject | null, number];

/**
 * The rows of a revision made of `changes` (each change's object before and
 * after, as JSON), and which change of each key is its last, whose value the
 * object keeps; applies them to the view, as of `serial`.
 */
function revisionRows(view: RowView, changes: readonly Change[], serial: number) {
  const seqs: number[] = [];
  const entities: number[] = [];
  const keys: string[] = [];
  const prevs: (string | null)[] = [];
  const nexts: (string | null)[] = [];
  let sizeDelta = 0;
  for (const [seq, change] of changes.entries()) {
    const prev = view.get(change.entity, change.key) ?? null;
    const next = change.value;
    sizeDelta += (next === null ? 0 : 1) - (prev === null ? 0 : 1);
    seqs.push(seq);
    entities.push(INDEX[change.entity]);
    keys.push(change.key);
    prevs.push(prev === null ? null : JSON.stringify(prev));
    nexts.push(next === null ? null : JSON.stringify(next));
    view.set(change.entity, change.key, next, serial);
  }
  const last = new Map<string, number>();
  for (const [i] of changes.entries()) last.set(`${entities[i]} ${keys[i]}`, i);
  return { seqs, entities, keys, prevs, nexts, finals: [...last.values()], sizeDelta };
}

/** The keys a patch's view reads besides `me` and the teams: every message and team the patches name, deleted ones too. */
function namedKeys(patches: readonly SyncPatch[]): { entities: number[]; keys: string[] } {
  const entities: number[] = [];
  const keys: string[] = [];
  const name = (entity: number, key: string): void => void (entities.push(entity), keys.push(key));
  for (const patch of patches) {
    for (const object of patch.objects.messages) if (typeof object["uuid"] === "string") name(1, object["uuid"]);
    for (const key of patch.deleted_objects.messages) name(1, key);
    for (const object of patch.objects.teams) if (typeof object["uuid"] === "string") name(2, object["uuid"]);
    for (const key of patch.deleted_objects.teams) name(2, key);
  }
  return { entities, keys };
}

/**
 * The objects a patch's view reads ($1 the owner, $2 and $3 the named entities and keys), each part
 * through the primary key: the cost follows the patch and the teams, not the messages kept (LIMIT 1,
 * at most one row by the key anyway, keeps the look-up a nested loop: never a hash over every message).
 * Deleted keys the patch names come too: their last change tells a retried deletion and a conflict.
 */
const VIEW_OBJECTS_SQL = `SELECT entity, key, value, last_serial FROM sync_objects WHERE owner = $1 AND entity IN (0, 2) AND value IS NOT NULL
     UNION ALL
     SELECT o.entity, o.key, o.value, o.last_serial FROM unnest($2::smallint[], $3::text[]) AS named(entity, key) CROSS JOIN LATERAL (
       SELECT entity, key, value, last_serial FROM sync_objects WHERE owner = $1 AND entity = named.entity AND key = named.key LIMIT 1) AS o`;

async function loadView(db: SqlClient, owner: string, patches: readonly SyncPatch[]): Promise<RowView> {
  const { entities, keys } = namedKeys(patches);
  const { rows } = await db.query<{ entity: number; key: string; value: SyncObject | null; last_serial: number }>(VIEW_OBJECTS_SQL, [owner, entities, keys]);
  const view = new RowView();
  for (const row of rows) view.set(ENTITIES[row.entity]!, row.key, row.value, row.last_serial);
  return view;
}

interface HeadRow {
  head_serial: number;
  head_uuid: string;
  head_created_at: string;
}

/** Locks a context's row for the rest of the transaction: commits to it take turns. */
async function lockContext(db: SqlClient, owner: string): Promise<Revision> {
  const { rows } = await db.query<HeadRow>("SELECT head_serial, head_uuid, head_created_at FROM sync_contexts WHERE owner = $1 FOR UPDATE", [owner]);
  if (rows[0] === undefined) throw noContext();
  return revisionOf(rows[0]);
}

async function headOf(db: SqlClient, owner: string): Promise<Revision | undefined> {
  const { rows } = await db.query<HeadRow>("SELECT head_serial, head_uuid, head_created_at FROM sync_contexts WHERE owner = $1", [owner]);
  return rows[0] === undefined ? undefined : revisionOf(rows[0]);
}

function revisionOf(row: HeadRow): Revision {
  return Object.freeze({ uuid: row.head_uuid, serial: row.head_serial, createdAt: Number(row.head_created_at) });
}

type Resolve = (db: SqlClient, uuid: string) => Promise<Revision>;

async function snapshotOf(db: SqlClient, owner: string, at: Revision | undefined, resolve: Resolve): Promise<SyncData> {
  const head = await headOf(db, owner);
  if (head === undefined) throw noContext();
  const revision = at === undefined ? head : await resolve(db, at.uuid);
  const state: Tables<Map<string, SyncObject>> = [new Map(), new Map(), new Map()];
  const { rows } = await db.query<{ entity: number; key: string; value: SyncObject }>(
    "SELECT entity, key, value FROM sync_objects WHERE owner = $1 AND value IS NOT NULL",
    [owner],
  );
  for (const row of rows) state[row.entity as 0 | 1 | 2].set(row.key, row.value);
  if (revision.serial < head.serial) {
    // A key changed after the revision was, at the revision, what its first change after it found.
    const { rows: undone } = await db.query<{ entity: number; key: string; prev: SyncObject | null }>(
      `SELECT DISTINCT ON (entity, key) entity, key, prev FROM sync_changes
       WHERE owner = $1 AND serial > $2 ORDER BY entity, key, serial, seq`,
      [owner, revision.serial],
    );
    for (const row of undone) {
      const table = state[row.entity as 0 | 1 | 2];
      if (row.prev === null) table.delete(row.key);
      else table.set(row.key, row.prev);
    }
  }
  return buildSnapshot(revision, state);
}

async function diffOf(db: SqlClient, owner: string, base: Revision, to: Revision, resolve: Resolve): Promise<SyncDiff | undefined> {
  const from = await resolve(db, base.uuid);
  const until = await resolve(db, to.uuid);
  if (from.serial > until.serial) throw new RangeError(`Cannot diff revisions: the base is newer than the target: base serial ${from.serial}, target serial ${until.serial}`);
  if (from.serial === until.serial) return undefined;
  const seen: Tables<Map<string, Seen>> = [new Map(), new Map(), new Map()];
  const { rows } = await db.query<{ entity: number; key: string; prev: SyncObject | null; next: SyncObject | null }>(
    "SELECT entity, key, prev, next FROM sync_changes WHERE owner = $1 AND serial > $2 AND serial <= $3 ORDER BY serial, seq",
    [owner, from.serial, until.serial],
  );
  for (const row of rows) {
    const entries = seen[row.entity as 0 | 1 | 2];
    const entry = entries.get(row.key);
    if (entry === undefined) entries.set(row.key, { existed: row.prev !== null, value: row.next });
    else entry.value = row.next;
  }
  return buildDiff(from.uuid, until, seen);
}

function ticketOf(row: TicketRow): Ticket {
  return Object.freeze({
    uuid: row.uuid,
    client_serial: row.client_serial === null ? null : Number(row.client_serial),
    status: row.status,
    created_at: formatTimestamp(Number(row.created_at)),
    status_changed_at: formatTimestamp(Number(row.status_changed_at)),
    errors: Object.freeze(row.errors),
  });
}

function noContext(): SyncError {
  return new SyncError("ERR_SYNC_NO_CONTEXT", "Cannot sync: this user has no sync context");
}
