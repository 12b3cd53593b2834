import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  type ObjectErrors,
  RevisionLog,
  type SyncData,
  TicketStore,
  type TicketStoreOptions,
} from "../../lib/sync/mod.ts";

const ALICE = "aaaaaaaa-0000-4000-8000-000000000001";
const BOB = "bbbbbbbb-0000-4000-8000-000000000002";
const T0 = Date.UTC(2024, 5, 1, 12, 0, 0, 250);
const MINUTE = 60_000;

function setup(
  options: Partial<TicketStoreOptions> = {},
): { store: TicketStore; clock: { time: number } } {
  const clock = { time: T0 };
  let n = 0;
  const store = new TicketStore({
    now: () => clock.time,
    uuid: () => `dddddddd-0000-4000-8000-${(++n).toString(16).padStart(12, "0")}`,
    ...options,
  });
  return { store, clock };
}

const DATA: SyncData = new RevisionLog({
  now: () => T0,
  uuid: () => "rev-1",
  me: { uuid: ALICE, username: "alice" },
}).snapshot();
const ERRORS: ObjectErrors[] = [
  {
    section: "deleted_objects",
    entity: "me",
    key: null,
    attribute: null,
    messages: [{
      level: "user_error",
      code: "access_denied",
      message: "Cannot delete the account through sync",
    }],
  },
];

describe("TicketStore.create()", () => {
  it("creates a new ticket in the API's shape", () => {
    const { store } = setup();
    const ticket = store.create(ALICE, 42);
    assert.deepEqual(ticket, {
      uuid: "dddddddd-0000-4000-8000-000000000001",
      client_serial: 42,
      status: "new",
      created_at: "2024-06-01T12:00:00Z",
      status_changed_at: "2024-06-01T12:00:00Z",
      errors: [],
    });
    assert.ok(Object.isFrozen(ticket));
    assert.equal(store.create(ALICE).client_serial, null);
    assert.equal(store.size, 2);
  });

  it("rejects a client serial that is not a non-negative integer", () => {
    const { store } = setup();
    for (const serial of [-1, 1.5, Number.NaN, 2 ** 53]) {
      assert.throws(() => store.create(ALICE, serial), RangeError);
    }
    assert.equal(store.size, 0);
  });

  it("throws when the UUID source repeats an id", () => {
    const store = new TicketStore({ now: () => T0, uuid: () => "same" });
    store.create(ALICE);
    assert.throws(() => store.create(ALICE), TypeError);
  });
});

describe("TicketStore.update()", () => {
  it("moves new -> work -> done with data, stamping status_changed_at", () => {
    const { store, clock } = setup();
    const ticket = store.create(ALICE);
    clock.time += 1500;
    const working = store.update(ticket.uuid, "work");
    assert.equal(working.status, "work");
    assert.equal(working.created_at, "2024-06-01T12:00:00Z");
    assert.equal(working.status_changed_at, "2024-06-01T12:00:01Z");
    clock.time += 1000;
    store.update(ticket.uuid, "done", { data: DATA });
    assert.deepEqual(store.get(ALICE, ticket.uuid), {
      ticket: { ...ticket, status: "done", status_changed_at: "2024-06-01T12:00:02Z" },
      data: DATA,
    });
  });

  it("records the errors of an aborted patch", () => {
    const { store } = setup();
    const ticket = store.create(ALICE, 3);
    assert.deepEqual(store.update(ticket.uuid, "aborted", { errors: ERRORS }).errors, ERRORS);
    assert.deepEqual(store.get(ALICE, ticket.uuid), {
      ticket: { ...ticket, status: "aborted", errors: ERRORS },
      data: null,
    });
  });

  const moves: {
    from: readonly ("work" | "done" | "aborted" | "failed")[];
    to: "new" | "work" | "done" | "aborted" | "failed";
    ok: boolean;
  }[] = [
    { from: [], to: "work", ok: true },
    { from: [], to: "done", ok: true },
    { from: [], to: "aborted", ok: true },
    { from: [], to: "failed", ok: true },
    { from: [], to: "new", ok: false },
    { from: ["work"], to: "failed", ok: true },
    { from: ["work"], to: "work", ok: false },
    { from: ["work"], to: "new", ok: false },
    { from: ["done"], to: "work", ok: false },
    { from: ["aborted"], to: "done", ok: false },
    { from: ["work", "failed"], to: "done", ok: false },
  ];
  for (const move of moves) {
    it(`${move.ok ? "allows" : "refuses"} ${["new", ...move.from].join(" -> ")} -> ${move.to}`, () => {
      const { store } = setup();
      const ticket = store.create(ALICE);
      for (const status of move.from) store.update(ticket.uuid, status);
      if (move.ok) assert.equal(store.update(ticket.uuid, move.to).status, move.to);
      else assert.throws(() => store.update(ticket.uuid, move.to), TypeError);
    });
  }

  it("takes data only with status done", () => {
    const { store } = setup();
    const ticket = store.create(ALICE);
    assert.throws(() => store.update(ticket.uuid, "failed", { data: DATA }), TypeError);
    assert.equal(store.resolve(ALICE, ticket.uuid).ticket.status, "new");
  });

  it("says whether a ticket is unknown or expired", () => {
    const { store, clock } = setup();
    const ticket = store.create(ALICE);
    assert.throws(() => store.update("unknown", "work"), {
      name: "SyncError",
      code: "ERR_SYNC_UNKNOWN_TICKET",
    });
    clock.time += 10 * MINUTE + 1;
    assert.throws(() => store.update(ticket.uuid, "work"), {
      name: "SyncError",
      code: "ERR_SYNC_TICKET_EXPIRED",
    });
  });
});

