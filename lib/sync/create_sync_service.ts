import { sha256Hex } from "../crypto/mod.ts";
import {
  createRouter,
  errorStatuses,
  type HttpRequest,
  type HttpResponse,
  keepRoutes,
  readJson,
  type RouteHandler,
  type RouteParams,
  type Router,
  withErrorStatuses,
} from "../http/mod.ts";
import { ifNoneMatch, JSON_CONTENT_TYPE, parseQuery, statusOf } from "../http/_internal.ts";
import { SYNC_DOCS } from "./api_docs.ts";
import { SYNC_ERROR_STATUS } from "./error_status.ts";
import { SyncError } from "./errors.ts";
import { parsePatch } from "./parse_patch.ts";
import { RevisionStreams, type StillAllowed } from "./revision_streams.ts";
import type { SerialJobs } from "./serial_jobs.ts";
import type { SyncStore, TicketWork } from "./sync_store.ts";
import type { Ticket } from "./ticket_store.ts";
import type { Revision, SyncData } from "./types.ts";
import { isUuid } from "./_uuid.ts";

/** Options of {@linkcode createSyncService}. */
export interface SyncServiceOptions {
  /**
   * Checks the request's credentials and gives the uuid of the user whose
   * context it may use; throws an error with a `code` (e.g. a bearer failure).
   */
  readonly authorize: (request: HttpRequest) => Promise<string>;
  /**
   * Runs queued work (large snapshots and diffs, patches) after the answer,
   * one job per owner waiting at a time (see {@linkcode SerialJobs.pushOnce}).
   */
  readonly jobs: Pick<SerialJobs, "pushOnce">;
  /**
   * Objects above which a snapshot or diff is answered 202 and computed in the background.
   * @default {1000}
   */
  readonly queueAboveObjects?: number;
  /**
   * Queued requests (snapshots, diffs, patches) a user may have waiting or
   * running at once; more answer 429.
   * @default {16}
   */
  readonly maxPendingPerUser?: number;
  /**
   * Largest patch body in bytes.
   * @default {33554432}
   */
  readonly maxPatchBytes?: number;
  /**
   * Most objects and deletions in one patch.
   * @default {10000}
   */
  readonly maxPatchObjects?: number;
  /**
   * Path of the user context.
   * @default {"/api/v2/sync/user"}
   */
  readonly base?: string;
  /**
   * Deletes the rest of an account once its context is erased (the user and
   * every token): `DELETE` on the context, or a patch deleting `me`.
   * @default nothing more
   */
  readonly onAccountDeleted?: (owner: string) => Promise<void>;
  /**
   * Makes the context of a user who has none, if the user exists (an
   * account a crash left half-made by a version that wrote the user and the
   * context apart): called when a snapshot or a patch finds no context, which
   * is then looked for again.
   * @returns whether a context was made
   * @default none: such a user gets 404 `ERR_SYNC_NO_CONTEXT`
   */
  readonly completeContext?: (owner: string) => Promise<boolean>;
  /**
   * The change streams and long-polls open, with their bounds and heartbeat;
   * whoever gives them closes them (at drain).
   * @default streams on the store's feed with the defaults of {@linkcode RevisionStreams}
   */
  readonly streams?: RevisionStreams;
}

/** The longest a long-poll (`since/<revision>?wait=<seconds>`) waits, in seconds. */
export const MAX_WAIT_SECONDS = 60;

/** The headers of a change stream: never cached, never transformed (compressed) or buffered by a proxy. */
const STREAM_HEADERS = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-store, no-transform",
  "x-accel-buffering": "no",
} as const;

/** Every cached answer is revalidated; it is the user's own data. */
const CACHED = "private, no-cache";

