// The sync client: one user's context kept on a device. What the app reads
// is the replica (the server's objects at a revision) with the outbox's
// intents laid over it. A round sends the outbox as patches (each with its
// base revision and an Idempotency-Key kept with it, so that a resend after a
// lost answer is the same request), follows each ticket to its end, and
// pulls diffs (a snapshot when there is no base or the base is gone). Every
// pull rebases the unsent intents: an object the server changed under one
// is a conflict, which `onConflict` decides.
import type { BackoffOptions } from "./backoff.ts";
import { aborted, Connection } from "./_connection.ts";
import { SyncClientError } from "./errors.ts";
import { memoryStorage } from "./memory_storage.ts";
import { localWins } from "./policies.ts";
import { pollChanges } from "./poll_changes.ts";
import { streamChanges } from "./stream_changes.ts";
import {
  defaultFetch,
  defaultRandom,
  defaultSleep,
  drawFrom,
  platformOnline,
  platformStreams,
  uuidFrom,
} from "./_platform.ts";
import { SyncEngine } from "./_engine.ts";
import type {
  ChangesTransport,
  ConflictPolicy,
  OnlineSource,
  SyncClientEvent,
  SyncEntities,
  SyncEntityName,
  SyncInputs,
  SyncStatus,
  SyncStorage,
} from "./types.ts";

/** Options of {@linkcode createSyncClient}. */
export interface SyncClientOptions {
  /** The server's origin (and path prefix, if any), e.g. `https://sync.example.org`. */
  readonly baseUrl: string;
  /** The app's OAuth client id (a client with the `password` and `refresh_token` grants). */
  readonly clientId: string;
  /**
   * The client's secret, for a confidential client; sent in the body.
   * @default none: a public client
   */
  readonly clientSecret?: string;
  /**
   * Where the session, the local copy and the outbox are kept.
   * @default {memoryStorage()}
   */
  readonly storage?: SyncStorage;
  /**
   * Decides a conflict: the object to keep, `null` to delete it, `undefined`
   * for the server's. Built in: {@linkcode serverWins}, {@linkcode localWins},
   * {@linkcode merge}.
   * @default {localWins}
   */
  readonly onConflict?: ConflictPolicy;
  /**
   * Called when the login is gone (revoked, expired, or never made) while
   * the client needs it; it may call `login` again, and the client goes on.
   * @default nothing: the operation fails with `ERR_SYNC_CLIENT_LOGIN_REQUIRED`
   */
  readonly onLoginRequired?: () => void | Promise<void>;
  /**
   * How changes of the server are learnt of while `start`ed.
   * @default {streamChanges()} where the platform's `fetch` reads a body as a stream, else
   * {pollChanges({ interval: 30000 })}
   */
  readonly watch?: ChangesTransport;
  /**
   * The `fetch` to use.
   * @default the platform's `fetch`
   */
  readonly fetch?: (input: string, init?: RequestInit) => Promise<Response>;
  /**
   * The clock, in epoch milliseconds.
   * @default {Date.now}
   */
  readonly now?: () => number;
  /**
   * Random bytes (Idempotency-Keys, jitter).
   * @default the platform's `crypto.getRandomValues`
   */
  readonly random?: (size: number) => Uint8Array;
  /**
   * Waits `ms`, or less when `signal` aborts.
   * @default a timer
   */
  readonly sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /**
   * The retry schedule.
   * @default {{ initialDelay: 500, maxDelay: 60000, factor: 2 }}
   */
  readonly backoff?: BackoffOptions;
  /**
   * Whether the platform is online.
   * @default `navigator.onLine` and the `online`/`offline` events, where they exist
   */
  readonly online?: OnlineSource;
  /**
   * The path of the user context.
   * @default {"/api/v2/sync/user"}
   */
  readonly contextPath?: string;
  /**
   * The scope asked for at login.
   * @default {"UserActivity"}
   */
  readonly scope?: string;
  /**
   * How long the server takes a rotated refresh token again (its
   * `REFRESH_REUSE_INTERVAL_SECONDS`), in milliseconds: a refresh whose
   * answer was lost is retried well within it.
   * @default {30000}
   */
  readonly refreshReuseInterval?: number;
  /**
   * Most objects in one patch; more intents go in the next patches.
   * @default {1000}
   */
  readonly maxPatchObjects?: number;
  /**
   * The first wait before a ticket still `new` or `work` is asked for again,
   * in milliseconds; waits double up to 3 s, each drawn at random below its
   * bound. A patch sent with its `Idempotency-Key` is queued, and the queue
   * usually applies it within milliseconds, so the first look comes soon.
   * @default {20}
   */
  readonly ticketPollDelay?: number;
}

