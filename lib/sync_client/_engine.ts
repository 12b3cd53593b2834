// The state and the rounds of a sync client (see create_sync_client.ts).
import { nextDelay } from "./backoff.ts";
import { aborted, type Connection } from "./_connection.ts";
import { SyncClientError } from "./errors.ts";
import {
  applyServerData,
  emptyReplica,
  ENTITY_NAMES,
  type Intent,
  intentKey,
  type JsonObject,
  KEYS,
  patchBody,
  type PatchRecord,
  readStored,
  type Replica,
  sameObject,
  type Session,
  storedReplica,
} from "./_state.ts";
import { StorageWriter } from "./_writer.ts";
import { abortedRefusals, invalidRefusals } from "./_refusals.ts";
import { getData, sendPatch } from "./_requests.ts";
import { completeObject, OBJECT_KEY } from "./_wire.ts";
import type {
  ConflictPolicy,
  SyncClientEvent,
  SyncConflict,
  SyncEntities,
  SyncEntityName,
  SyncObjectError,
  SyncPhase,
  SyncStatus,
  SyncStorage,
} from "./types.ts";

/** What a {@linkcode SyncEngine} needs. */
export interface EngineOptions {
  readonly storage: SyncStorage;
  readonly connection: Connection;
  readonly contextPath: string;
  readonly onConflict: ConflictPolicy;
  readonly onLoginRequired: (() => void | Promise<void>) | undefined;
  readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  readonly draw: () => number;
  readonly newKey: () => string;
  readonly maxPatchObjects: number;
  readonly ticketPollDelay: number;
  readonly closed: AbortSignal;
}

/** The sync engine: state, view, outbox, rounds. */
export class SyncEngine {
  readonly #options: EngineOptions;
  readonly #writer: StorageWriter;
  #replica: Replica = emptyReplica();
  /** Intents by seq, in order. */
  readonly #intents = new Map<number, Intent>();
  /** The last intent's seq of each object. */
  readonly #latest = new Map<string, number>();
  #patch: PatchRecord | undefined;
  #seq = 1;
  session: Session | undefined;
  /** Whose data the replica and the outbox are. */
  #owner: string | undefined;
  #phase: SyncPhase = "logged-out";
  #lastError: Error | undefined;
  readonly #lists = new Map<SyncEntityName, readonly unknown[]>();
  readonly #listeners = new Set<(event: SyncClientEvent) => void>();
  #lock: Promise<void> = Promise.resolve();
  #running = 0;
  #wake: (() => void) | undefined;
  #woken = false;
  readonly #loaded: Promise<void>;
  #forceSnapshot = false;
  /** Patches whose tickets failed in a row: their resends back off. */
  #failedSends = 0;

  constructor(options: EngineOptions) {
    this.#options = options;
    this.#writer = new StorageWriter(options.storage);
    this.#loaded = this.#load();
  }

  ready(): Promise<void> {
    return this.#loaded;
  }