/**
 * Creates the sync API of the user context: `GET <base>` (snapshot: 200,
 * 202, 304), `GET <base>/since/<revision>` (diff: 200, 202, 204, 304, 404,
 * 410; with `?wait=<seconds>` it first waits, up to {@linkcode MAX_WAIT_SECONDS},
 * until the head passes the revision), `POST <base>` (patch: 202 with a ticket,
 * 422 with `[{message, field}]` for a body that is not a patch),
 * `GET <base>/ticket/<uuid>` (200, 404, 410), and `GET <base>/changes`, a
 * stream of Server-Sent Events announcing each new revision as it commits
 * (resumed from `Last-Event-ID` or `?since=<revision>`: a head past it is
 * announced at once). Answers are `{ticket, data}`; snapshots and diffs carry
 * an `ETag`, and a matching `If-None-Match` answers 304.
 * @param store the contexts and tickets
 * @param options authorization, job queue and limits
 * @returns the handler
 * @example
 * ```ts
 * const handler = createSyncService(new MemorySyncStore({ now: Date.now, uuid: () => crypto.randomUUID() }), {
 *   authorize: (request) => requireUser(request, tokens, { scope: "UserActivity" }),
 *   jobs: new SerialJobs(),
 * });
 * ```
 */
export function createSyncService(store: SyncStore, options: SyncServiceOptions): Router {
  const base = options.base ?? "/api/v2/sync/user";
  const queueAbove = options.queueAboveObjects ?? 1000;
  const maxBytes = options.maxPatchBytes ?? 32 * 1024 * 1024;
  const maxObjects = options.maxPatchObjects ?? 10_000;
  const maxPending = options.maxPendingPerUser ?? 16;
  const { authorize, jobs } = options;
  const complete = options.completeContext;
  const streams = options.streams ??
    new RevisionStreams(store.feed, { headOf: (owner) => store.head(owner) });
  /**
   * Whether the request's credentials still act for `owner`: asked again at a
   * heartbeat. Refused (expired, revoked: 401 or 403) is false; anything
   * else (a store away for now) rejects, and the stream stays until the next
   * heartbeat.
   */
  const allowedOf = (request: HttpRequest, owner: string): StillAllowed => async () => {
    try {
      return (await authorize(request)) === owner;
    } catch (error) {
      // Only a refusal (401, 403) ends a stream: anything else cannot tell now.
      const status = statusOf(error, STATUSES);
      if (status === 401 || status === 403) return false;
      throw error;
    }
  };
  /** The head of the owner's context, made first if the user has none and `completeContext` can make it. */
  const headOf = async (owner: string): Promise<Revision> => {
    const head = await store.head(owner);
    if (head !== undefined) return head;
    if (complete !== undefined && (await complete(owner))) {
      const made = await store.head(owner);
      if (made !== undefined) return made;
    }
    throw noContext();
  };

  /** Erases the context, then the rest of the account; again after a failure, it finishes what is left. */
  async function deleteAccount(owner: string): Promise<HttpResponse> {
    await store.deleteContext(owner);
    for (const key of queued.keys()) if (key.startsWith(`${owner} `)) queued.delete(key);
    await options.onAccountDeleted?.(owner);
    return { status: 204, headers: { "cache-control": "no-store" } };
  }
  /** Tickets of queued snapshots and diffs by what they compute, while queued: asking again gives the same ticket. */
  const queued = new Map<string, Ticket>();
  /** Rendered snapshots: the store gives the same frozen snapshot until the next commit. */
  const rendered = new WeakMap<SyncData, string>();

  function renderSnapshot(data: SyncData): string {
    let body = rendered.get(data);
    if (body === undefined) {
      body = JSON.stringify({ ticket: null, data });
      rendered.set(data, body);
    }
    return body;
  }

  /** Queues a snapshot or diff in the store (durably, with its ticket) and asks the runner to do the owner's queue. */
  async function submitWork(owner: string, work: TicketWork): Promise<Ticket> {
    const ticket = await store.enqueue(owner, null, work, maxPending);
    runQueue(owner);
    return ticket;
  }

  /** Asks the runner to do the owner's queue (once, however often asked while it waits). */
  function runQueue(owner: string): void {
    jobs.pushOnce(owner, async () => {
      await store.runWork(owner);
    });
  }

  /**
   * Queues a snapshot or diff: answers 202 now, the ticket ends `done` with
   * the data or `failed`. The same request while it is queued gets the same ticket.
   */
  async function queue(
    request: HttpRequest,
    owner: string,
    key: string,
    work: TicketWork,
  ): Promise<HttpResponse> {
    // HEAD learns the answer would be queued, without queuing anything.
    if (request.method === "HEAD") {
      return {
        status: 202,
        headers: { "content-type": JSON_CONTENT_TYPE, "cache-control": "no-store" },
      };
    }
    const waiting = queued.get(key);
    if (waiting !== undefined) {
      const found = await store.ticket(owner, waiting.uuid);
      if (
        found !== undefined && found !== "expired" &&
        (found.ticket.status === "new" || found.ticket.status === "work")
      ) return accepted(found.ticket);
      queued.delete(key);
    }
    const ticket = await submitWork(owner, work);
    queued.set(key, ticket);
    return accepted(ticket);
  }

  const router = createRouter([
    {
      method: "GET",
      path: base,
      handler: async (request) => {
        const owner = await authorize(request);
        const head = await headOf(owner);
        const etag = `"${head.uuid}"`;
        if (ifNoneMatch(request, etag)) return notModified(etag);
        if ((await store.size(owner)) > queueAbove) {
          return queue(request, owner, `${owner} ${head.uuid}`, {
            kind: "snapshot",
            at: head.uuid,
          });
        }
        return {
          status: 200,
          headers: { "content-type": JSON_CONTENT_TYPE, etag, "cache-control": CACHED },
          body: renderSnapshot(await store.snapshot(owner, head)),
        };
      },
      doc: SYNC_DOCS.snapshot,
    },
    {
      method: "GET",
      path: `${base}/since/:revision`,
      handler: async (request, params) => {
        const owner = await authorize(request);
        const wait = waitOf(request);
        const from = await store.revision(owner, idOf(params, "revision"));
        let head = await headOf(owner);
        if (from.serial === head.serial && wait > 0) {
          // Listening first, then the head again: a commit in between is not missed.
          const watcher = await streams.open(owner, request.signal, allowedOf(request, owner));
          try {
            watcher.start(from.serial, await headOf(owner));
            await watcher.changed(wait * 1000);
          } finally {
            watcher.close();
          }
          head = await headOf(owner);
        }
        if (from.serial === head.serial) {
          return { status: 204, headers: { etag: `"${head.uuid}"`, "cache-control": CACHED } };
        }
        const etag = `"${from.uuid}.${head.uuid}"`;
        if (ifNoneMatch(request, etag)) return notModified(etag);
        if ((await store.changedSince(owner, from)) > queueAbove) {
          return queue(request, owner, `${owner} ${from.uuid} ${head.uuid}`, {
            kind: "diff",
            base: from.uuid,
            to: head.uuid,
          });
        }
        const data = await store.diff(owner, from, head);
        return {
          status: 200,
          headers: { "content-type": JSON_CONTENT_TYPE, etag, "cache-control": CACHED },
          body: JSON.stringify({ ticket: null, data }),
        };
      },
      doc: SYNC_DOCS.diff,
    },
    {
      method: "GET",
      path: `${base}/changes`,
      handler: async (request) => {
        const owner = await authorize(request);
        const since = sinceOf(request);
        await headOf(owner);
        // HEAD learns what a stream would be, without holding one.
        if (request.method === "HEAD") return { status: 200, headers: STREAM_HEADERS };
        // Listening first, then the head: a commit in between is announced, never missed.
        // Its token is asked again at each heartbeat: expired or revoked, the stream ends.
        const watcher = await streams.open(owner, request.signal, allowedOf(request, owner));
        try {
          const head = await headOf(owner);
          watcher.start(await knownSerial(owner, since, head), head);
        } catch (error) {
          watcher.close();
          throw error;
        }
        return { status: 200, headers: STREAM_HEADERS, body: watcher };
      },
      doc: SYNC_DOCS.changes,
    },
    {
      method: "GET",
      path: `${base}/ticket/:ticket`,
      handler: async (request, params) => {
        const owner = await authorize(request);
        const uuid = idOf(params, "ticket");
        const result = await store.ticket(owner, uuid);
        if (result === "expired") {
          throw new SyncError(
            "ERR_SYNC_TICKET_EXPIRED",
            `Ticket ${uuid} has expired: its result is no longer kept`,
          );
        }
        if (result === undefined) {
          throw new SyncError("ERR_SYNC_UNKNOWN_TICKET", `Cannot find ticket ${uuid}`);
        }
        return {
          status: 200,
          headers: { "content-type": JSON_CONTENT_TYPE, "cache-control": "no-store" },
          body: JSON.stringify(result),
        };
      },
      doc: SYNC_DOCS.ticket,
    },
    {
      method: "POST",
      path: base,
      handler: validationArray(async (request) => {
        const owner = await authorize(request);
        // Whether the user has a context, the store says when it queues the patch.
        const key = idempotencyKey(request);
        const patch = parsePatch(await readJson(request, { maxBytes, maxDepth: 8 }), {
          maxObjects,
        });
        // Deleting one's own `me` deletes the account, as the original API documents (another's is refused when checked).
        if (patch.deleted_objects.me === owner) return deleteAccount(owner);
        // A retry under the same key gets the first ticket: the parsed patch is what must be the same.
        const idempotency = key === undefined
          ? undefined
          : { key, fingerprint: sha256Hex(JSON.stringify(patch)) };
        // Applied before the answer when nothing of the user's waits (the ticket comes back ended), else queued behind it.
        const place = (): Promise<Ticket> =>
          store.place(owner, patch.serial, patch, maxPending, idempotency);
        const ticket = await place().catch(async (error: unknown) => {
          if (
            !(error instanceof SyncError && error.code === "ERR_SYNC_NO_CONTEXT") ||
            complete === undefined || !(await complete(owner))
          ) throw error;
          return place();
        });
        if (ticket.status === "new") runQueue(owner);
        return accepted(ticket);
      }),
      doc: SYNC_DOCS.patch,
    },
    {
      method: "DELETE",
      path: base,
      handler: async (request) => deleteAccount(await authorize(request)),
      doc: SYNC_DOCS.deleteAccount,
    },
  ]);
  /**
   * The serial of the revision a stream resumes from: 0 (the head is
   * announced at once) without one, or for one unknown or past the
   * retention (the client's diff from it then says what to do).
   */
  async function knownSerial(owner: string, since: string | undefined, head: Revision) {
    if (since === undefined) return 0;
    if (since === head.uuid) return head.serial;
    try {
      return (await store.revision(owner, since)).serial;
    } catch (error) {
      if (
        error instanceof SyncError &&
        (error.code === "ERR_SYNC_UNKNOWN_REVISION" || error.code === "ERR_SYNC_REVISION_EXPIRED")
      ) return 0;
      throw error;
    }
  }
  // Its errors (and a refused bearer token's) answered as the JSON error body, with their statuses.
  return keepRoutes(withErrorStatuses(router, STATUSES), router);
}

