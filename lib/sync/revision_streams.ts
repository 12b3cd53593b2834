import { SyncError } from "./errors.ts";
import type { RevisionFeed } from "./revision_feed.ts";
import type { Revision } from "./types.ts";

/** Options of {@linkcode RevisionStreams}. */
export interface RevisionStreamsOptions {
  /**
   * The heads of contexts, looked up again after the feed told of a gap.
   * @returns the head; undefined when the owner has no context (its streams then end)
   */
  readonly headOf: (owner: string) => Promise<Revision | undefined>;
  /**
   * How often a stream with nothing to announce sends `: ping`, milliseconds.
   * @default {15000}
   */
  readonly heartbeatMs?: number;
  /**
   * Streams and long-polls one user may have open at once; more are refused
   * with `ERR_SYNC_TOO_MANY_STREAMS`.
   * @default {8}
   */
  readonly maxPerUser?: number;
  /**
   * Streams and long-polls open at once in all; more are refused with
   * `ERR_SYNC_STREAMS_UNAVAILABLE`.
   * @default {10000}
   */
  readonly maxOpen?: number;
  /**
   * Runs the heartbeat every `ms` while a stream is open (one timer for them all); returns a stop function.
   * @default real timers that do not keep the process alive
   */
  readonly every?: (task: () => void, ms: number) => () => void;
  /**
   * Runs `task` once after `ms` (a long-poll's end); returns a cancel function.
   * @default a real timer that does not keep the process alive
   */
  readonly after?: (task: () => void, ms: number) => () => void;
  /** Where a failed look-up of heads after a gap is reported. */
  readonly onError?: (error: unknown) => void;
}

/** How long a refused client is asked to wait before opening a stream again, milliseconds. */
const RETRY_AFTER_MS = 5000;
/** What an EventSource waits before it reconnects, told in the stream's first line. */
const RECONNECT_MS = 3000;
/** Heads looked up at once after a gap, and credentials checked at once at a heartbeat. */
const GAP_LOOKUPS = 8;

/**
 * Whether a stream's credentials still hold, asked at each heartbeat:
 * false ends the stream; a rejection (the token store away for now) keeps
 * it until the next heartbeat asks again.
 */
export type StillAllowed = () => Promise<boolean>;

/** An owner's open watchers, and its one subscription to the feed. */
interface Owned {
  readonly watchers: Set<Watcher>;
  /** The subscription, once asked; what stops it. */
  subscribed: Promise<() => void> | undefined;
}

/**
 * The change streams and long-polls a process holds open: per owner one
 * subscription to the {@linkcode RevisionFeed}, whatever the number of its
 * streams; one heartbeat timer for every stream (running only while one is
 * open); bounds per user and in all. A stream's state is a few fields: the
 * newest revision it has to announce (several announced before the client
 * reads them are one, the newest), whether a ping is due, and how to wake it.
 * @example
 * ```ts
 * const streams = new RevisionStreams(store.feed, { headOf: (owner) => store.head(owner) });
 * const watcher = await streams.open(owner, request.signal);
 * watcher.start(0, await store.head(owner));
 * return { status: 200, headers: { "content-type": "text/event-stream" }, body: watcher };
 * ```
 */
export class RevisionStreams {
  readonly #feed: RevisionFeed;
  readonly #headOf: (owner: string) => Promise<Revision | undefined>;
  readonly #heartbeatMs: number;
  readonly #maxPerUser: number;
  readonly #maxOpen: number;
  readonly #every: (task: () => void, ms: number) => () => void;
  readonly #after: (task: () => void, ms: number) => () => void;
  readonly #onError: (error: unknown) => void;
  readonly #owners = new Map<string, Owned>();
  readonly #stopGaps: () => void;
  /** What each watcher that was given one asks at a heartbeat. */
  readonly #allowed = new Map<Watcher, StillAllowed>();
  #open = 0;
  #stopHeartbeat: (() => void) | undefined;
  /** A heartbeat's checks of credentials still running: the next heartbeat does not start more. */
  #checking = false;
  #closed = false;