describe("TicketStore.get()", () => {
  it("never shows a ticket to another owner", () => {
    const { store, clock } = setup();
    const ticket = store.create(ALICE);
    store.update(ticket.uuid, "done", { data: DATA });
    assert.equal(store.get(BOB, ticket.uuid), undefined);
    assert.throws(() => store.resolve(BOB, ticket.uuid), {
      name: "SyncError",
      code: "ERR_SYNC_UNKNOWN_TICKET",
    });
    clock.time += 11 * MINUTE;
    assert.equal(store.get(BOB, ticket.uuid), undefined, "nor says another owner's ticket expired");
  });

  it("answers undefined for an id never issued", () => {
    const { store } = setup();
    assert.equal(store.get(ALICE, "dddddddd-0000-4000-8000-000000000001"), undefined);
  });

  it("keeps a ticket for the retention, then answers expired without its data", () => {
    const { store, clock } = setup();
    const ticket = store.create(ALICE);
    store.update(ticket.uuid, "done", { data: DATA });
    clock.time += 10 * MINUTE;
    assert.equal(store.resolve(ALICE, ticket.uuid).data, DATA);
    clock.time += 1;
    assert.equal(store.get(ALICE, ticket.uuid), "expired");
    assert.throws(() => store.resolve(ALICE, ticket.uuid), {
      name: "SyncError",
      code: "ERR_SYNC_TICKET_EXPIRED",
    });
  });

  it("forgets an expired ticket after ten times the retention", () => {
    const { store, clock } = setup({ retention: MINUTE });
    const ticket = store.create(ALICE);
    clock.time += 10 * MINUTE;
    assert.equal(store.get(ALICE, ticket.uuid), "expired");
    store.sweep();
    assert.equal(store.get(ALICE, ticket.uuid), "expired");
    clock.time += 1;
    assert.equal(store.get(ALICE, ticket.uuid), undefined);
    assert.equal(store.sweep(), 1);
    assert.equal(store.get(ALICE, ticket.uuid), undefined);
  });

  it("reads a clock that steps back as not moving", () => {
    const { store, clock } = setup();
    const ticket = store.create(ALICE);
    clock.time += 11 * MINUTE;
    assert.equal(store.get(ALICE, ticket.uuid), "expired");
    clock.time = T0;
    assert.equal(store.get(ALICE, ticket.uuid), "expired");
  });
});

describe("TicketStore.sweep()", () => {
  it("drops expired tickets in order of age and forgets old ids", () => {
    const { store, clock } = setup({ retention: MINUTE, forgetAfter: 3 * MINUTE });
    const first = store.create(ALICE);
    clock.time += 30_000;
    const second = store.create(BOB);
    store.update(second.uuid, "done", { data: DATA });
    clock.time += 30_001;
    assert.equal(store.sweep(), 1);
    assert.equal(store.size, 1);
    assert.equal(store.get(ALICE, first.uuid), "expired");
    assert.equal(store.resolve(BOB, second.uuid).data, DATA);
    clock.time += 30_000;
    assert.equal(store.sweep(), 1);
    assert.equal(store.size, 0);
    assert.equal(store.get(BOB, second.uuid), "expired");
    assert.equal(store.get(ALICE, second.uuid), undefined);
    clock.time += 2 * MINUTE - 30_000;
    assert.equal(store.sweep(), 1);
    assert.equal(store.get(ALICE, first.uuid), undefined);
    assert.equal(store.get(BOB, second.uuid), "expired");
    clock.time += 30_000;
    assert.equal(store.sweep(), 1);
    assert.equal(store.sweep(), 0);
  });

  it("keeps memory bounded by the tickets of the forget window", () => {
    const { store, clock } = setup({ retention: 1000, forgetAfter: 5000 });
    for (let n = 0; n < 20_000; n++) {
      const ticket = store.create(n % 2 === 0 ? ALICE : BOB);
      store.update(ticket.uuid, "done", { data: DATA });
      clock.time += 10;
      if (n % 100 === 0) store.sweep();
    }
    assert.ok(store.size <= 101 + 100, `live tickets: ${store.size}`);
    clock.time += 6000;
    assert.equal(store.sweep() > 0, true);
    assert.equal(store.size, 0);
    assert.equal(store.sweep(), 0);
  });
});

describe("TicketStore", () => {
  it("rejects bad options", () => {
    const now = (): number => T0;
    const uuid = (): string => "x";
    assert.throws(() => new TicketStore({ now: null as never, uuid }), TypeError);
    assert.throws(() => new TicketStore({ now, uuid: 1 as never }), TypeError);
    assert.throws(() => new TicketStore({ now, uuid, retention: 0 }), RangeError);
    assert.throws(() => new TicketStore({ now, uuid, retention: Number.NaN }), RangeError);
    assert.throws(() => new TicketStore({ now, uuid, retention: 10, forgetAfter: 5 }), RangeError);
  });
});
