import { SyncError } from "./errors.ts";
import type { ObjectErrors, SyncData, SyncDiff } from "./types.ts";
import { formatTimestamp, readClock } from "./_time.ts";

/**
 * Where a queued request stands: `new` (not started), `work`, `done`,
 * `aborted` (a patch rejected for its input; see `errors`), `failed` (a
 * server failure; the request may be sent again later).
 */
export type TicketStatus = "new" | "work" | "done" | "aborted" | "failed";

/** A ticket as the API shows it. */
export interface Ticket {
  readonly uuid: string;
  /** The patch's `serial`, or null. */
  readonly client_serial: number | null;
  readonly status: TicketStatus;
  /** `yyyy-mm-ddThh:mm:ssZ`, UTC. */
  readonly created_at: string;
  /** `yyyy-mm-ddThh:mm:ssZ`, UTC. */
  readonly status_changed_at: string;
  readonly errors: readonly ObjectErrors[];
}

/** What a queued snapshot or diff produces. */
/**
 * A ticket just made: status `new`, no errors, both times the moment given.
 * @param uuid its id
 * @param clientSerial the client's serial of the request, or null
 * @param time when, milliseconds since the epoch
 * @returns the ticket, frozen
 */
export function newTicket(uuid: string, clientSerial: number | null, time: number): Ticket {
  const stamp = formatTimestamp(time);
  return Object.freeze({
    uuid,
    client_serial: clientSerial,
    status: "new",
    created_at: stamp,
    status_changed_at: stamp,
    errors: Object.freeze([]),
  });
}

export type TicketData = SyncData | SyncDiff;

/** A ticket with its result: `data` is set only for a finished snapshot or diff. */
export interface TicketResult {
  readonly ticket: Ticket;
  readonly data: TicketData | null;
}

/** What {@linkcode TicketStore.update} may set besides the status. */
export interface TicketUpdate {
  /** Replaces the ticket's errors. */
  errors?: readonly ObjectErrors[];
  /** The result of a snapshot or diff; only with status `done`. */
  data?: TicketData;
}

/** Options of {@linkcode TicketStore}. */
export interface TicketStoreOptions {
  /** The clock, in epoch milliseconds; a clock that steps back is read as not moving. */
  now: () => number;
  /** Gives a fresh UUID for each ticket. */
  uuid: () => string;
  /**
   * How long a ticket and its result are kept after its creation, in milliseconds.
   * @default {600000}
   */
  retention?: number;
  /**
   * How long after its creation an expired ticket's id is still answered as
   * expired rather than unknown, in milliseconds.
   * @default {10 * retention}
   */
  forgetAfter?: number;
}

/** A ticket store's whole state as plain data, for a journal's snapshot. */
export interface TicketStoreState {
  /** The clock's last reading (it never goes back). */
  readonly time: number;
  /** Tickets within their retention, oldest first. */
  readonly live: readonly {
    readonly owner: string;
    readonly createdAt: number;
    readonly ticket: Ticket;
    readonly data: TicketData | null;
  }[];
  /** Expired tickets' ids, owners and creation times, oldest first. */
  readonly expired: readonly (readonly [uuid: string, owner: string, createdAt: number])[];
}

/** An expired ticket as {@linkcode TicketStore} answers for it: its owner only. */
interface Expired {
  readonly owner: string;
  readonly ticket: undefined;
}

interface Entry {
  readonly owner: string;
  readonly createdAt: number;
  ticket: Ticket;
  data: TicketData | null;
}

/** Once a status is one of these, it no longer changes. */
const NEXT: { readonly [S in TicketStatus]: readonly TicketStatus[] } = {
  new: ["work", "done", "aborted", "failed"],
  work: ["done", "aborted", "failed"],
  done: [],
  aborted: [],
  failed: [],
};

/**
 * Tickets of queued requests, each owned by a context (a user's uuid). A
 * ticket and its result are kept for the retention period (10 minutes, as
 * the API promises); after it the result is dropped and the id is answered
 * as expired until `forgetAfter`, then as unknown. Another owner's ticket is
 * always unknown. Memory is bounded by the tickets created within `forgetAfter`.
 *
 * @example
 * ```ts
 * const tickets = new TicketStore({ now: Date.now, uuid: () => crypto.randomUUID() });
 * const ticket = tickets.create(user.uuid, patch.serial);
 * tickets.update(ticket.uuid, "done");
 * tickets.get(user.uuid, ticket.uuid); // { ticket: { …, status: "done" }, data: null }
 * ```
 */
