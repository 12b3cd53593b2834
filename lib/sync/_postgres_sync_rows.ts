import type { SqlClient } from "../storage/mod.ts";
import { SyncError } from "./errors.ts";
import { buildDiff, buildSnapshot, type Seen, type Tables } from "./_revision_data.ts";
import type { ObjectView } from "./revision_log.ts";
import type { TicketWork } from "./sync_store.ts";
import type { Ticket, TicketData, TicketStatus } from "./ticket_store.ts";
import type {
  Change,
  EntityName,
  ObjectErrors,
  Revision,
  SyncData,
  SyncDiff,
  SyncObject,
  SyncPatch,
} from "./types.ts";
import { formatTimestamp } from "./_time.ts";
import {
  DIFF_CHANGES_SQL,
  HEAD_SQL,
  LOCK_CONTEXT_SQL,
  SNAPSHOT_OBJECTS_SQL,
  UNDONE_CHANGES_SQL,
  VIEW_OBJECTS_SQL,
} from "./_postgres_sync_sql.ts";

// The rows of PostgresSyncStore's tables (postgres_sync_store.ts) and what
// they map to: tickets, heads and objects read into values, the objects a
// patch reads as an ObjectView, the rows a revision writes, and the reads of
// snapshots and diffs, which a request and a queued ticket both make.

/** The entities by their number in the tables. */
export const ENTITIES: readonly EntityName[] = ["me", "messages", "teams"];
/** The number of each entity in the tables. */
export const INDEX: Readonly<Record<EntityName, number>> = { me: 0, messages: 1, teams: 2 };

/** A row of sync_tickets. */
export interface TicketRow {
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

/** Objects of a context loaded for a patch: `me`, the keys the patch names, every team (names are unique). */
export class RowView implements ObjectView {
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

/** An object as a patch's view loads it: entity, key, value (null once deleted), the serial of its last change. */
export type ObjectRow = [number, string, SyncObject | null, number];

/**
 * The rows of a revision made of `changes` (each change's object before and
 * after, as JSON), and which change of each key is its last, whose value the
 * object keeps; applies them to the view, as of `serial`.
 */
export function revisionRows(view: RowView, changes: readonly Change[], serial: number) {
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
export function namedKeys(patches: readonly SyncPatch[]): { entities: number[]; keys: string[] } {
  const entities: number[] = [];
  const keys: string[] = [];
  const name = (entity: number, key: string): void => void (entities.push(entity), keys.push(key));
  for (const patch of patches) {
    for (const object of patch.objects.messages) {
      if (typeof object["uuid"] === "string") name(1, object["uuid"]);
    }
    for (const key of patch.deleted_objects.messages) name(1, key);
    for (const object of patch.objects.teams) {
      if (typeof object["uuid"] === "string") name(2, object["uuid"]);
    }
    for (const key of patch.deleted_objects.teams) name(2, key);
  }
  return { entities, keys };
}

/**
 * The keys patches being placed read besides `me` and the teams, each with its
 * owner: the named rows of {@linkcode PLACE_READ_SQL} ($2 to $4).
 */
export function placedKeys(
  placements: readonly { readonly owner: string; readonly patch: SyncPatch }[],
): {
  owners: string[];
  entities: number[];
  keys: string[];
} {
  const named = { owners: [] as string[], entities: [] as number[], keys: [] as string[] };
  for (const placement of placements) {
    const { entities, keys } = namedKeys([placement.patch]);
    for (const [i, key] of keys.entries()) {
      named.owners.push(placement.owner);
      named.entities.push(entities[i]!);
      named.keys.push(key);
    }
  }
  return named;
}

/** A placed patch's ended ticket, as {@linkcode PlacementRows.addTicket} takes it. */
export interface PlacedTicket {
  readonly uuid: string;
  readonly owner: string;
  readonly clientSerial: number | null;
  readonly status: TicketStatus;
  readonly at: number;
  readonly errors: readonly ObjectErrors[];
  /** The head the patch was checked against: the ticket is written only while it is still the owner's. */
  readonly expected: number;
}

/**
 * The rows one placing statement writes ({@linkcode PLACE_WRITE_SQL}), column
 * by column: each placed patch's ended ticket and, when it made a revision,
 * the owner's new head, the revision's changes and its objects' new values.
 */
export class PlacementRows {
  readonly #heads = {
    owners: [] as string[],
    serials: [] as number[],
    uuids: [] as string[],
    times: [] as number[],
    sizes: [] as number[],
  };
  readonly #changes = {
    owners: [] as string[],
    serials: [] as number[],
    seqs: [] as number[],
    entities: [] as number[],
    keys: [] as string[],
    prevs: [] as (string | null)[],
    nexts: [] as (string | null)[],
  };
  readonly #objects = {
    owners: [] as string[],
    entities: [] as number[],
    keys: [] as string[],
    values: [] as (string | null)[],
    serials: [] as number[],
  };
  readonly #tickets = {
    uuids: [] as string[],
    owners: [] as string[],
    serials: [] as (number | null)[],
    statuses: [] as TicketStatus[],
    times: [] as number[],
    errors: [] as string[],
    expected: [] as number[],
  };

  /** Tickets added. */
  get tickets(): number {
    return this.#tickets.uuids.length;
  }

  /** Adds the revision a patch made: the owner's new head, the revision's changes and its objects' new values. */
  addRevision(
    owner: string,
    serial: number,
    uuid: string,
    createdAt: number,
    rows: ReturnType<typeof revisionRows>,
  ): void {
    const heads = this.#heads;
    const changes = this.#changes;
    const objects = this.#objects;
    heads.owners.push(owner);
    heads.serials.push(serial);
    heads.uuids.push(uuid);
    heads.times.push(createdAt);
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

  /** Adds a placed patch's ended ticket. */
  addTicket(ticket: PlacedTicket): void {
    const tickets = this.#tickets;
    tickets.uuids.push(ticket.uuid);
    tickets.owners.push(ticket.owner);
    tickets.serials.push(ticket.clientSerial);
    tickets.statuses.push(ticket.status);
    tickets.times.push(ticket.at);
    tickets.errors.push(JSON.stringify(ticket.errors));
    tickets.expected.push(ticket.expected);
  }

  /** The statement's parameters, $1 to $24. */
  params(): unknown[] {
    const [heads, changes, objects, tickets] = [
      this.#heads,
      this.#changes,
      this.#objects,
      this.#tickets,
    ];
    return [
      tickets.uuids,
      tickets.owners,
      tickets.serials,
      tickets.statuses,
      tickets.times,
      tickets.errors,
      tickets.expected,
      heads.owners,
      heads.serials,
      heads.uuids,
      heads.times,
      heads.sizes,
      changes.owners,
      changes.serials,
      changes.seqs,
      changes.entities,
      changes.keys,
      changes.prevs,
      changes.nexts,
      objects.owners,
      objects.entities,
      objects.keys,
      objects.values,
      objects.serials,
    ];
  }
}

