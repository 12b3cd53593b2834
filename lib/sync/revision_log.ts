// One cohesive structure, over 600 lines on purpose: RevisionLog is a single
// data structure whose parts share its private indexes (revisions by serial
// and by id, the change records, the keys in order of their last change, the
// current objects, the ids of pruned revisions) and keep them consistent
// through every commit, prune, compaction, export and restore. Apart, each
// part would need the others' private state. Beside the class are only its
// options, its exported state, the view it implements and the checks of
// values it takes in.
import { SyncError } from "./errors.ts";
import type {
  Change,
  EntityName,
  FieldValue,
  Revision,
  SyncData,
  SyncDiff,
  SyncObject,
} from "./types.ts";
import { buildDiff, buildSnapshot, firstValue, type Seen, type Tables } from "./_revision_data.ts";
import { readClock } from "./_time.ts";

/** Options of {@linkcode RevisionLog}. */
export interface RevisionLogOptions {
  /** The clock, in epoch milliseconds; a clock that steps back is read as not moving. */
  now: () => number;
  /** Gives a fresh (version 4) UUID for each revision. */
  uuid: () => string;
  /** The initial `me` object; its `uuid` is its key. */
  me: SyncObject;
}

/**
 * The current objects of a context, as checking and applying a patch read
 * them: a {@linkcode RevisionLog}, or the rows a database store loaded.
 */
export interface ObjectView {
  /** The current `me`, or null if it was deleted. */
  readonly me: SyncObject | null;
  /** A current object by entity and key. */
  get(entity: EntityName, key: string): SyncObject | undefined;
  /** The current objects of an entity, in no particular order. */
  objects(entity: EntityName): Iterable<SyncObject>;
  /**
   * The serial of the revision that last changed (or deleted) an object,
   * when that revision is retained; undefined for a key never changed, or
   * last changed before every retained revision.
   */
  lastChange(entity: EntityName, key: string): number | undefined;
}

/**
 * What a log knows of a revision id: `known` (retained), `pruned` (issued,
 * then dropped past the retention window: the API answers 410), `unknown`
 * (never issued here: 404).
 */
export type RevisionStatus = "known" | "pruned" | "unknown";

/** Entities by their index in the log's tables: `me`, `messages`, `teams`. */
export type EntityIndex = 0 | 1 | 2;

/**
 * A log's whole state as plain data, for a journal's snapshot: what
 * {@linkcode RevisionLog.restore} rebuilds it from.
 */
export interface RevisionLogState {
  /** The serial of the oldest retained revision. */
  readonly firstSerial: number;
  /** The retained revisions, oldest first: id, creation time and number of changes. */
  readonly revisions: readonly (readonly [uuid: string, createdAt: number, changes: number])[];
  /** Their changes, in order: entity, key, the object before and after. */
  readonly records: readonly (readonly [
    entity: EntityIndex,
    key: string,
    prev: SyncObject | null,
    next: SyncObject | null,
  ])[];
  /** The current objects of each entity. */
  readonly objects: readonly [readonly SyncObject[], readonly SyncObject[], readonly SyncObject[]];
  /** Ids of pruned revisions still answered as expired, with their creation times, oldest first. */
  readonly pruned: readonly (readonly [uuid: string, createdAt: number])[];
}

/** One change as the log keeps it: what the object was before and after. */
interface ChangeRecord {
  readonly entity: EntityIndex;
  readonly key: string;
  readonly prev: SyncObject | null;
  readonly next: SyncObject | null;
}

/** A key in the list of keys by last change, newest last. */
interface KeyNode {
  readonly entity: EntityIndex;
  readonly key: string;
  /** The serial of the key's last change. */
  last: number;
  older: KeyNode | undefined;
  newer: KeyNode | undefined;
}

/** Dead entries leave the front of the tables once this many and half of them are dead. */
const COMPACT_MIN = 1024;

/**
 * The change log and current state of one sync context. Each commit makes a
 * revision with the next serial; each change is recorded with the object's
 * value before and after. A diff walks only the records after its base, so
 * its cost grows with the number of changes since the base, not with the
 * length of the history or the number of objects. Keys are also kept in
 * order of their last change, so that {@linkcode RevisionLog.changedSince}
 * visits only the keys it counts.
 *
 * @example
 * ```ts
 * const log = new RevisionLog({ now: Date.now, uuid: () => crypto.randomUUID(), me });
 * const base = log.head;
 * log.commit([{ entity: "teams", key: team.uuid, value: team }]);
 * log.diff(base); // { …, objects: { me: null, messages: [], teams: [team] } }
 * ```
 */