  async #load(): Promise<void> {
    let entries: ReadonlyMap<string, unknown>;
    try {
      entries = await this.#options.storage.load();
    } catch (cause) {
      throw new SyncClientError(
        "ERR_SYNC_CLIENT_STORAGE",
        `Cannot load the storage: ${cause instanceof Error ? cause.message : String(cause)}`,
        { cause },
      );
    }
    const { replica, intents, patch, session } = readStored(entries);
    this.#replica = replica;
    for (const intent of intents) this.#addIntent(intent);
    this.#seq = (intents.at(-1)?.seq ?? 0) + 1;
    this.#patch = patch === undefined
      ? undefined
      : { ...patch, seqs: patch.seqs.filter((seq) => this.#intents.has(seq)) };
    this.session = session;
    const owner = entries.get("owner");
    this.#owner = typeof owner === "string" ? owner : session?.username;
    this.#phase = session === undefined ? "logged-out" : "idle";
    if (this.#intents.size > 0 || replica.revision !== undefined) {
      this.#emit({ kind: "change", entities: ENTITY_NAMES });
    }
  }

  get revision(): string | undefined {
    return this.#replica.revision;
  }

  // ---- reading -------------------------------------------------------------

  list<E extends SyncEntityName>(entity: E): readonly SyncEntities[E][] {
    let list = this.#lists.get(entity);
    if (list === undefined) {
      const found = new Map(this.#replica.objects[entity]);
      for (const [key, seq] of this.#latest) {
        const intent = this.#intents.get(seq)!;
        if (intent.entity !== entity) continue;
        if (intent.value === null) found.delete(intent.uuid);
        else found.set(intent.uuid, intent.value);
        void key;
      }
      list = Object.freeze(
        [...found.values()].sort((a, b) => String(a["uuid"]) < String(b["uuid"]) ? -1 : 1),
      );
      this.#lists.set(entity, list);
    }
    // The objects are the server's records (or local writes) of this entity, checked as they came.
    return list as readonly SyncEntities[E][];
  }

  get<E extends SyncEntityName>(entity: E, uuid: string): SyncEntities[E] | undefined {
    const key = uuid.toLowerCase();
    const seq = this.#latest.get(OBJECT_KEY(entity, key));
    const object = seq === undefined
      ? this.#replica.objects[entity].get(key)
      : this.#intents.get(seq)!.value ?? undefined;
    return object as SyncEntities[E] | undefined;
  }

  pending(): number {
    return this.#intents.size;
  }

  status(): SyncStatus {
    return {
      phase: this.#phase,
      pending: this.#intents.size,
      revision: this.#replica.revision,
      serial: this.#replica.serial,
      lastError: this.#lastError,
    };
  }

  subscribe(listener: (event: SyncClientEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => void this.#listeners.delete(listener);
  }

  #emit(event: SyncClientEvent): void {
    if (event.kind === "change") {
      for (const entity of event.entities) {
        this.#lists.delete(entity);
      }
    }
    for (const listener of [...this.#listeners]) {
      try {
        listener(event);
      } catch {
        // A listener's failure is its own.
      }
    }
  }

  #emitStatus(): void {
    this.#emit({ kind: "status", status: this.status() });
  }

  #setPhase(phase: SyncPhase, error?: Error): void {
    if (this.#phase === "closed") return;
    const changed = phase !== this.#phase || error !== this.#lastError;
    this.#phase = phase;
    if (error !== undefined) this.#lastError = error;
    if (changed) this.#emitStatus();
  }

  // ---- the session -----------------------------------------------------------

  async setSession(session: Session | undefined): Promise<void> {
    this.session = session;
    await this.#writer.write(new Map([[KEYS.session, session]]));
    if (session === undefined) this.#setPhase("logged-out");
  }

  async loggedIn(session: Session): Promise<void> {
    const changes = new Map<string, unknown>([[KEYS.session, session], [
      "owner",
      session.username,
    ]]);
    if (this.#owner !== undefined && this.#owner !== session.username) {
      if (this.#intents.size > 0) {
        throw new SyncClientError(
          "ERR_SYNC_CLIENT_OTHER_USER",
          `Cannot log in as ${
            JSON.stringify(session.username)
          }: the outbox holds ${this.#intents.size} writes of ${
            JSON.stringify(this.#owner)
          }; sync them first`,
        );
      }
      this.#replica = emptyReplica();
      this.#patch = undefined;
      changes.set(KEYS.replica, undefined);
      changes.set(KEYS.patch, undefined);
      this.#emit({ kind: "change", entities: ENTITY_NAMES });
    }
    this.#owner = session.username;
    this.session = session;
    await this.#writer.write(changes);
    this.#lastError = undefined;
    this.#setPhase("idle");
    this.wake();
  }

  async loginRequired(): Promise<void> {
    this.#setPhase("logged-out");
    await this.#options.onLoginRequired?.();
  }

  reachable(reachable: boolean, error?: Error): void {
    if (!reachable) this.#setPhase("offline", error);
    else if (this.#phase === "offline") this.#setPhase("syncing");
  }

  // ---- local writes ------------------------------------------------------------

  #addIntent(intent: Intent): void {
    this.#intents.set(intent.seq, intent);
    this.#latest.set(OBJECT_KEY(intent.entity, intent.uuid), intent.seq);
  }

  /** Drops intents (given by seq), keeping `#latest` right; gives their storage deletions. */
  #dropIntents(seqs: Iterable<number>, changes: Map<string, unknown>): void {
    const touched = new Set<string>();
    for (const seq of seqs) {
      const intent = this.#intents.get(seq);
      if (intent === undefined) continue;
      this.#intents.delete(seq);
      changes.set(intentKey(seq), undefined);
      touched.add(OBJECT_KEY(intent.entity, intent.uuid));
    }
    for (const key of touched) this.#latest.delete(key);
    if (touched.size === 0) return;
    for (const intent of this.#intents.values()) {
      const key = OBJECT_KEY(intent.entity, intent.uuid);
      if (touched.has(key)) this.#latest.set(key, intent.seq);
    }
  }

  #newIntent(entity: SyncEntityName, uuid: string, value: JsonObject | null): Intent {
    const intent = { seq: this.#seq++, entity, uuid, value };
    this.#addIntent(intent);
    return intent;
  }

  /** A put (an object) or a deletion (a uuid), applied at once and kept in the outbox. */
  async write(entity: SyncEntityName, objectOrUuid: unknown): Promise<void> {
    if (!ENTITY_NAMES.includes(entity)) {
      throw new TypeError(`Cannot write: ${JSON.stringify(entity)} is not an entity set`);
    }
    let intent: Intent;
    if (typeof objectOrUuid === "string") {
      if (entity === "me") {
        throw new TypeError("Cannot delete me: that deletes the account; use the account API");
      }
      intent = this.#newIntent(entity, objectOrUuid.toLowerCase(), null);
    } else {
      const value = completeObject(entity, objectOrUuid);
      intent = this.#newIntent(entity, String(value["uuid"]), value);
    }
    this.#emit({ kind: "change", entities: [entity] });
    this.#emitStatus();
    try {
      await this.#writer.write(new Map([[intentKey(intent.seq), intent]]));
    } catch (error) {
      // Not kept: not done either.
      if (this.#patch?.seqs.includes(intent.seq) !== true) {
        this.#dropIntents([intent.seq], new Map());
        this.#emit({ kind: "change", entities: [entity] });
      }
      throw error;
    }
    this.wake();
  }

  // ---- the background loop's wake-ups ----------------------------------------------

  wake(): void {
    this.#woken = true;
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  /** Forgets the wake-ups so far: the round about to start covers them. */
  clearWake(): void {
    this.#woken = false;
  }

  /** Resolves at the next write, hint, login or close (at once if one came since the last call). */
  nextWake(): Promise<void> {
    if (this.#woken || this.#options.closed.aborted) {
      this.#woken = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      this.#wake = () => {
        this.#woken = false;
        resolve();
      };
    });
  }