  /**
   * @param feed where revisions are heard
   * @param options the heads' look-up, the heartbeat, the bounds and the timers
   */
  constructor(feed: RevisionFeed, options: RevisionStreamsOptions) {
    this.#feed = feed;
    this.#headOf = options.headOf;
    this.#heartbeatMs = options.heartbeatMs ?? 15_000;
    this.#maxPerUser = options.maxPerUser ?? 8;
    this.#maxOpen = options.maxOpen ?? 10_000;
    this.#every = options.every ?? startEvery;
    this.#after = options.after ?? startTimeout;
    this.#onError = options.onError ?? (() => {});
    this.#stopGaps = feed.onGap(() => void this.#recover());
  }

  /** Streams and long-polls open now. */
  get size(): number {
    return this.#open;
  }

  /**
   * Opens a watcher of an owner's revisions, counted against the bounds,
   * listening once it resolves (a commit after that is heard); ended when
   * `signal` aborts, by its own `close`, when the streams close, or at the
   * first heartbeat after `allowed` answers false (its token expired or was
   * revoked).
   * @param owner the context's owner
   * @param signal the request's: the client going away ends it
   * @param allowed whether its credentials still hold, asked at each heartbeat
   * @returns the watcher, to {@linkcode Watcher.start} with what the client has
   * @throws {SyncError} `ERR_SYNC_TOO_MANY_STREAMS` above the user's bound,
   * `ERR_SYNC_STREAMS_UNAVAILABLE` above the process's or once closed
   * @throws {StorageError} `ERR_STORAGE_UNAVAILABLE` when the feed cannot listen now
   */
  async open(owner: string, signal: AbortSignal, allowed?: StillAllowed): Promise<Watcher> {
    if (this.#closed) {
      throw new SyncError(
        "ERR_SYNC_STREAMS_UNAVAILABLE",
        "Cannot open a change stream: the server is shutting down; connect again shortly",
        { retryAfterMs: RETRY_AFTER_MS },
      );
    }
    let owned = this.#owners.get(owner);
    const mine = owned?.watchers.size ?? 0;
    if (mine >= this.#maxPerUser) {
      throw new SyncError(
        "ERR_SYNC_TOO_MANY_STREAMS",
        `Cannot open a change stream: this user has ${mine} open, the most allowed; close one first`,
        { retryAfterMs: RETRY_AFTER_MS },
      );
    }
    if (this.#open >= this.#maxOpen) {
      throw new SyncError(
        "ERR_SYNC_STREAMS_UNAVAILABLE",
        `Cannot open a change stream: this server holds ${this.#open}, its most; poll, or connect again later`,
        { retryAfterMs: RETRY_AFTER_MS },
      );
    }
    if (owned === undefined) {
      owned = { watchers: new Set(), subscribed: undefined };
      this.#owners.set(owner, owned);
    }
    const watcher = new Watcher(() => this.#release(owner, watcher), this.#after);
    owned.watchers.add(watcher);
    if (allowed !== undefined) this.#allowed.set(watcher, allowed);
    this.#open++;
    this.#stopHeartbeat ??= this.#every(() => this.#beat(), this.#heartbeatMs);
    try {
      owned.subscribed ??= this.#feed.subscribe(owner, (revision) => {
        for (const each of owned.watchers) each.announce(revision);
      });
      await owned.subscribed;
    } catch (error) {
      if (this.#owners.get(owner) === owned) owned.subscribed = undefined;
      watcher.close();
      throw error;
    }
    // Once subscribed: a request already gone closes it here, and its release stops the subscription.
    watcher.endOn(signal);
    return watcher;
  }