export class RevisionLog implements ObjectView {
  readonly #now: () => number;
  readonly #uuid: () => string;
  // Revision `serial` sits at index `serial - 1 - #revisionsDropped` of these three.
  readonly #revisionUuids: string[] = [];
  readonly #revisionTimes: number[] = [];
  /** The absolute index of each revision's first change record. */
  readonly #revisionStarts: number[] = [];
  #revisionsDropped = 0;
  /** The serial of the oldest retained revision. */
  #firstSerial = 1;
  readonly #serials = new Map<string, number>();
  /** Ids of pruned revisions with their creation times, oldest first. */
  readonly #pruned = new Map<string, number>();
  // Record with absolute index `a` sits at index `a - #recordsDropped`.
  readonly #records: ChangeRecord[] = [];
  #recordsDropped = 0;
  readonly #state: Tables<Map<string, SyncObject>> = [new Map(), new Map(), new Map()];
  readonly #nodes: Tables<Map<string, KeyNode>> = [new Map(), new Map(), new Map()];
  #newestNode: KeyNode | undefined;
  #head: Revision;
  #headSnapshot: SyncData | undefined;

  /**
   * Creates a log whose revision 1 holds `me`.
   * @param options the clock, the UUID source and the initial `me`
   * @param from a state to take instead (see {@linkcode RevisionLog.restore}); `me` is then ignored
   * @throws {TypeError} when `now` or `uuid` is not a function or `me` has no UUID key
   */
  constructor(options: RevisionLogOptions, from?: RevisionLogState) {
    if (typeof options.now !== "function" || typeof options.uuid !== "function") {
      throw new TypeError("Cannot create a revision log: now and uuid must be functions");
    }
    this.#now = options.now;
    this.#uuid = options.uuid;
    if (from !== undefined) {
      this.#head = this.#take(from);
      return;
    }
    const me: unknown = options.me;
    const key = isObject(me) ? me["uuid"] : undefined;
    if (typeof key !== "string") {
      throw new TypeError("Cannot create a revision log: me must be an object with a string uuid");
    }
    this.#head = this.#append(this.#prepare([{ entity: "me", key, value: options.me }]), 1, 0);
  }

  /**
   * Rebuilds a log from {@linkcode RevisionLog.export}'s data.
   * @param state the exported state
   * @param options the clock and the UUID source for what comes next (`me` is ignored)
   * @returns the log
   * @throws {TypeError} when the state is not one a log exported
   */
  static restore(state: RevisionLogState, options: RevisionLogOptions): RevisionLog {
    return new RevisionLog(options, state);
  }