/** The statuses of the codes the sync API answers with. */
const STATUSES = errorStatuses(SYNC_ERROR_STATUS);

function noContext(): SyncError {
  return new SyncError("ERR_SYNC_NO_CONTEXT", "Cannot sync: this user has no sync context");
}

/** Keys up to this long: a UUID or any client token fits. */
const MAX_IDEMPOTENCY_KEY = 255;
const IDEMPOTENCY_KEY = /^[\x21-\x7e]+$/;

/** The request's `Idempotency-Key`: 1 to 255 visible ASCII characters (a UUID, typically). */
function idempotencyKey(request: HttpRequest): string | undefined {
  const raw = request.headers["idempotency-key"];
  if (raw === undefined) return undefined;
  // A structured-field string ("…") or a bare token: the quotes are not part of the key.
  const key = /^"(.*)"$/.exec(raw.trim())?.[1] ?? raw.trim();
  if (key.length === 0 || key.length > MAX_IDEMPOTENCY_KEY || !IDEMPOTENCY_KEY.test(key)) {
    throw new SyncError(
      "ERR_SYNC_INVALID_IDEMPOTENCY_KEY",
      `Idempotency-Key must be 1 to ${MAX_IDEMPOTENCY_KEY} visible ASCII characters, e.g. a UUID`,
    );
  }
  return key;
}