/** Loads the objects the patches read (see {@linkcode VIEW_OBJECTS_SQL}) into a view. */
export async function loadView(
  db: SqlClient,
  owner: string,
  patches: readonly SyncPatch[],
): Promise<RowView> {
  const { entities, keys } = namedKeys(patches);
  const { rows } = await db.query<
    { entity: number; key: string; value: SyncObject | null; last_serial: number }
  >(VIEW_OBJECTS_SQL, [owner, entities, keys]);
  const view = new RowView();
  for (const row of rows) view.set(ENTITIES[row.entity]!, row.key, row.value, row.last_serial);
  return view;
}

/** A context's head, as its row holds it. */
export interface HeadRow {
  head_serial: number;
  head_uuid: string;
  head_created_at: string;
}

/** Locks a context's row for the rest of the transaction: commits to it take turns. */
export async function lockContext(db: SqlClient, owner: string): Promise<Revision> {
  const { rows } = await db.query<HeadRow>(LOCK_CONTEXT_SQL, [owner]);
  if (rows[0] === undefined) throw noContext();
  return revisionOf(rows[0]);
}

/** A context's head; undefined when the owner has none. */
export async function headOf(db: SqlClient, owner: string): Promise<Revision | undefined> {
  const { rows } = await db.query<HeadRow>(HEAD_SQL, [owner]);
  return rows[0] === undefined ? undefined : revisionOf(rows[0]);
}

/** The head a context's row holds. */
export function revisionOf(row: HeadRow): Revision {
  return Object.freeze({
    uuid: row.head_uuid,
    serial: row.head_serial,
    createdAt: Number(row.head_created_at),
  });
}

/** Resolves a revision id of the owner, or throws why it cannot (see PostgresSyncStore's #resolve). */
export type Resolve = (db: SqlClient, uuid: string) => Promise<Revision>;

/** Every object at a revision (the head when undefined): the current objects, with what changed after the revision undone. */
export async function snapshotOf(
  db: SqlClient,
  owner: string,
  at: Revision | undefined,
  resolve: Resolve,
): Promise<SyncData> {
  const head = await headOf(db, owner);
  if (head === undefined) throw noContext();
  const revision = at === undefined ? head : await resolve(db, at.uuid);
  const state: Tables<Map<string, SyncObject>> = [new Map(), new Map(), new Map()];
  const { rows } = await db.query<{ entity: number; key: string; value: SyncObject }>(
    SNAPSHOT_OBJECTS_SQL,
    [owner],
  );
  for (const row of rows) state[row.entity as 0 | 1 | 2].set(row.key, row.value);
  if (revision.serial < head.serial) {
    // A key changed after the revision was, at the revision, what its first change after it found.
    const { rows: undone } = await db.query<
      { entity: number; key: string; prev: SyncObject | null }
    >(
      UNDONE_CHANGES_SQL,
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

/** What changed after `base` up to `to`, from the changes between them; undefined when they are the same revision. */
export async function diffOf(
  db: SqlClient,
  owner: string,
  base: Revision,
  to: Revision,
  resolve: Resolve,
): Promise<SyncDiff | undefined> {
  const from = await resolve(db, base.uuid);
  const until = await resolve(db, to.uuid);
  if (from.serial > until.serial) {
    throw new RangeError(
      `Cannot diff revisions: the base is newer than the target: base serial ${from.serial}, target serial ${until.serial}`,
    );
  }
  if (from.serial === until.serial) return undefined;
  const seen: Tables<Map<string, Seen>> = [new Map(), new Map(), new Map()];
  const { rows } = await db.query<
    { entity: number; key: string; prev: SyncObject | null; next: SyncObject | null }
  >(
    DIFF_CHANGES_SQL,
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

/** A ticket as the API shows it, from its row. */
export function ticketOf(row: TicketRow): Ticket {
  return Object.freeze({
    uuid: row.uuid,
    client_serial: row.client_serial === null ? null : Number(row.client_serial),
    status: row.status,
    created_at: formatTimestamp(Number(row.created_at)),
    status_changed_at: formatTimestamp(Number(row.status_changed_at)),
    errors: Object.freeze(row.errors),
  });
}

/** The error of an owner with no context. */
export function noContext(): SyncError {
  return new SyncError("ERR_SYNC_NO_CONTEXT", "Cannot sync: this user has no sync context");
}
