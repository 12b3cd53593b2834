// The shapes of the sync client: the user context's entities as the server's
// schema (lib/sync/schema.ts ENTITIES) defines them, written out here so that
// the client imports nothing of the server (a test checks the two agree), the
// storage port, the events and the status.

/** A field value of a synced object: every field is a string, a boolean or null. */
export type SyncFieldValue = string | boolean | null;

/** The user's own profile, the context's one `me` object. */
export interface Me {
  readonly uuid: string;
  /** Read-only: a patch must leave it as it is. */
  readonly username: string;
  /** One of `en`, `fr`, `ru`, `es`, `de`; null for the default. */
  readonly notify_language: string | null;
}

/** A message of the user's. */
export interface Message {
  readonly uuid: string;
  /** 1 to 200 characters. */
  readonly subject: string;
  /** Up to 10,000 characters. */
  readonly body: string;
  readonly read: boolean;
  /** ISO 8601 UTC, e.g. `2026-11-24T08:00:00Z`. */
  readonly sent_at: string;
}

/** A team the user belongs to. */
export interface Team {
  readonly uuid: string;
  /** 1 to 100 characters, unique among non-archived teams regardless of case. */
  readonly name: string;
  /** `#RRGGBB`, or null for none. */
  readonly color: string | null;
  readonly archived: boolean;
}

/** The entity sets of the user context, by name: what `list` and `get` give. */
export interface SyncEntities {
  readonly me: Me;
  readonly messages: Message;
  readonly teams: Team;
}

/** The name of an entity set: `me`, `messages` or `teams`. */
export type SyncEntityName = keyof SyncEntities;

/** What `put` takes: an object with its `uuid`; a field with a default may be left out. */
export interface SyncInputs {
  readonly me: Omit<Me, "notify_language"> & { readonly notify_language?: string | null };
  readonly messages: Omit<Message, "read"> & { readonly read?: boolean };
  readonly teams: Omit<Team, "color" | "archived"> & {
    readonly color?: string | null;
    readonly archived?: boolean;
  };
}

/**
 * A conflict: a local write the server refused because the object changed
 * on the server after the revision the write was made from. `local` is the
 * latest local intent (null: a deletion), `server` the server's object now
 * (null: deleted there).
 */
export type SyncConflict = {
  readonly [E in SyncEntityName]: {
    readonly entity: E;
    readonly uuid: string;
    readonly local: SyncEntities[E] | null;
    readonly server: SyncEntities[E] | null;
  };
}[SyncEntityName];

/**
 * Decides a conflict: the object to keep (sent again on the server's new
 * revision), `null` to delete it, `undefined` to keep the server's.
 */
export type ConflictPolicy = (
  conflict: SyncConflict,
) =>
  | SyncEntities[SyncEntityName]
  | null
  | undefined
  | Promise<
    SyncEntities[SyncEntityName] | null | undefined
  >;

/**
 * Where a client keeps what must outlive it: the session, the local copy and
 * the outbox, as JSON values by key. Every adapter passes one contract
 * (`test/_helpers/sync_storage.ts`, `runSyncStorageContract`).
 */
export interface SyncStorage {
  /**
   * Every entry stored.
   * @returns the entries by key
   */
  load(): Promise<ReadonlyMap<string, unknown>>;
  /**
   * Writes entries (a value) and deletes them (`undefined`), all or none:
   * after a crash, a load sees every change of the call or none of them.
   * Resolves once they are durable.
   * @param changes the changes, by key
   */
  write(changes: ReadonlyMap<string, unknown>): Promise<void>;
  /** Releases what it holds (handles, connections); the data stays. */
  close(): Promise<void>;
}

/** Where a client stands. */
export type SyncPhase =
  /** Before `login` (and after `logout`), or when the stored login was revoked: `login` again. */
  | "logged-out"
  /** Nothing to do: the outbox is empty and the last pull found the server's head. */
  | "idle"
  /** Sending the outbox or pulling. */
  | "syncing"
  /** The platform says it is offline, or the server cannot be reached: retrying with backoff. */
  | "offline"
  /** Closed: nothing more is sent. */
  | "closed";

/** A snapshot of the client's state, as `status()` gives it and `status` events carry it. */
export interface SyncStatus {
  readonly phase: SyncPhase;
  /** Local writes not yet acknowledged by the server. */
  readonly pending: number;
  /** The server revision the local copy is at; undefined before the first pull. */
  readonly revision: string | undefined;
  /** Its serial (increasing with each revision); undefined before the first pull. */
  readonly serial: number | undefined;
  /** The last failure, until the next success. */
  readonly lastError: Error | undefined;
}

/** One error the server gave for an object of a refused write (the ticket's `errors`). */
export interface SyncObjectError {
  readonly section: "objects" | "deleted_objects";
  readonly entity: SyncEntityName;
  readonly key: { readonly uuid: string } | null;
  readonly attribute: string | null;
  readonly messages: readonly {
    readonly level: string;
    readonly code: string;
    readonly message: string;
  }[];
}

/** What a listener of `subscribe` is told. */
export type SyncClientEvent =
  /** The local copy (what `list` and `get` give) changed, by a local write or the server's. */
  | { readonly kind: "change"; readonly entities: readonly SyncEntityName[] }
  /** The status changed. */
  | { readonly kind: "status"; readonly status: SyncStatus }
  /**
   * The server refused a local write for a reason other than a conflict (a
   * rule: a duplicate team name, a deleted object that never existed): the
   * write is dropped and the object shows the server's state again.
   */
  | {
    readonly kind: "rejected";
    readonly entity: SyncEntityName;
    readonly uuid: string;
    readonly errors: readonly SyncObjectError[];
  }
  /** A conflict was decided by `onConflict`. */
  | {
    readonly kind: "conflict";
    readonly conflict: SyncConflict;
    readonly kept: SyncEntities[SyncEntityName] | null | undefined;
  };

/**
 * How announcements of new server revisions reach the client: each value
 * yielded is a revision id the server has reached (or undefined: "maybe
 * something changed"), after which the client pulls unless it is there
 * already. Polling (`pollChanges`) satisfies it; a server stream can too.
 * @param since the revision the local copy is at, undefined before the first pull
 * @param signal aborted when the client stops watching
 * @param request an authorized `fetch` of a path under `baseUrl` (the bearer token added and refreshed)
 */
export type ChangesTransport = (
  since: string | undefined,
  signal: AbortSignal,
  request: (path: string, init?: RequestInit) => Promise<Response>,
) => AsyncIterable<string | undefined>;

/** Whether the platform is online, and a way to hear when that changes. */
export interface OnlineSource {
  /** @returns false only when the platform knows it is offline */
  isOnline(): boolean;
  /**
   * Calls `listener` on every change.
   * @returns a function that stops it
   */
  subscribe(listener: (online: boolean) => void): () => void;
}