/** The revision a stream resumes from: `Last-Event-ID` (an EventSource's reconnection), else `?since=`. */
function sinceOf(request: HttpRequest): string | undefined {
  const header = request.headers["last-event-id"]?.trim();
  const raw = header !== undefined && header !== ""
    ? header
    : parseQuery(request.query).findLast((parameter) => parameter.name === "since")?.value;
  if (raw === undefined || raw === "") return undefined;
  const valid: boolean = isUuid(raw);
  if (!valid) {
    const shown = JSON.stringify(raw.length > 64 ? `${raw.slice(0, 64)}…` : raw);
    throw new SyncError(
      "ERR_SYNC_INVALID_ID",
      `Cannot resume from revision ${shown}: a revision id is a UUID`,
    );
  }
  return raw.toLowerCase();
}

/** A long-poll's `?wait=<seconds>`: 0 without one; whole seconds up to {@linkcode MAX_WAIT_SECONDS}. */
function waitOf(request: HttpRequest): number {
  if (request.query === "") return 0;
  const raw = parseQuery(request.query).findLast((parameter) => parameter.name === "wait")?.value;
  if (raw === undefined || raw === "") return 0;
  if (!/^\d{1,5}$/.test(raw) || Number(raw) > MAX_WAIT_SECONDS) {
    throw new SyncError(
      "ERR_SYNC_INVALID_WAIT",
      `Cannot wait ${
        JSON.stringify(raw.slice(0, 32))
      } seconds: wait is a whole number of seconds from 0 to ${MAX_WAIT_SECONDS}`,
    );
  }
  return Number(raw);
}