/** Options of {@linkcode SyncClient.sync}. */
export interface SyncOptions {
  /** Stops waiting: the round ends with `ERR_SYNC_CLIENT_ABORTED` (the outbox keeps its writes). */
  readonly signal?: AbortSignal;
}

/** One user's context on a device: see {@linkcode createSyncClient}. */
export interface SyncClient {
  /** @returns resolved once the storage is loaded (`list` and `get` are empty before) */
  ready(): Promise<void>;
  /**
   * Logs in with the password grant and keeps the session in the storage.
   * @throws {SyncClientError} `ERR_SYNC_CLIENT_LOGIN_FAILED`; `ERR_SYNC_CLIENT_OTHER_USER` when
   * the outbox holds another user's writes
   */
  login(username: string, password: string): Promise<void>;
  /** Revokes the login at the server (when it can be reached) and forgets it; the data stays. */
  logout(): Promise<void>;
  /** @returns the objects of an entity set, local writes included; a new array after each change */
  list<E extends SyncEntityName>(entity: E): readonly SyncEntities[E][];
  /** @returns the object, local writes included, or undefined */
  get<E extends SyncEntityName>(entity: E, uuid: string): SyncEntities[E] | undefined;
  /**
   * Writes an object locally at once and queues it for the server.
   * @returns resolved once the write is in the outbox's storage (offline too)
   * @throws {TypeError} when the object has no `uuid` or a field is not a string, boolean or null
   */
  put<E extends SyncEntityName>(entity: E, object: SyncInputs[E]): Promise<void>;
  /**
   * Deletes an object locally at once and queues the deletion.
   * @returns resolved once the deletion is in the outbox's storage
   * @throws {TypeError} for `me` (deleting it deletes the account)
   */
  delete(entity: "messages" | "teams", uuid: string): Promise<void>;
  /**
   * Sends the outbox and pulls, retrying while the server cannot be reached.
   * @returns resolved once the outbox is empty and the local copy is at the server's head
   * @throws {SyncClientError} `ERR_SYNC_CLIENT_LOGIN_REQUIRED`, `ERR_SYNC_CLIENT_CLOSED`,
   * `ERR_SYNC_CLIENT_ABORTED`, `ERR_SYNC_CLIENT_RESPONSE`, `ERR_SYNC_CLIENT_STORAGE`
   */
  sync(options?: SyncOptions): Promise<void>;
  /**
   * Keeps in step in the background until `close`: sends each write soon
   * after it is made, and pulls when `watch` says the server changed.
   */
  start(): void;
  /**
   * Listens to changes of the local copy, of the status, and to refused writes.
   * @returns a function that stops listening
   */
  subscribe(listener: (event: SyncClientEvent) => void): () => void;
  /** @returns where the client stands */
  status(): SyncStatus;
  /** @returns the local writes not yet acknowledged by the server */
  pending(): number;
  /** Stops: aborts requests, waits for the storage's writes, and closes it. The outbox stays. */
  close(): Promise<void>;
}

/**
 * Creates a client that keeps one user's sync context on a device: a local
 * copy readable at once, local writes kept in a durable outbox and sent as
 * patches that are never applied twice, conflicts handed to `onConflict`,
 * tokens refreshed with rotation, retries with backoff. It needs only
 * `fetch`, so browsers, Node, Deno, Bun and React Native run it.
 * @param options the server, the OAuth client, the storage and the policies
 * @returns the client (call `login` once; the session is kept in the storage)
 * @throws {TypeError} when `baseUrl` or `clientId` is missing
 * @example
 * ```ts
 * const phone = createSyncClient({ baseUrl: "https://sync.example.org", clientId: "my-app", storage: fileStorage("phone-data") });
 * await phone.login("ada", "correct horse battery");
 * await phone.put("messages", { uuid: crypto.randomUUID(), subject: "Hi", body: "", sent_at: "2026-11-24T08:00:00Z" });
 * await phone.sync();
 * phone.list("messages"); // [{ uuid: "…", subject: "Hi", body: "", read: false, sent_at: "…" }]
 * ```
 */