export class TicketStore {
  readonly #now: () => number;
  readonly #uuid: () => string;
  readonly #retention: number;
  readonly #forgetAfter: number;
  /** Tickets within their retention, in order of creation (so of age). */
  readonly #live = new Map<string, Entry>();
  /** Expired tickets' owners, in order of creation. */
  readonly #expired = new Map<string, { readonly owner: string; readonly createdAt: number }>();
  #time = 0;

  /**
   * Creates an empty store.
   * @param options the clock, the UUID source and the retention periods
   * @throws {TypeError} when `now` or `uuid` is not a function
   * @throws {RangeError} when a period is not a positive number or `forgetAfter` is below
   * `retention`
   */
  constructor(options: TicketStoreOptions) {
    if (typeof options.now !== "function" || typeof options.uuid !== "function") {
      throw new TypeError("Cannot create a ticket store: now and uuid must be functions");
    }
    const retention = options.retention ?? 600_000;
    const forgetAfter = options.forgetAfter ?? 10 * retention;
    if (!(retention > 0) || !(forgetAfter >= retention)) {
      const got = `${retention} and ${forgetAfter}`;
      const expected = "0 < retention <= forgetAfter";
      throw new RangeError(`Cannot create a ticket store: expected ${expected}, got ${got}`);
    }
    this.#now = options.now;
    this.#uuid = options.uuid;
    this.#retention = retention;
    this.#forgetAfter = forgetAfter;
  }