  /** Ends every stream and long-poll (a long-poll answers as if its wait had ended), and refuses new ones. */
  close(): void {
    this.#closed = true;
    this.#stopGaps();
    for (const owned of [...this.#owners.values()]) {
      for (const watcher of [...owned.watchers]) watcher.close();
    }
  }

  #release(owner: string, watcher: Watcher): void {
    const owned = this.#owners.get(owner);
    if (owned === undefined || !owned.watchers.delete(watcher)) return;
    this.#allowed.delete(watcher);
    this.#open--;
    if (owned.watchers.size === 0) {
      this.#owners.delete(owner);
      owned.subscribed?.then((stop) => stop(), () => {});
    }
    if (this.#open === 0) {
      this.#stopHeartbeat?.();
      this.#stopHeartbeat = undefined;
    }
  }

  #beat(): void {
    for (const owned of this.#owners.values()) {
      for (const watcher of owned.watchers) watcher.ping();
    }
    if (!this.#checking && this.#allowed.size > 0) void this.#check();
  }

  /**
   * One stream's check: rejected (the store cannot tell now) or unanswered
   * within a heartbeat, the stream stays until the next heartbeat asks again,
   * and a check that never ends does not hold up the later ones.
   */
  #ask(allowed: StillAllowed): Promise<boolean> {
    return new Promise((resolve) => {
      const cancel = this.#after(() => resolve(true), this.#heartbeatMs);
      const answered = (answer: boolean): void => {
        cancel();
        resolve(answer);
      };
      // A check that throws, at once or later, cannot tell: the stream stays.
      const keep = (): void => answered(true);
      let asked: Promise<boolean>;
      try {
        asked = allowed();
      } catch {
        keep();
        return;
      }
      asked.then(answered, keep);
    });
  }

  /** Asks each stream's credentials (a few at once) and ends the streams whose no longer hold. */
  async #check(): Promise<void> {
    this.#checking = true;
    const pairs = [...this.#allowed];
    const next = async (): Promise<void> => {
      for (let pair = pairs.pop(); pair !== undefined; pair = pairs.pop()) {
        const [watcher, allowed] = pair;
        if (watcher.closed) continue;
        if (!(await this.#ask(allowed))) watcher.close();
      }
    };
    try {
      await Promise.all(Array.from({ length: GAP_LOOKUPS }, next));
    } finally {
      this.#checking = false;
    }
  }

  /** After a gap: each watched context's head, announced to its watchers (those already at it ignore it). */
  async #recover(): Promise<void> {
    const owners = [...this.#owners.keys()];
    const next = async (): Promise<void> => {
      for (let owner = owners.pop(); owner !== undefined; owner = owners.pop()) {
        try {
          const head = await this.#headOf(owner);
          const owned = this.#owners.get(owner);
          if (owned === undefined) continue;
          for (const watcher of [...owned.watchers]) {
            if (head === undefined) watcher.close();
            else watcher.announce(head);
          }
        } catch (error) {
          this.#onError(error);
        }
      }
    };
    await Promise.all(Array.from({ length: GAP_LOOKUPS }, next));
  }
}

/**
 * One change stream or long-poll: iterated, it gives the stream's
 * Server-Sent Events (a `retry:` line first, then each announced revision
 * as `id`, `event: revision` and `data: {"revision","serial"}`, and
 * `: ping` comments), and ends when closed.
 */
export class Watcher implements AsyncIterable<string> {
  readonly #release: () => void;
  readonly #after: (task: () => void, ms: number) => () => void;
  /** The serial the client has (what it resumed from, or was last told); -1 before {@linkcode Watcher.start}. */
  #known = -1;
  /** The newest revision to announce, not yet read. */
  #pending: Revision | undefined;
  #greeted = false;
  #pingDue = false;
  #closed = false;
  #wake: (() => void) | undefined;
  #unhook: (() => void) | undefined;

  /**
   * @param release called once when it closes
   * @param after runs a task once after a time (a long-poll's end)
   */
  constructor(release: () => void, after: (task: () => void, ms: number) => () => void) {
    this.#release = release;
    this.#after = after;
  }

  /** Whether it has ended. */
  get closed(): boolean {
    return this.#closed;
  }

  /**
   * Says what the client has and what the head is: the head is announced at
   * once when it is past that (and so is anything newer heard meanwhile).
   * @param known the serial of the client's revision; 0 when it has none (or one unknown)
   * @param head the context's head, read after the watcher was opened
   */
  start(known: number, head: Revision): void {
    this.#known = known;
    if (this.#pending !== undefined && this.#pending.serial <= known) this.#pending = undefined;
    this.announce(head);
  }

  /**
   * A revision heard: kept to be announced when it is newer than what the client has and what waits.
   * @param revision the revision
   */
  announce(revision: Revision): void {
    if (this.#closed) return;
    if (this.#known >= 0 && revision.serial <= this.#known) return;
    if (this.#pending !== undefined && revision.serial <= this.#pending.serial) return;
    this.#pending = revision;
    if (this.#known >= 0) this.#wakeUp();
  }

  /** Asks for a `: ping` (the heartbeat), sent unless something else is sent first. */
  ping(): void {
    this.#pingDue = true;
    this.#wakeUp();
  }

  /**
   * Waits until a revision newer than the client's is heard, the watcher
   * closes, or `ms` pass (a long-poll).
   * @param ms the longest wait, milliseconds
   * @returns whether a newer revision was heard
   */
  async changed(ms: number): Promise<boolean> {
    let ended = false;
    const cancel = this.#after(() => {
      ended = true;
      this.#wakeUp();
    }, ms);
    // Woken by a heartbeat too: waits on until one of the three.
    while (this.#pending === undefined && !this.#closed && !ended) {
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
    cancel();
    return this.#pending !== undefined;
  }

  /**
   * Ends it when the signal aborts.
   * @param signal the request's
   */
  endOn(signal: AbortSignal): void {
    if (signal.aborted) {
      this.close();
      return;
    }
    const end = (): void => this.close();
    signal.addEventListener("abort", end, { once: true });
    this.#unhook = () => signal.removeEventListener("abort", end);
  }

  /** Ends it: the stream finishes, a long-poll stops waiting. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#unhook?.();
    this.#unhook = undefined;
    this.#release();
    this.#wakeUp();
  }

  [Symbol.asyncIterator](): AsyncIterator<string> {
    return {
      next: () => this.#next(),
      return: () => {
        this.close();
        return Promise.resolve({ done: true, value: undefined });
      },
    };
  }

  async #next(): Promise<IteratorResult<string>> {
    for (;;) {
      if (this.#closed) return { done: true, value: undefined };
      if (!this.#greeted) {
        this.#greeted = true;
        return { done: false, value: `retry: ${RECONNECT_MS}\n\n` };
      }
      const revision = this.#pending;
      if (revision !== undefined && this.#known >= 0) {
        this.#pending = undefined;
        this.#known = revision.serial;
        this.#pingDue = false;
        return { done: false, value: revisionEvent(revision) };
      }
      if (this.#pingDue) {
        this.#pingDue = false;
        return { done: false, value: ": ping\n\n" };
      }
      await new Promise<void>((resolve) => (this.#wake = resolve));
      this.#wake = undefined;
    }
  }

  #wakeUp(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }
}

/**
 * A revision as a Server-Sent Event.
 * @param revision the revision
 * @returns the event's lines
 */
export function revisionEvent(revision: Revision): string {
  return `id: ${revision.uuid}\nevent: revision\ndata: ${
    JSON.stringify({ revision: revision.uuid, serial: revision.serial })
  }\n\n`;
}

function startTimeout(task: () => void, ms: number): () => void {
  const timer = setTimeout(task, ms);
  timer.unref();
  return () => clearTimeout(timer);
}

function startEvery(task: () => void, ms: number): () => void {
  const timer = setInterval(task, ms);
  timer.unref();
  return () => clearInterval(timer);
}