/** A revision or ticket id from the path, lower-cased. */
function idOf(params: RouteParams, name: "revision" | "ticket"): string {
  const raw: string = params[name] ?? "";
  const valid: boolean = isUuid(raw);
  if (!valid) {
    const shown = JSON.stringify(raw.length > 64 ? `${raw.slice(0, 64)}…` : raw);
    throw new SyncError(
      "ERR_SYNC_INVALID_ID",
      `Cannot find ${name} ${shown}: a ${name} id is a UUID`,
    );
  }
  return raw.toLowerCase();
}

function accepted(ticket: Ticket): HttpResponse {
  return {
    status: 202,
    headers: { "content-type": JSON_CONTENT_TYPE, "cache-control": "no-store" },
    body: JSON.stringify({ ticket, data: null }),
  };
}

function notModified(etag: string): HttpResponse {
  return { status: 304, headers: { etag, "cache-control": CACHED } };
}

/** Answers a patch that is not one as the API documents it: 422 with `[{message, field}]`. */
function validationArray(handler: (request: HttpRequest) => Promise<HttpResponse>): RouteHandler {
  return async (request) => {
    try {
      return await handler(request);
    } catch (error) {
      if (error instanceof SyncError && error.code === "ERR_SYNC_INVALID_PATCH") {
        return {
          status: 422,
          headers: { "content-type": JSON_CONTENT_TYPE },
          body: JSON.stringify(error.errors),
        };
      }
      throw error;
    }
  };
}