  /**
   * Rebuilds a store from {@linkcode TicketStore.export}'s data.
   * @param state the exported state
   * @param options the clock, the UUID source and the retention periods
   * @returns the store
   * @throws {TypeError} when the state is not one a store exported
   */
  static restore(state: TicketStoreState, options: TicketStoreOptions): TicketStore {
    const store = new TicketStore(options);
    if (
      typeof state.time !== "number" || !Array.isArray(state.live) || !Array.isArray(state.expired)
    ) {
      throw new TypeError("Cannot restore a ticket store: the state is not one a store exported");
    }
    store.#time = state.time;
    for (const entry of state.live) {
      store.#live.set(entry.ticket.uuid, {
        owner: entry.owner,
        createdAt: entry.createdAt,
        ticket: Object.freeze(entry.ticket),
        data: entry.data,
      });
    }
    for (const [uuid, owner, createdAt] of state.expired) {
      store.#expired.set(uuid, { owner, createdAt });
    }
    return store;
  }

  /**
   * The store's whole state as plain data.
   * @returns the state
   */
  export(): TicketStoreState {
    return {
      time: this.#time,
      live: [...this.#live.values()].map(({ owner, createdAt, ticket, data }) => ({
        owner,
        createdAt,
        ticket,
        data,
      })),
      expired: [...this.#expired].map(([uuid, { owner, createdAt }]) =>
        [uuid, owner, createdAt] as const
      ),
    };
  }

  /** The number of tickets within their retention. */
  get size(): number {
    return this.#live.size;
  }

  /**
   * Creates a ticket with status `new`.
   * @param owner the context it belongs to (the user's uuid)
   * @param clientSerial the patch's `serial`
   * @default {null}
   * @returns the ticket
   * @throws {RangeError} when `clientSerial` is neither null nor a non-negative safe integer
   * @throws {TypeError} when the UUID source repeats itself
   */
  create(owner: string, clientSerial: number | null = null): Ticket {
    if (clientSerial !== null && !(Number.isSafeInteger(clientSerial) && clientSerial >= 0)) {
      const expected = "a non-negative integer or null";
      const message = `client serial must be ${expected}, got ${clientSerial}`;
      throw new RangeError(`Cannot create a ticket: ${message}`);
    }
    const time = this.#tick();
    const uuid = this.#uuid();
    const used = this.#live.has(uuid) || this.#expired.has(uuid);
    if (typeof uuid !== "string" || uuid === "" || used) {
      const message = `the uuid source gave an empty or used id: ${uuid}`;
      throw new TypeError(`Cannot create a ticket: ${message}`);
    }
    const ticket = newTicket(uuid, clientSerial, time);
    this.#live.set(uuid, { owner, createdAt: time, ticket, data: null });
    return ticket;
  }

  /**
   * Moves a ticket to a new status: `new` → `work` → `done` | `aborted` |
   * `failed` (`work` may be skipped); the last three are final.
   * @param uuid the ticket's id
   * @param status the new status
   * @param update errors to report and, for `done`, the result
   * @returns the updated ticket
   * @throws {SyncError} `ERR_SYNC_UNKNOWN_TICKET` or `ERR_SYNC_TICKET_EXPIRED`
   * @throws {TypeError} when the move is not allowed, or data comes with a status other than `done`
   */
  update(uuid: string, status: TicketStatus, update: TicketUpdate = {}): Ticket {
    const time = this.#tick();
    const entry = this.#entry(uuid, time);
    if (entry === undefined) {
      throw unknownTicket(uuid);
    }
    if (entry.ticket === undefined) {
      const message = `Cannot update ticket ${uuid}: it has expired`;
      throw new SyncError("ERR_SYNC_TICKET_EXPIRED", message);
    }
    const from = entry.ticket.status;
    if (!NEXT[from].includes(status)) {
      throw new TypeError(`Cannot update ticket ${uuid}: status ${from} cannot become ${status}`);
    }
    if (update.data !== undefined && status !== "done") {
      throw new TypeError(`Cannot update ticket ${uuid}: data comes only with done, not ${status}`);
    }
    entry.ticket = Object.freeze({
      ...entry.ticket,
      status,
      status_changed_at: formatTimestamp(time),
      errors: update.errors === undefined ? entry.ticket.errors : Object.freeze([...update.errors]),
    });
    if (update.data !== undefined) entry.data = update.data;
    return entry.ticket;
  }

  /**
   * Finds an owner's ticket.
   * @param owner the context asking
   * @param uuid the ticket's id
   * @returns the ticket and its result; `"expired"` past the retention (the API's 410);
   * undefined when never issued, forgotten, or another owner's (404)
   */
  get(owner: string, uuid: string): TicketResult | "expired" | undefined {
    const entry = this.#entry(uuid, this.#tick());
    if (entry === undefined || entry.owner !== owner) return undefined;
    if (entry.ticket === undefined) return "expired";
    return { ticket: entry.ticket, data: entry.data };
  }

  /**
   * Finds an owner's ticket, or says why there is none.
   * @param owner the context asking
   * @param uuid the ticket's id
   * @returns the ticket and its result
   * @throws {SyncError} `ERR_SYNC_TICKET_EXPIRED` past the retention,
   * `ERR_SYNC_UNKNOWN_TICKET` otherwise
   */
  resolve(owner: string, uuid: string): TicketResult {
    const result = this.get(owner, uuid);
    if (result === "expired") {
      throw new SyncError("ERR_SYNC_TICKET_EXPIRED", `Cannot use ticket ${uuid}: it has expired`);
    }
    if (result === undefined) {
      throw unknownTicket(uuid);
    }
    return result;
  }

  /**
   * Drops the results of expired tickets and forgets old expired ids. Costs
   * the entries it drops (amortized constant time per ticket).
   * @returns the number of tickets moved to expired plus the number of ids forgotten
   */
  sweep(): number {
    const time = this.#tick();
    let count = 0;
    for (const [uuid, entry] of this.#live) {
      if (time - entry.createdAt <= this.#retention) break;
      this.#live.delete(uuid);
      this.#expired.set(uuid, { owner: entry.owner, createdAt: entry.createdAt });
      count++;
    }
    for (const [uuid, entry] of this.#expired) {
      if (time - entry.createdAt <= this.#forgetAfter) break;
      this.#expired.delete(uuid);
      count++;
    }
    return count;
  }

  /**
   * Forgets every ticket of an owner, live or expired, with its result (the
   * owner's account is deleted). Costs every ticket held.
   * @param owner the owner
   */
  dropOwner(owner: string): void {
    for (const [uuid, entry] of this.#live) if (entry.owner === owner) this.#live.delete(uuid);
    for (const [uuid, entry] of this.#expired) {
      if (entry.owner === owner) this.#expired.delete(uuid);
    }
  }

  /** Reads the clock, never going back. */
  #tick(): number {
    this.#time = readClock(this.#now, this.#time);
    return this.#time;
  }

  /**
   * A ticket by id as of `time`: its live entry, an owner-only record once
   * expired (its result dropped), or undefined once forgotten.
   */
  #entry(uuid: string, time: number): Entry | Expired | undefined {
    const live = this.#live.get(uuid);
    const record = live ?? this.#expired.get(uuid);
    if (record === undefined || time - record.createdAt > this.#forgetAfter) return undefined;
    if (live !== undefined && time - live.createdAt <= this.#retention) return live;
    // Past its retention: no one may read its result any more, even before the next sweep.
    if (live !== undefined) live.data = null;
    return { owner: record.owner, ticket: undefined };
  }
}

function unknownTicket(uuid: string): SyncError {
  const message = `Cannot find ticket ${uuid}: it was never issued or is forgotten`;
  return new SyncError("ERR_SYNC_UNKNOWN_TICKET", message);
}