export function createSyncClient(options: SyncClientOptions): SyncClient {
  if (typeof options.baseUrl !== "string" || options.baseUrl === "") {
    throw new TypeError("Cannot create a sync client: baseUrl must be the server's URL");
  }
  if (typeof options.clientId !== "string" || options.clientId === "") {
    throw new TypeError("Cannot create a sync client: clientId must be the app's OAuth client id");
  }
  const random = options.random ?? defaultRandom;
  const sleep = options.sleep ?? defaultSleep;
  const now = options.now ?? Date.now;
  const closed = new AbortController();
  const storage = options.storage ?? memoryStorage();
  const contextPath = options.contextPath ?? "/api/v2/sync/user";
  const connection: Connection = new Connection({
    baseUrl: options.baseUrl.replace(/\/+$/, ""),
    clientId: options.clientId,
    clientSecret: options.clientSecret,
    scope: options.scope ?? "UserActivity",
    fetch: options.fetch ?? defaultFetch,
    now,
    sleep,
    draw: () => drawFrom(random),
    backoff: options.backoff ?? {},
    online: options.online ?? platformOnline(),
    refreshReuseInterval: options.refreshReuseInterval ?? 30_000,
    onReachable: (reachable, error) => engine.reachable(reachable, error),
    session: () => engine.session,
    setSession: (session) => engine.setSession(session),
    loginRequired: () => engine.loginRequired(),
  });
  // The connection's callbacks above run only after this line, when requests are made.
  const engine: SyncEngine = new SyncEngine({
    storage,
    connection,
    contextPath,
    onConflict: options.onConflict ?? localWins,
    onLoginRequired: options.onLoginRequired,
    sleep,
    draw: () => drawFrom(random),
    newKey: () => uuidFrom(random),
    maxPatchObjects: options.maxPatchObjects ?? 1000,
    ticketPollDelay: options.ticketPollDelay ?? 20,
    closed: closed.signal,
  });
  const watch = options.watch ??
    (platformStreams() ? streamChanges({ contextPath, sleep, random }) : pollChanges({ sleep }));
  const ready = engine.ready();
  // A failed load is reported by the first operation that waits for it.
  ready.catch(() => {});
  let started = false;

  /** The caller's signal joined with the client's own. */
  function signalOf(signal: AbortSignal | undefined): AbortSignal {
    if (closed.signal.aborted) {
      throw new SyncClientError("ERR_SYNC_CLIENT_CLOSED", "Cannot sync: the client is closed");
    }
    if (signal === undefined) return closed.signal;
    const joined = new AbortController();
    const stop = (): void => joined.abort();
    if (signal.aborted) joined.abort();
    signal.addEventListener("abort", stop, { once: true });
    closed.signal.addEventListener("abort", stop, { once: true });
    return joined.signal;
  }

  function closedError(error: unknown): unknown {
    return closed.signal.aborted && error instanceof SyncClientError &&
        error.code === "ERR_SYNC_CLIENT_ABORTED"
      ? new SyncClientError("ERR_SYNC_CLIENT_CLOSED", "Cannot sync: the client is closed", {
        cause: error,
      })
      : error;
  }

  async function background(): Promise<void> {
    const watching = (async () => {
      const request = (path: string, init: RequestInit = {}) =>
        connection.authorized(path, init, closed.signal);
      for await (const hint of watch(engine.revision, closed.signal, request)) {
        if (hint === undefined || hint !== engine.revision) engine.wake();
      }
    })().catch(() => {});
    while (!closed.signal.aborted) {
      engine.clearWake();
      try {
        await engine.round(closed.signal);
      } catch {
        // Recorded in the status; the next write, hint or login wakes the loop again.
      }
      await engine.nextWake();
    }
    await watching;
  }

  return {
    ready: () => ready,
    async login(username, password) {
      await ready;
      const session = await connection.login(username, password, signalOf(undefined)).catch((
        error: unknown,
      ) => {
        throw closedError(error);
      });
      await engine.loggedIn(session);
    },
    async logout() {
      await ready;
      const token = engine.session?.refreshToken;
      await engine.setSession(undefined);
      if (token !== undefined && !closed.signal.aborted) {
        await connection.revoke(token, closed.signal);
      }
    },
    list: (entity) => engine.list(entity),
    get: (entity, uuid) => engine.get(entity, uuid),
    async put(entity, object) {
      await ready;
      signalOf(undefined);
      await engine.write(entity, object);
    },
    async delete(entity, uuid) {
      await ready;
      signalOf(undefined);
      await engine.write(entity, uuid);
    },
    async sync(syncOptions = {}) {
      await ready;
      const signal = signalOf(syncOptions.signal);
      try {
        await engine.round(signal);
      } catch (error) {
        throw closedError(error);
      }
    },
    start() {
      signalOf(undefined);
      if (started) return;
      started = true;
      void ready.then(background).catch(() => {});
    },
    subscribe: (listener) => engine.subscribe(listener),
    status: () => engine.status(),
    pending: () => engine.pending(),
    async close() {
      if (closed.signal.aborted) return;
      closed.abort(aborted());
      engine.wake();
      await engine.closed().catch(() => {});
      await storage.close();
    },
  };
}