  async closed(): Promise<void> {
    await this.#lock;
    await this.#writer.idle();
    this.#phase = "closed";
    this.#emitStatus();
  }

  // ---- rounds --------------------------------------------------------------------

  /** One round at a time: a round waits for the one running. */
  round(signal: AbortSignal): Promise<void> {
    const run = this.#lock.then(() => this.#round(signal));
    this.#lock = run.catch(() => {});
    return run;
  }

  async #round(signal: AbortSignal): Promise<void> {
    await this.#loaded;
    if (signal.aborted) throw aborted();
    this.#running++;
    this.#setPhase("syncing");
    try {
      if (this.#replica.revision === undefined) await this.#pull(signal);
      for (;;) {
        while (this.#patch !== undefined || this.#unsent().length > 0) await this.#push(signal);
        await this.#pull(signal);
        if (this.#patch === undefined && this.#unsent().length === 0) break;
      }
      this.#lastError = undefined;
      this.#setPhase("idle");
    } catch (error) {
      const failure = error instanceof Error ? error : new Error(String(error));
      if (error instanceof SyncClientError && error.code === "ERR_SYNC_CLIENT_LOGIN_REQUIRED") {
        this.#setPhase("logged-out", failure);
      } else if (!(error instanceof SyncClientError && error.code === "ERR_SYNC_CLIENT_ABORTED")) {
        this.#setPhase("idle", failure);
      } else this.#setPhase(this.session === undefined ? "logged-out" : "idle");
      throw error;
    } finally {
      this.#running--;
    }
  }

  /** Intents not in the patch in flight, oldest first. */
  #unsent(): Intent[] {
    const inPatch = new Set(this.#patch?.seqs ?? []);
    return [...this.#intents.values()].filter((intent) => !inPatch.has(intent.seq));
  }

  /** Sends the patch in flight (made first from the oldest intents) and settles its end. */
  async #push(signal: AbortSignal): Promise<void> {
    if (this.#patch === undefined) {
      const base = this.#replica.revision;
      if (base === undefined) return this.#pull(signal);
      const taken: Intent[] = [];
      const objects = new Set<string>();
      for (const intent of this.#intents.values()) {
        const key = OBJECT_KEY(intent.entity, intent.uuid);
        if (!objects.has(key) && objects.size >= this.#options.maxPatchObjects) break;
        objects.add(key);
        taken.push(intent);
      }
      const patch = {
        key: this.#options.newKey(),
        seqs: taken.map((intent) => intent.seq),
        body: patchBody(taken, base),
      };
      this.#patch = patch;
      await this.#writer.write(new Map([[KEYS.patch, patch]]));
    }
    const patch = this.#patch;
    const outcome = await sendPatch(this.#options, patch, signal);
    if (outcome.kind !== "again") this.#failedSends = 0;
    switch (outcome.kind) {
      case "done":
        return this.#pull(signal, patch);
      case "aborted":
        return this.#settleAborted(patch, outcome.errors, signal);
      case "invalid":
        return this.#settleInvalid(patch, outcome.errors, signal);
      case "again": {
        // The same body under a new key: the old key's answer is gone, or failed for good.
        const again = { ...patch, key: this.#options.newKey() };
        this.#patch = again;
        await this.#writer.write(new Map([[KEYS.patch, again]]));
        if (outcome.wait) {
          const delay = nextDelay(Math.min(this.#failedSends++, 30), this.#options.draw());
          await this.#options.sleep(delay, signal);
        }
        if (signal.aborted) throw aborted();
        return;
      }
      default: {
        const never: never = outcome;
        throw new Error(`Unknown outcome ${JSON.stringify(never)}`);
      }
    }
  }

  /**
   * An aborted patch: objects refused by a rule are dropped (and reported);
   * conflicts are left to the pull that follows, which rebases every intent
   * on the server's new revision and hands each conflict to `onConflict`.
   */
  async #settleAborted(
    patch: PatchRecord,
    errors: readonly SyncObjectError[],
    signal: AbortSignal,
  ): Promise<void> {
    const { refused, snapshot } = abortedRefusals(errors, this.#carried(patch));
    if (snapshot) this.#forceSnapshot = true;
    await this.#refuse(patch, refused);
    await this.#pull(signal);
  }

  /** A 422: the objects its fields name are refused (all of the patch's when none is named). */
  async #settleInvalid(
    patch: PatchRecord,
    errors: readonly { message: string; field?: string }[],
    signal: AbortSignal,
  ): Promise<void> {
    await this.#refuse(patch, invalidRefusals(errors, patch.body, this.#carried(patch)));
    await this.#pull(signal);
  }

  /** The intents a patch carries that are still in the outbox. */
  #carried(patch: PatchRecord): Intent[] {
    return patch.seqs.flatMap((seq) => {
      const intent = this.#intents.get(seq);
      return intent === undefined ? [] : [intent];
    });
  }

  /** Dissolves the patch in flight, dropping the refused objects' intents it carried; reports them. */
  async #refuse(
    patch: PatchRecord,
    refused: ReadonlyMap<string, SyncObjectError[]>,
  ): Promise<void> {
    const changes = new Map<string, unknown>([[KEYS.patch, undefined]]);
    const dropped: Intent[] = [];
    for (const seq of patch.seqs) {
      const intent = this.#intents.get(seq);
      if (intent !== undefined && refused.has(OBJECT_KEY(intent.entity, intent.uuid))) {
        dropped.push(intent);
      }
    }
    this.#patch = undefined;
    this.#dropIntents(dropped.map((intent) => intent.seq), changes);
    await this.#writer.write(changes);
    const reported = new Set<string>();
    for (const intent of dropped) {
      const key = OBJECT_KEY(intent.entity, intent.uuid);
      if (reported.has(key)) continue;
      reported.add(key);
      this.#emit({ kind: "change", entities: [intent.entity] });
      this.#emit({
        kind: "rejected",
        entity: intent.entity,
        uuid: intent.uuid,
        errors: refused.get(key) ?? [],
      });
    }
    if (dropped.length > 0) this.#emitStatus();
  }

  // ---- pulls -------------------------------------------------------------------

  /**
   * Brings the replica to the server's head, drops the intents of an
   * acknowledged patch, and rebases the other intents: each object the
   * server changed under an intent (other than by the acknowledged patch)
   * is a conflict for `onConflict`.
   */
  async #pull(signal: AbortSignal, acknowledged?: PatchRecord): Promise<void> {
    const before = this.#replica;
    const snapshot = before.revision === undefined || this.#forceSnapshot;
    const data = snapshot
      ? await getData(
        this.#options,
        this.#options.contextPath,
        signal,
        before.revision === undefined ? undefined : `"${before.revision}"`,
      )
      : await getData(
        this.#options,
        `${this.#options.contextPath}/since/${before.revision}`,
        signal,
      );
    this.#forceSnapshot = false;
    const after = data === undefined
      ? before
      : applyServerData(snapshot ? emptyReplica() : before, data);
    const changes = new Map<string, unknown>();
    const ackValues = new Map<string, JsonObject | null>();
    if (acknowledged !== undefined) {
      for (const seq of acknowledged.seqs) {
        const intent = this.#intents.get(seq);
        if (intent !== undefined) {
          ackValues.set(OBJECT_KEY(intent.entity, intent.uuid), intent.value);
        }
      }
      this.#dropIntents(acknowledged.seqs, changes);
      changes.set(KEYS.patch, undefined);
      this.#patch = undefined;
    }
    this.#replica = after;
    if (after !== before) changes.set(KEYS.replica, storedReplica(after));
    const conflicts: SyncConflict[] = [];
    for (const [key, seq] of this.#latest) {
      const intent = this.#intents.get(seq)!;
      const old = before.objects[intent.entity].get(intent.uuid) ?? null;
      const now = after.objects[intent.entity].get(intent.uuid) ?? null;
      if (sameObject(old, now)) continue;
      if (ackValues.has(key) && sameObject(ackValues.get(key), now)) continue;
      conflicts.push(
        {
          entity: intent.entity,
          uuid: intent.uuid,
          local: intent.value,
          server: now,
        } as SyncConflict,
      );
    }
    await this.#writer.write(changes);
    if (data !== undefined || acknowledged !== undefined) {
      this.#emit({ kind: "change", entities: ENTITY_NAMES });
      this.#emitStatus();
    }
    for (const conflict of conflicts) await this.#decide(conflict);
  }

  /** Asks `onConflict` and replaces the object's intents with its answer. */
  async #decide(conflict: SyncConflict): Promise<void> {
    let kept: SyncEntities[SyncEntityName] | null | undefined;
    try {
      kept = await this.#options.onConflict(conflict);
    } catch (error) {
      // A policy that fails keeps the server's object.
      this.#lastError = error instanceof Error ? error : new Error(String(error));
      kept = undefined;
    }
    const { entity, uuid } = conflict;
    const changes = new Map<string, unknown>();
    const seqs = [...this.#intents.values()]
      .filter((intent) => intent.entity === entity && intent.uuid === uuid)
      .map((intent) => intent.seq);
    this.#dropIntents(seqs, changes);
    let intent: Intent | undefined;
    if (kept === null) {
      if (conflict.server !== null) intent = this.#newIntent(entity, uuid, null);
    } else if (kept !== undefined) {
      intent = this.#newIntent(entity, uuid, completeObject(entity, { ...kept, uuid }));
    }
    if (intent !== undefined) changes.set(intentKey(intent.seq), intent);
    await this.#writer.write(changes);
    this.#emit({ kind: "change", entities: [entity] });
    this.#emit({ kind: "conflict", conflict, kept });
    this.#emitStatus();
  }
}