  /**
   * The log's whole state as plain data: the retained revisions with their
   * changes, the current objects, and the pruned ids still remembered.
   * @returns the state
   */
  export(): RevisionLogState {
    const revisions: [string, number, number][] = [];
    const records: [EntityIndex, string, SyncObject | null, SyncObject | null][] = [];
    for (let serial = this.#firstSerial; serial <= this.#head.serial; serial++) {
      const index = serial - 1 - this.#revisionsDropped;
      const start = this.#startOf(serial);
      const end = this.#startOf(serial + 1);
      revisions.push([
        item(this.#revisionUuids, index),
        item(this.#revisionTimes, index),
        end - start,
      ]);
      for (let a = start; a < end; a++) {
        const record = this.#record(a);
        records.push([record.entity, record.key, record.prev, record.next]);
      }
    }
    return {
      firstSerial: this.#firstSerial,
      revisions,
      records,
      objects: [[...this.#state[0].values()], [...this.#state[1].values()], [
        ...this.#state[2].values(),
      ]],
      pruned: [...this.#pruned],
    };
  }

  /** The newest revision. */
  get head(): Revision {
    return this.#head;
  }

  /** The oldest revision still retained (the head when everything else was pruned). */
  get oldest(): Revision {
    return this.#revisionAt(this.#firstSerial);
  }

  /** The number of current objects, `me` included: what a snapshot lists. */
  get size(): number {
    return this.#state[0].size + this.#state[1].size + this.#state[2].size;
  }

  /** The current `me`, or null if it was deleted. */
  get me(): SyncObject | null {
    return firstValue(this.#state[0]);
  }

  /**
   * Finds a current object.
   * @param entity its entity
   * @param key its key
   * @returns the frozen object, or undefined when none has that key
   */
  get(entity: EntityName, key: string): SyncObject | undefined {
    return this.#state[entityIndex(entity)].get(key);
  }

  /**
   * Lists the current objects of an entity, in no particular order.
   * @param entity the entity
   * @returns the frozen objects
   */
  objects(entity: EntityName): IterableIterator<SyncObject> {
    return this.#state[entityIndex(entity)].values();
  }

  lastChange(entity: EntityName, key: string): number | undefined {
    return this.#nodes[entityIndex(entity)].get(key)?.last;
  }

  /**
   * A retained revision by its serial.
   * @param serial from the oldest retained to the head's
   * @returns the revision
   * @throws {RangeError} for a serial that is not retained
   */
  at(serial: number): Revision {
    if (!Number.isSafeInteger(serial) || serial < this.#firstSerial || serial > this.#head.serial) {
      throw new RangeError(
        `Cannot find revision serial ${serial}: retained are ${this.#firstSerial} to ${this.#head.serial}`,
      );
    }
    return this.#revisionAt(serial);
  }

  /**
   * Finds a retained revision by its id, in constant time.
   * @param uuid the revision's id
   * @returns the revision, or undefined when it was pruned or never issued
   */
  revision(uuid: string): Revision | undefined {
    const serial = this.#serials.get(uuid);
    return serial === undefined ? undefined : this.#revisionAt(serial);
  }

  /**
   * Finds a retained revision by its id, or says why there is none.
   * @param uuid the revision's id
   * @returns the revision
   * @throws {SyncError} `ERR_SYNC_REVISION_EXPIRED` when it was pruned,
   * `ERR_SYNC_UNKNOWN_REVISION` when never issued
   */
  resolve(uuid: string): Revision {
    const serial = this.#serials.get(uuid);
    if (serial === undefined) throw this.#missing(uuid);
    return this.#revisionAt(serial);
  }

  /**
   * Tells what the log knows of a revision id.
   * @param uuid the revision's id
   * @returns `known`, `pruned` or `unknown`
   */
  status(uuid: string): RevisionStatus {
    if (this.#serials.has(uuid)) return "known";
    return this.#pruned.has(uuid) ? "pruned" : "unknown";
  }

  /**
   * Tells whether a revision was issued here and then pruned.
   * @param uuid the revision's id
   * @returns whether it was pruned
   */
  isPruned(uuid: string): boolean {
    return this.#pruned.has(uuid);
  }

  /**
   * Applies changes atomically as one new revision. Values are stored as
   * frozen copies, so the caller's objects stay its own.
   * @param changes at least one change; a key may appear more than once, the last change wins
   * @returns the new head
   * @throws {TypeError} when there are no changes, a change is malformed (unknown entity,
   * `value.uuid` other than `key`, a field that is not a string, boolean or null), it would
   * leave more than one `me`, or the UUID source repeats itself
   * @throws {RangeError} when the clock gives something other than a time
   */
  commit(changes: readonly Change[]): Revision {
    const prepared = this.#prepare(changes);
    this.#head = this.#append(prepared, this.#head.serial + 1, this.#head.createdAt);
    this.#headSnapshot = undefined;
    return this.#head;
  }

  /**
   * Lists every object as of a revision. The head's snapshot is kept until
   * the next commit; an older one costs the objects plus the changes since.
   * @param at the revision
   * @default {head}
   * @returns the snapshot, lists sorted by `uuid`
   * @throws {SyncError} `ERR_SYNC_REVISION_EXPIRED` or `ERR_SYNC_UNKNOWN_REVISION` when `at`
   * is not retained
   */
  snapshot(at: Revision = this.#head): SyncData {
    const serial = this.#serialOf(at, "take a snapshot at");
    if (serial === this.#head.serial) {
      this.#headSnapshot ??= buildSnapshot(this.#head, this.#state);
      return this.#headSnapshot;
    }
    const [me, messages, teams] = this.#state;
    const state: Tables<Map<string, SyncObject>> = [new Map(me), new Map(messages), new Map(teams)];
    const stop = this.#startOf(serial + 1);
    for (let a = this.#startOf(this.#head.serial + 1) - 1; a >= stop; a--) {
      const record = this.#record(a);
      if (record.prev === null) state[record.entity].delete(record.key);
      else state[record.entity].set(record.key, record.prev);
    }
    return buildSnapshot(this.#revisionAt(serial), state);
  }

  /**
   * Lists what changed after `base` up to `to`: the state at `to` of every
   * object created or updated in between that exists at `to`, and the key of
   * every object that existed at `base` and not at `to`. An object created
   * and deleted in between appears nowhere. Costs the number of changes in
   * between, whatever the history or the number of objects.
   * @param base the client's revision
   * @param to the target revision
   * @default {head}
   * @returns the diff, or undefined when `base` is `to`; a diff can be empty when
   * changes cancelled out, and still moves the client to `to`
   * @throws {SyncError} `ERR_SYNC_REVISION_EXPIRED` or `ERR_SYNC_UNKNOWN_REVISION` when either
   * is not retained
   * @throws {RangeError} when `base` is newer than `to`
   */
  diff(base: Revision, to: Revision = this.#head): SyncDiff | undefined {
    const from = this.#serialOf(base, "diff from");
    const until = this.#serialOf(to, "diff to");
    if (from > until) {
      const serials = `base serial ${from}, target serial ${until}`;
      throw new RangeError(`Cannot diff revisions: the base is newer than the target: ${serials}`);
    }
    if (from === until) return undefined;
    const seen: Tables<Map<string, Seen>> = [new Map(), new Map(), new Map()];
    const end = this.#startOf(until + 1);
    for (let a = this.#startOf(from + 1); a < end; a++) {
      const record = this.#record(a);
      const entries = seen[record.entity];
      const entry = entries.get(record.key);
      if (entry === undefined) {
        entries.set(record.key, { existed: record.prev !== null, value: record.next });
      } else {
        entry.value = record.next;
      }
    }
    return buildDiff(base.uuid, this.#revisionAt(until), seen);
  }

  /**
   * Counts the distinct keys changed after `base`, visiting only those keys.
   * @param base the client's revision
   * @returns how many objects a diff from `base` to the head would mention at most
   * @throws {SyncError} `ERR_SYNC_REVISION_EXPIRED` or `ERR_SYNC_UNKNOWN_REVISION` when `base`
   * is not retained
   */
  changedSince(base: Revision): number {
    const serial = this.#serialOf(base, "count changes since");
    let count = 0;
    let node = this.#newestNode;
    while (node !== undefined && node.last > serial) {
      count++;
      node = node.older;
    }
    return count;
  }

  /**
   * Forgets the revisions that stopped being the head before a time (the
   * next revision was made earlier), with their change records: a device up
   * to date at a revision keeps it as a base for the whole retention after
   * the next change, however long it was the head. Their ids are remembered
   * as pruned for good, so that a diff from one answers "expired", never
   * "unknown" (an id and a time each). Costs the pruned changes (amortized).
   * @param before epoch milliseconds; revisions followed by one made earlier are dropped
   * @returns how many revisions were dropped
   * @throws {TypeError} when `before` is not a number
   */
  prune(before: number): number {
    if (typeof before !== "number" || Number.isNaN(before)) {
      throw new TypeError(`Cannot prune revisions: expected a time, got ${String(before)}`);
    }
    let count = 0;
    while (this.#firstSerial < this.#head.serial) {
      const serial = this.#firstSerial;
      const index = serial - 1 - this.#revisionsDropped;
      // The time it stopped being the head: when the next revision was made.
      if (!(item(this.#revisionTimes, index + 1) < before)) break;
      const uuid = item(this.#revisionUuids, index);
      this.#serials.delete(uuid);
      this.#pruned.set(uuid, item(this.#revisionTimes, index));
      // A key last changed here is older than every retained base: changedSince never counts it.
      const end = this.#startOf(serial + 1);
      for (let a = this.#startOf(serial); a < end; a++) {
        const record = this.#record(a);
        const nodes = this.#nodes[record.entity];
        const node = nodes.get(record.key);
        if (node !== undefined && node.last <= serial) {
          this.#unlink(node);
          nodes.delete(record.key);
        }
      }
      this.#firstSerial++;
      count++;
    }
    this.#compact();
    return count;
  }

  /** Checks changes and copies their values, frozen; throws before anything is applied. */
  #prepare(changes: readonly Change[]): ChangeRecord[] {
    if (!Array.isArray(changes) || changes.length === 0) {
      throw new TypeError("Cannot commit: expected a non-empty array of changes");
    }
    const prepared: ChangeRecord[] = [];
    const meExists = new Map<string, boolean>();
    let meCount = this.#state[0].size;
    for (const change of changes) {
      const candidate: unknown = change;
      if (!isObject(candidate)) throw new TypeError("Cannot commit: a change must be an object");
      const entity = entityIndex(candidate["entity"]);
      const key = candidate["key"];
      if (typeof key !== "string") {
        throw new TypeError("Cannot commit: a change's key must be a string");
      }
      const value = frozenValue(candidate["value"], key);
      if (entity === 0) {
        const existed = meExists.get(key) ?? this.#state[0].has(key);
        meCount += (value === null ? 0 : 1) - (existed ? 1 : 0);
        meExists.set(key, value !== null);
      }
      prepared.push({ entity, key, prev: null, next: value });
    }
    if (meCount > 1) throw new TypeError("Cannot commit: the changes would leave more than one me");
    return prepared;
  }

  /** Appends a revision holding prepared changes. */
  #append(changes: readonly ChangeRecord[], serial: number, floor: number): Revision {
    const createdAt = readClock(this.#now, floor);
    const uuid = this.#uuid();
    const used = this.#serials.has(uuid) || this.#pruned.has(uuid);
    if (typeof uuid !== "string" || uuid === "" || used) {
      throw new TypeError(`Cannot commit: the uuid source gave an empty or used id: ${uuid}`);
    }
    this.#revisionUuids.push(uuid);
    this.#revisionTimes.push(createdAt);
    this.#revisionStarts.push(this.#recordsDropped + this.#records.length);
    this.#serials.set(uuid, serial);
    for (const change of changes) {
      const state = this.#state[change.entity];
      const prev = state.get(change.key) ?? null;
      this.#records.push({ entity: change.entity, key: change.key, prev, next: change.next });
      if (change.next === null) state.delete(change.key);
      else state.set(change.key, change.next);
      this.#touch(change.entity, change.key, serial);
    }
    return Object.freeze({ uuid, serial, createdAt });
  }

  /** Takes an exported state; returns the head. */
  #take(from: RevisionLogState): Revision {
    const invalid = (): TypeError =>
      new TypeError("Cannot restore a revision log: the state is not one a log exported");
    if (
      !Number.isSafeInteger(from.firstSerial) || from.firstSerial < 1 ||
      !Array.isArray(from.revisions) || from.revisions.length === 0
    ) {
      throw invalid();
    }
    this.#firstSerial = from.firstSerial;
    this.#revisionsDropped = from.firstSerial - 1;
    let at = 0;
    for (const [i, [uuid, createdAt, count]] of from.revisions.entries()) {
      const serial = from.firstSerial + i;
      if (
        typeof uuid !== "string" || typeof createdAt !== "number" || !Number.isSafeInteger(count) ||
        count < 0
      ) throw invalid();
      this.#revisionUuids.push(uuid);
      this.#revisionTimes.push(createdAt);
      this.#revisionStarts.push(at);
      this.#serials.set(uuid, serial);
      for (let k = 0; k < count; k++, at++) {
        const record = from.records[at];
        if (record === undefined) throw invalid();
        const [entity, key, prev, next] = record;
        const checked = checkIndex(entity);
        this.#records.push({
          entity: checked,
          key,
          prev: frozenValue(prev, key),
          next: frozenValue(next, key),
        });
        this.#touch(checked, key, serial);
      }
    }
    if (at !== from.records.length) throw invalid();
    for (const [entity, objects] of from.objects.entries()) {
      const state = this.#state[checkIndex(entity)];
      for (const object of objects) {
        const key = object["uuid"];
        if (typeof key !== "string") throw invalid();
        state.set(key, frozenValue(object, key)!);
      }
    }
    for (const [uuid, createdAt] of from.pruned) this.#pruned.set(uuid, createdAt);
    const last = from.revisions[from.revisions.length - 1]!;
    return Object.freeze({
      uuid: last[0],
      serial: from.firstSerial + from.revisions.length - 1,
      createdAt: last[1],
    });
  }

  /** Moves a key to the newest end of the list of keys by last change. */
  #touch(entity: EntityIndex, key: string, serial: number): void {
    const nodes = this.#nodes[entity];
    let node = nodes.get(key);
    if (node === undefined) {
      node = { entity, key, last: serial, older: undefined, newer: undefined };
      nodes.set(key, node);
    } else {
      node.last = serial;
      if (node === this.#newestNode) return;
      this.#unlink(node);
    }
    node.older = this.#newestNode;
    node.newer = undefined;
    if (this.#newestNode !== undefined) this.#newestNode.newer = node;
    this.#newestNode = node;
  }

  #unlink(node: KeyNode): void {
    if (node.older !== undefined) node.older.newer = node.newer;
    if (node.newer !== undefined) node.newer.older = node.older;
    else this.#newestNode = node.older;
    node.older = undefined;
    node.newer = undefined;
  }

  /** Drops dead entries from the front of the tables once they are many (amortized). */
  #compact(): void {
    const deadRecords = this.#startOf(this.#firstSerial) - this.#recordsDropped;
    if (deadRecords >= COMPACT_MIN && deadRecords * 2 >= this.#records.length) {
      this.#records.splice(0, deadRecords);
      this.#recordsDropped += deadRecords;
    }
    const deadRevisions = this.#firstSerial - 1 - this.#revisionsDropped;
    if (deadRevisions >= COMPACT_MIN && deadRevisions * 2 >= this.#revisionUuids.length) {
      this.#revisionUuids.splice(0, deadRevisions);
      this.#revisionTimes.splice(0, deadRevisions);
      this.#revisionStarts.splice(0, deadRevisions);
      this.#revisionsDropped += deadRevisions;
    }
  }

  /** The serial of a revision given by a caller, checked to be retained and of this log. */
  #serialOf(revision: Revision, action: string): number {
    const serial = this.#serials.get(revision.uuid);
    if (serial === undefined) throw this.#missing(revision.uuid);
    if (serial !== revision.serial) {
      const wrong = `its serial ${revision.serial} is not ${serial}`;
      throw new TypeError(`Cannot ${action} revision ${revision.uuid}: ${wrong}`);
    }
    return serial;
  }

  #missing(uuid: string): SyncError {
    if (this.#pruned.has(uuid)) {
      const message = `Cannot use revision ${uuid}: it is past the retention window`;
      return new SyncError("ERR_SYNC_REVISION_EXPIRED", message);
    }
    const message = `Cannot find revision ${uuid}: it was never issued here`;
    return new SyncError("ERR_SYNC_UNKNOWN_REVISION", message);
  }

  /** A retained revision by serial. */
  #revisionAt(serial: number): Revision {
    if (serial === this.#head.serial) return this.#head;
    const index = serial - 1 - this.#revisionsDropped;
    const uuid = item(this.#revisionUuids, index);
    return Object.freeze({ uuid, serial, createdAt: item(this.#revisionTimes, index) });
  }

  /** The absolute index of the first change record of a revision; `head + 1` gives the end. */
  #startOf(serial: number): number {
    return serial > this.#head.serial
      ? this.#recordsDropped + this.#records.length
      : item(this.#revisionStarts, serial - 1 - this.#revisionsDropped);
  }

  #record(absolute: number): ChangeRecord {
    return item(this.#records, absolute - this.#recordsDropped);
  }
}

/** An element the log's bookkeeping guarantees to exist. */
function item<T>(list: readonly T[], index: number): T {
  const value = list[index];
  if (value === undefined) throw new RangeError(`Cannot read the revision log: no entry ${index}`);
  return value;
}

function isObject(value: unknown): value is { readonly [key: string]: unknown } {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function checkIndex(index: unknown): EntityIndex {
  if (index === 0 || index === 1 || index === 2) return index;
  throw new TypeError(`Cannot restore a revision log: ${String(index)} is not an entity index`);
}

function entityIndex(entity: unknown): EntityIndex {
  switch (entity) {
    case "me":
      return 0;
    case "messages":
      return 1;
    case "teams":
      return 2;
    default:
      throw new TypeError(`Cannot use entity ${String(entity)}: expected me, messages or teams`);
  }
}

/**
 * A change's value, checked and copied frozen: null, or an object whose
 * `uuid` is the key and whose fields are strings, booleans or null.
 */
function frozenValue(value: unknown, key: string): SyncObject | null {
  if (value === null) return null;
  if (!isObject(value) || value["uuid"] !== key) {
    const expected = "null or an object whose uuid is the key";
    throw new TypeError(`Cannot commit: the value of key ${key} must be ${expected}`);
  }
  const copy: { [field: string]: FieldValue } = {};
  for (const field of Object.keys(value)) {
    const v = value[field];
    if (v !== null && typeof v !== "string" && typeof v !== "boolean") {
      const expected = "a string, a boolean or null";
      throw new TypeError(`Cannot commit: field ${field} of key ${key} must be ${expected}`);
    }
    copy[field] = v;
  }
  return Object.freeze(copy);
}
