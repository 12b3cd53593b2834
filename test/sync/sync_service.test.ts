import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  applyDiff,
  type MemorySyncStore,
  type SyncData,
  type SyncDiff,
  type SyncStore,
  type Ticket,
} from "../../lib/sync/mod.ts";
import {
  ALICE,
  BASE,
  BOB,
  key,
  message,
  type SyncFixture,
  syncFixture,
  T0,
  team,
} from "../_helpers/sync.ts";
import { call } from "../_helpers/water.ts";

const DAY = 24 * 3600 * 1000;

interface Answer<T> {
  ticket: Ticket | null;
  data: T | null;
}

async function snapshot(fixture: SyncFixture, user = ALICE): Promise<SyncData> {
  const response = await fixture.request(user, BASE);
  assert.equal(response.status, 200, response.text);
  return (response.json() as Answer<SyncData>).data!;
}

/** Submits a patch, runs the job, and returns the finished ticket. */
async function submit(fixture: SyncFixture, patch: unknown, user = ALICE): Promise<Ticket> {
  const response = await fixture.request(user, BASE, {
    method: "POST",
    body: JSON.stringify(patch),
  });
  assert.equal(response.status, 202, response.text);
  const { ticket } = response.json() as Answer<never>;
  await fixture.runJobs();
  return ((await fixture.request(user, `${BASE}/ticket/${ticket!.uuid}`)).json() as Answer<never>)
    .ticket!;
}

function errorCode(text: string): unknown {
  return (JSON.parse(text) as { error: { code: unknown } }).error.code;
}

describe("GET /api/v2/sync/user (snapshot)", () => {
  it("answers 200 {ticket: null, data} with the user's objects, an ETag and revalidation", async () => {
    const fixture = await syncFixture();
    const response = await fixture.request(ALICE, BASE);
    assert.equal(response.status, 200);
    const body = response.json() as Answer<SyncData>;
    assert.equal(body.ticket, null);
    assert.deepEqual(body.data!.objects, {
      me: { uuid: ALICE, username: "alice", notify_language: null },
      messages: [],
      teams: [],
    });
    assert.equal(body.data!.serial, 1);
    assert.equal(body.data!.created_at, "2026-01-05T10:00:00Z");
    assert.equal(response.headers["etag"], `"${body.data!.revision}"`);
    assert.equal(response.headers["cache-control"], "private, no-cache");
    assert.match(response.headers["content-type"]!, /^application\/json/);
  });

  it("answers 304 without a body for a matching If-None-Match, and 200 once the data changed", async () => {
    const fixture = await syncFixture();
    const etag = (await fixture.request(ALICE, BASE)).headers["etag"]!;
    const cached = await fixture.request(ALICE, BASE, { headers: { "if-none-match": etag } });
    assert.equal(cached.status, 304);
    assert.equal(cached.text, "");
    assert.equal(cached.headers["etag"], etag);
    await submit(fixture, { objects: { messages: [message(1)] } });
    const changed = await fixture.request(ALICE, BASE, { headers: { "if-none-match": etag } });
    assert.equal(changed.status, 200);
    assert.notEqual(changed.headers["etag"], etag);
  });

  it("answers 202 with a new ticket above the queue size, then the ticket is done with the snapshot", async () => {
    const fixture = await syncFixture({ queueAboveObjects: 2 });
    await submit(fixture, { objects: { messages: [message(1), message(2)] } });
    const response = await fixture.request(ALICE, BASE);
    assert.equal(response.status, 202);
    const { ticket, data } = response.json() as Answer<SyncData>;
    assert.equal(data, null);
    assert.equal(ticket!.status, "new");
    assert.equal(ticket!.client_serial, null);
    assert.deepEqual(ticket!.errors, []);
    assert.equal(response.headers["cache-control"], "no-store");
    const waiting = (await fixture.request(ALICE, `${BASE}/ticket/${ticket!.uuid}`))
      .json() as Answer<SyncData>;
    assert.equal(waiting.ticket!.status, "new");
    assert.equal(waiting.data, null);
    await fixture.runJobs();
    const done = (await fixture.request(ALICE, `${BASE}/ticket/${ticket!.uuid}`)).json() as Answer<
      SyncData
    >;
    assert.equal(done.ticket!.status, "done");
    assert.deepEqual(done.data!.objects.messages.map((m) => m["uuid"]), [key(1), key(2)]);
    assert.equal(done.data!.serial, 2);
  });

  it("shows each user only their own context", async () => {
    const fixture = await syncFixture();
    await submit(fixture, { objects: { messages: [message(1)] } }, ALICE);
    const bob = await snapshot(fixture, BOB);
    assert.deepEqual(bob.objects, {
      me: { uuid: BOB, username: "bob", notify_language: "fr" },
      messages: [],
      teams: [],
    });
  });

  it("answers 404 ERR_SYNC_NO_CONTEXT for a user without a context", async () => {
    const fixture = await syncFixture();
    const response = await fixture.request("c0000000-0000-4000-8000-000000000003", BASE);
    assert.equal(response.status, 404);
    assert.equal(errorCode(response.text), "ERR_SYNC_NO_CONTEXT");
  });

  it("makes the context of a user who has none through completeContext, for a snapshot and for a patch, once", async () => {
    const CAROL = "c0000000-0000-4000-8000-000000000003";
    const DAVE = "c0000000-0000-4000-8000-000000000004";
    const asked: string[] = [];
    // Set once the fixture exists; the hook below reads it only later.
    // deno-lint-ignore prefer-const
    let store: MemorySyncStore | undefined;
    const fixture = await syncFixture({
      // A user the accounts know (carol, dave), whose context a crash left unmade; nobody else.
      completeContext: async (owner) => {
        asked.push(owner);
        if (owner !== CAROL && owner !== DAVE) return false;
        return store!.createContext({
          uuid: owner,
          username: owner === CAROL ? "carol" : "dave",
          notifyLanguage: null,
        });
      },
    });
    store = fixture.store;
    const carol = await snapshot(fixture, CAROL);
    assert.deepEqual(carol.objects.me, { uuid: CAROL, username: "carol", notify_language: null });
    await snapshot(fixture, CAROL);
    const ticket = await submit(fixture, { objects: { messages: [message(1)] } }, DAVE);
    assert.equal(ticket.status, "done", "the patch applied once the context was made");
    assert.equal((await snapshot(fixture, DAVE)).objects.messages?.length, 1);
    const stranger = await fixture.request("c0000000-0000-4000-8000-000000000099", BASE);
    assert.equal(stranger.status, 404, "no account: no context made");
    assert.deepEqual(
      asked,
      [CAROL, DAVE, "c0000000-0000-4000-8000-000000000099"],
      "asked only when a context was missing",
    );
  });

  it("passes the authorizer's refusal on", async () => {
    const fixture = await syncFixture();
    const response = await call(fixture.handler, BASE, { headers: {} });
    assert.equal(response.status, 401);
    assert.equal(errorCode(response.text), "ERR_HTTP_UNAUTHORIZED");
  });
});

describe("GET /api/v2/sync/user/since/<revision> (diff)", () => {
  it("answers 200 with what changed after the base: objects changed and keys deleted", async () => {
    const fixture = await syncFixture();
    await submit(fixture, { objects: { messages: [message(1), message(2)], teams: [team(1)] } });
    const base = await snapshot(fixture);
    await submit(fixture, {
      objects: { messages: [message(2, "Changed")], teams: [team(2)] },
      deleted_objects: { messages: [key(1)] },
    });
    const response = await fixture.request(ALICE, `${BASE}/since/${base.revision}`);
    assert.equal(response.status, 200);
    const { ticket, data } = response.json() as Answer<SyncDiff>;
    assert.equal(ticket, null);
    assert.equal(data!.base_revision, base.revision);
    assert.equal(data!.serial, 3);
    assert.deepEqual(data!.deleted_objects, { me: null, messages: [key(1)], teams: [] });
    assert.deepEqual(data!.objects.me, null);
    assert.deepEqual(data!.objects.messages.map((m) => m["subject"]), ["Changed"]);
    assert.deepEqual(data!.objects.teams.map((t) => t["uuid"]), [key(1002)]);
    assert.equal(response.headers["etag"], `"${base.revision}.${data!.revision}"`);
    // A client applying the diff to its copy holds the current snapshot.
    assert.deepEqual(applyDiff(base, data!), await snapshot(fixture));
  });

  it("answers 204 when nothing changed after the base", async () => {
    const fixture = await syncFixture();
    const base = await snapshot(fixture);
    const response = await fixture.request(ALICE, `${BASE}/since/${base.revision}`);
    assert.equal(response.status, 204);
    assert.equal(response.text, "");
  });

  it("answers 304 for a matching If-None-Match, 200 once the head moved", async () => {
    const fixture = await syncFixture();
    const base = await snapshot(fixture);
    await submit(fixture, { objects: { messages: [message(1)] } });
    const first = await fixture.request(ALICE, `${BASE}/since/${base.revision}`);
    const etag = first.headers["etag"]!;
    const again = await fixture.request(ALICE, `${BASE}/since/${base.revision}`, {
      headers: { "if-none-match": `W/${etag}` },
    });
    assert.equal(again.status, 304);
    assert.equal(again.text, "");
    await submit(fixture, { objects: { messages: [message(2)] } });
    const moved = await fixture.request(ALICE, `${BASE}/since/${base.revision}`, {
      headers: { "if-none-match": etag },
    });
    assert.equal(moved.status, 200);
  });

  it("accepts the revision id in upper case", async () => {
    const fixture = await syncFixture();
    const base = await snapshot(fixture);
    await submit(fixture, { objects: { messages: [message(1)] } });
    const response = await fixture.request(ALICE, `${BASE}/since/${base.revision.toUpperCase()}`);
    assert.equal(response.status, 200);
  });

  it("answers 404 for a revision never issued, and for another user's revision, never data", async () => {
    const fixture = await syncFixture();
    const never = await fixture.request(
      ALICE,
      `${BASE}/since/99999999-0000-4000-8000-000000000000`,
    );
    assert.equal(never.status, 404);
    assert.equal(errorCode(never.text), "ERR_SYNC_UNKNOWN_REVISION");
    const bobs = await snapshot(fixture, BOB);
    await submit(fixture, { objects: { messages: [message(1)] } }, BOB);
    const response = await fixture.request(ALICE, `${BASE}/since/${bobs.revision}`);
    assert.equal(response.status, 404);
    assert.equal(errorCode(response.text), "ERR_SYNC_UNKNOWN_REVISION");
    assert.doesNotMatch(response.text, new RegExp(key(1)));
  });

  it("answers 410 for a base revision past the retention, 30 days by default", async () => {
    const fixture = await syncFixture();
    const old = await snapshot(fixture);
    await submit(fixture, { objects: { messages: [message(1)] } });
    fixture.clock.time = T0 + 29 * DAY;
    await submit(fixture, { objects: { messages: [message(2)] } });
    assert.equal((await fixture.request(ALICE, `${BASE}/since/${old.revision}`)).status, 200);
    fixture.clock.time = T0 + 30 * DAY + 1;
    const response = await fixture.request(ALICE, `${BASE}/since/${old.revision}`);
    assert.equal(response.status, 410);
    assert.equal(errorCode(response.text), "ERR_SYNC_REVISION_EXPIRED");
    // The head never expires: a client holding it has nothing to fetch.
    fixture.clock.time = T0 + 90 * DAY;
    const head = await snapshot(fixture);
    assert.equal((await fixture.request(ALICE, `${BASE}/since/${head.revision}`)).status, 204);
  });

  it("answers 202 above the queue size, then the ticket is done with the diff", async () => {
    const fixture = await syncFixture({ queueAboveObjects: 1 });
    const base = await snapshot(fixture);
    await submit(fixture, { objects: { messages: [message(1), message(2)] } });
    const response = await fixture.request(ALICE, `${BASE}/since/${base.revision}`);
    assert.equal(response.status, 202);
    const { ticket, data } = response.json() as Answer<SyncDiff>;
    assert.equal(data, null);
    assert.equal(ticket!.status, "new");
    await fixture.runJobs();
    const done = (await fixture.request(ALICE, `${BASE}/ticket/${ticket!.uuid}`)).json() as Answer<
      SyncDiff
    >;
    assert.equal(done.ticket!.status, "done");
    assert.equal(done.data!.base_revision, base.revision);
    assert.deepEqual(done.data!.objects.messages.map((m) => m["uuid"]), [key(1), key(2)]);
  });

  it("fails a queued diff whose base expired before it ran, without reporting an error", async () => {
    const fixture = await syncFixture({ queueAboveObjects: 0 });
    const base = (await fixture.store.head(ALICE))!;
    // The base stops being the head at T0 + 60 s: a base until T0 + 30 days + 60 s.
    fixture.clock.time = T0 + 60_000;
    await submit(fixture, { objects: { messages: [message(1)] } });
    fixture.clock.time = T0 + 30 * DAY + 30_000;
    const { ticket } = (await fixture.request(ALICE, `${BASE}/since/${base.uuid}`))
      .json() as Answer<SyncDiff>;
    fixture.clock.time = T0 + 30 * DAY + 90_000;
    await fixture.runJobs();
    const failed = (await fixture.request(ALICE, `${BASE}/ticket/${ticket!.uuid}`))
      .json() as Answer<SyncDiff>;
    assert.equal(failed.ticket!.status, "failed");
    assert.equal(failed.data, null);
    assert.deepEqual(fixture.jobErrors, []);
  });

  it("answers 400 ERR_SYNC_INVALID_ID for a revision that is not a UUID", async () => {
    const fixture = await syncFixture();
    for (const bad of ["not-a-uuid", "123", "00000000-0000-4000-8000-00000000000g", "%E2%9C%93"]) {
      const response = await fixture.request(ALICE, `${BASE}/since/${bad}`);
      assert.equal(response.status, 400, bad);
      assert.equal(errorCode(response.text), "ERR_SYNC_INVALID_ID");
    }
  });
});

describe("POST /api/v2/sync/user (patch)", () => {
  it("answers 202 with the ticket echoing the serial, the patch already applied as one revision when nothing of the user's waits", async () => {
    const fixture = await syncFixture();
    const response = await fixture.request(ALICE, BASE, {
      method: "POST",
      body: JSON.stringify({ objects: { messages: [message(1)], teams: [team(1)] }, serial: 42 }),
    });
    assert.equal(response.status, 202);
    const { ticket, data } = response.json() as Answer<never>;
    assert.equal(data, null);
    assert.equal(ticket!.status, "done");
    assert.equal(ticket!.client_serial, 42);
    assert.equal(fixture.waiting(), 0, "nothing queued");
    const after = await snapshot(fixture);
    assert.equal(after.serial, 2);
    assert.equal(after.objects.messages.length, 1);
    assert.equal(after.objects.teams.length, 1);
    const followed = (await fixture.request(ALICE, `${BASE}/ticket/${ticket!.uuid}`))
      .json() as Answer<never>;
    assert.deepEqual(followed.ticket, ticket);
  });

  it("answers 202 with a new ticket behind the user's queued work, then applies the patch after it", async () => {
    const fixture = await syncFixture({ queueAboveObjects: 0 });
    const queued = await fixture.request(ALICE, BASE);
    assert.equal(queued.status, 202, "a snapshot queued first");
    const response = await fixture.request(ALICE, BASE, {
      method: "POST",
      body: JSON.stringify({ objects: { messages: [message(1)] }, serial: 7 }),
    });
    assert.equal(response.status, 202);
    const { ticket } = response.json() as Answer<never>;
    assert.equal(ticket!.status, "new");
    assert.equal(ticket!.client_serial, 7);
    assert.equal(
      (await fixture.store.head(ALICE))!.serial,
      1,
      "nothing applied before the queue runs",
    );
    await fixture.runJobs();
    const done = (await fixture.request(ALICE, `${BASE}/ticket/${ticket!.uuid}`)).json() as Answer<
      never
    >;
    assert.equal(done.ticket!.status, "done");
    assert.equal((await fixture.store.head(ALICE))!.serial, 2);
    const first = (await fixture.request(
      ALICE,
      `${BASE}/ticket/${(queued.json() as Answer<SyncData>).ticket!.uuid}`,
    )).json() as Answer<SyncData>;
    assert.equal(first.data!.serial, 1, "the snapshot queued first was taken before the patch");
  });

  it("aborts a refused patch in the answer's ticket when nothing waits", async () => {
    const fixture = await syncFixture();
    const response = await fixture.request(ALICE, BASE, {
      method: "POST",
      body: JSON.stringify({ deleted_objects: { teams: [team(9)["uuid"]] } }),
    });
    assert.equal(response.status, 202);
    const { ticket } = response.json() as Answer<never>;
    assert.equal(ticket!.status, "aborted");
    assert.notEqual(ticket!.errors.length, 0);
    assert.equal((await fixture.store.head(ALICE))!.serial, 1);
  });

  it("applies queued patches in the order they were accepted", async () => {
    const fixture = await syncFixture();
    await fixture.request(ALICE, BASE, {
      method: "POST",
      body: JSON.stringify({ objects: { messages: [message(1, "first")] } }),
    });
    await fixture.request(ALICE, BASE, {
      method: "POST",
      body: JSON.stringify({ objects: { messages: [message(1, "second")] } }),
    });
    await fixture.runJobs();
    const after = await snapshot(fixture);
    assert.equal(after.serial, 3);
    assert.equal(after.objects.messages[0]!["subject"], "second");
  });

  it("ends the ticket aborted with the object's errors when a rule is broken, applying nothing", async () => {
    const fixture = await syncFixture();
    const ticket = await submit(fixture, {
      objects: { messages: [message(2)] },
      deleted_objects: { messages: [key(1)] },
    });
    assert.equal(ticket.status, "aborted");
    assert.deepEqual(ticket.errors, [{
      section: "deleted_objects",
      entity: "messages",
      key: { uuid: key(1) },
      attribute: null,
      messages: [{
        level: "user_error",
        code: "object_not_found",
        message: ticket.errors[0]!.messages[0]!.message,
      }],
    }]);
    assert.equal((await snapshot(fixture)).serial, 1);
  });

  it("answers 422 with [{message, field}] for a body that is not a patch", async () => {
    const fixture = await syncFixture();
    const cases = [
      {
        body: { objects: { messages: [{ ...message(1), subject: 7 }] } },
        field: "objects.messages[0].subject",
      },
      { body: { objects: { messages: [message(1)] }, colour: "red" }, field: "colour" },
      { body: { serial: 1 }, field: "objects" },
      { body: [], field: undefined },
      {
        body: { objects: { messages: [{ ...message(1), uuid: "nope" }] } },
        field: "objects.messages[0].uuid",
      },
    ];
    for (const c of cases) {
      const response = await fixture.request(ALICE, BASE, {
        method: "POST",
        body: JSON.stringify(c.body),
      });
      assert.equal(response.status, 422, JSON.stringify(c.body));
      const errors = response.json() as { message: string; field?: string }[];
      assert.ok(Array.isArray(errors) && errors.length > 0);
      assert.ok(errors.every((e) => typeof e.message === "string" && e.message !== ""));
      assert.equal(errors[0]!.field, c.field, JSON.stringify(errors));
    }
    assert.equal(fixture.waiting(), 0, "nothing was queued");
  });

  it("answers 400 for malformed JSON, 415 for another content type, 413 for an oversize body", async () => {
    const fixture = await syncFixture({ maxPatchBytes: 1024 });
    const broken = await fixture.request(ALICE, BASE, { method: "POST", body: '{"objects": {' });
    assert.equal(broken.status, 400);
    assert.equal(errorCode(broken.text), "ERR_HTTP_INVALID_JSON");
    const form = await fixture.request(ALICE, BASE, {
      method: "POST",
      body: "objects=1",
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    assert.equal(form.status, 415);
    const big = await fixture.request(ALICE, BASE, {
      method: "POST",
      body: JSON.stringify({ objects: { messages: [message(1, "x".repeat(2000))] } }),
    });
    assert.equal(big.status, 413);
    const deep = await fixture.request(ALICE, BASE, {
      method: "POST",
      body: `${"[".repeat(20)}${"]".repeat(20)}`,
    });
    assert.equal(deep.status, 400);
    assert.equal(fixture.waiting(), 0);
  });

  it("reports a failure of the store's work runner", async () => {
    const fixture = await syncFixture({
      queueAboveObjects: 0,
      store: (store) =>
        Object.assign(Object.create(store) as SyncStore, {
          enqueue: store.enqueue.bind(store),
          ticket: store.ticket.bind(store),
          head: store.head.bind(store),
          size: store.size.bind(store),
          runWork: () => Promise.reject(new Error("disk full")),
        }),
    });
    assert.equal((await fixture.request(ALICE, BASE)).status, 202);
    await fixture.runJobs();
    assert.equal((fixture.jobErrors[0] as Error).message, "disk full");
  });
});

describe("POST /api/v2/sync/user with Idempotency-Key", () => {
  const post = (fixture: SyncFixture, body: unknown, key: string) =>
    fixture.request(ALICE, BASE, {
      method: "POST",
      body: JSON.stringify(body),
      headers: { "idempotency-key": key },
    });

  it("answers a retry with the first ticket and applies the patch once; another body under the key is 422", async () => {
    const fixture = await syncFixture();
    const body = { objects: { messages: [message(1)] }, serial: 3 };
    const first = (await post(fixture, body, "7d1c6c1e-3f0a-4c8e-9c7b-2f3e4d5a6b7c"))
      .json() as Answer<never>;
    const retry = await post(fixture, body, "7d1c6c1e-3f0a-4c8e-9c7b-2f3e4d5a6b7c");
    assert.equal(retry.status, 202);
    assert.equal((retry.json() as Answer<never>).ticket!.uuid, first.ticket!.uuid);
    assert.equal(fixture.waiting() <= 1, true, "one run queued");
    await fixture.runJobs();
    const head = (await fixture.store.head(ALICE))!;
    const again = await post(fixture, body, '"7d1c6c1e-3f0a-4c8e-9c7b-2f3e4d5a6b7c"');
    assert.equal(
      (again.json() as Answer<never>).ticket!.status,
      "done",
      "a structured-field string is the same key; the ticket as it is now",
    );
    await fixture.runJobs();
    assert.deepEqual(await fixture.store.head(ALICE), head, "applied once");
    const other = await post(
      fixture,
      { objects: { messages: [message(2)] } },
      "7d1c6c1e-3f0a-4c8e-9c7b-2f3e4d5a6b7c",
    );
    assert.equal(other.status, 422, other.text);
    assert.equal(errorCode(other.text), "ERR_SYNC_IDEMPOTENCY_MISMATCH");
  });

  it("answers 400 to a key that is empty, too long or not visible ASCII", async () => {
    const fixture = await syncFixture();
    for (const bad of ["", " ", "x".repeat(256), "clé"]) {
      const response = await post(fixture, { objects: { messages: [message(1)] } }, bad);
      assert.equal(response.status, 400, JSON.stringify(bad));
      assert.equal(errorCode(response.text), "ERR_SYNC_INVALID_IDEMPOTENCY_KEY");
    }
  });
});

describe("DELETE /api/v2/sync/user (account deletion)", () => {
  it("erases the context and calls the account hook, 204; a patch deleting one's own me does the same", async () => {
    for (const how of ["DELETE", "patch"] as const) {
      const deleted: string[] = [];
      const fixture = await syncFixture({
        onAccountDeleted: (owner) => (deleted.push(owner), Promise.resolve()),
      });
      await submit(fixture, { objects: { messages: [message(1)] } });
      const response = how === "DELETE"
        ? await fixture.request(ALICE, BASE, { method: "DELETE" })
        : await fixture.request(ALICE, BASE, {
          method: "POST",
          body: JSON.stringify({ deleted_objects: { me: ALICE } }),
        });
      assert.equal(response.status, 204, `${how}: ${response.text}`);
      assert.deepEqual(deleted, [ALICE]);
      assert.equal(await fixture.store.head(ALICE), undefined);
      assert.equal((await fixture.request(ALICE, BASE)).status, 404, "no context any more");
      assert.equal((await fixture.store.head(BOB))?.serial, 1, "others stay");
    }
  });

  it("refuses a patch deleting another user's me, applying nothing", async () => {
    const fixture = await syncFixture();
    const ticket = await submit(fixture, { deleted_objects: { me: BOB } });
    assert.equal(ticket.status, "aborted");
    assert.equal((await fixture.store.head(BOB))?.serial, 1);
  });
});

describe("GET /api/v2/sync/user/ticket/<uuid>", () => {
  it("answers 410 once the ticket's retention (10 minutes) has passed", async () => {
    const fixture = await syncFixture();
    const ticket = await submit(fixture, { objects: { messages: [message(1)] } });
    fixture.clock.time = T0 + 10 * 60 * 1000;
    assert.equal((await fixture.request(ALICE, `${BASE}/ticket/${ticket.uuid}`)).status, 200);
    fixture.clock.time = T0 + 10 * 60 * 1000 + 1;
    const response = await fixture.request(ALICE, `${BASE}/ticket/${ticket.uuid}`);
    assert.equal(response.status, 410);
    assert.equal(errorCode(response.text), "ERR_SYNC_TICKET_EXPIRED");
  });

  it("answers 404 for an unknown ticket and for another user's", async () => {
    const fixture = await syncFixture();
    const ticket = await submit(fixture, { objects: { messages: [message(1)] } });
    const unknown = await fixture.request(
      ALICE,
      `${BASE}/ticket/99999999-0000-4000-8000-000000000000`,
    );
    assert.equal(unknown.status, 404);
    assert.equal(errorCode(unknown.text), "ERR_SYNC_UNKNOWN_TICKET");
    assert.equal((await fixture.request(BOB, `${BASE}/ticket/${ticket.uuid}`)).status, 404);
  });

  it("answers 400 for a ticket id that is not a UUID", async () => {
    const fixture = await syncFixture();
    const response = await fixture.request(ALICE, `${BASE}/ticket/${"x".repeat(300)}`);
    assert.equal(response.status, 400);
    assert.equal(errorCode(response.text), "ERR_SYNC_INVALID_ID");
    assert.ok(response.text.length < 1000, "the id is not echoed whole");
  });

  it("is never cached", async () => {
    const fixture = await syncFixture();
    const ticket = await submit(fixture, { objects: { messages: [message(1)] } });
    const response = await fixture.request(ALICE, `${BASE}/ticket/${ticket.uuid}`);
    assert.equal(response.headers["cache-control"], "no-store");
  });
});

describe("limits on queued work", () => {
  it("gives the same ticket for the same queued snapshot or diff while it waits", async () => {
    const fixture = await syncFixture({ queueAboveObjects: 0 });
    const first = (await fixture.request(ALICE, BASE)).json() as Answer<SyncData>;
    const again = (await fixture.request(ALICE, BASE)).json() as Answer<SyncData>;
    assert.equal(again.ticket!.uuid, first.ticket!.uuid);
    await fixture.runJobs();
    const later = (await fixture.request(ALICE, BASE)).json() as Answer<SyncData>;
    assert.notEqual(later.ticket!.uuid, first.ticket!.uuid, "once done, a new request is new work");
  });

  it("answers 429 with Retry-After past the queued requests a user may have, and frees the places as jobs finish", async () => {
    const fixture = await syncFixture({ maxPendingPerUser: 2, queueAboveObjects: 0 });
    const patch = (n: number) =>
      fixture.request(ALICE, BASE, {
        method: "POST",
        body: JSON.stringify({ objects: { messages: [message(n)] } }),
      });
    assert.equal(
      (await fixture.request(ALICE, BASE)).status,
      202,
      "a queued snapshot holds a place",
    );
    assert.equal(
      ((await patch(1)).json() as Answer<never>).ticket!.status,
      "new",
      "queued behind it",
    );
    const busy = await patch(2);
    assert.equal(busy.status, 429);
    assert.equal(busy.headers["retry-after"], "1");
    assert.equal(errorCode(busy.text), "ERR_SYNC_BUSY");
    assert.equal(
      (await fixture.request(BOB, BASE, {
        method: "POST",
        body: JSON.stringify({ objects: { messages: [message(1)] } }),
      })).status,
      202,
      "other users are not held up",
    );
    await fixture.runJobs();
    assert.equal((await patch(2)).status, 202);
  });

  it("answers HEAD of a queued snapshot 202 without queuing anything", async () => {
    const fixture = await syncFixture({ queueAboveObjects: 0 });
    const response = await fixture.request(ALICE, BASE, { method: "HEAD" });
    assert.equal(response.status, 202);
    assert.equal(fixture.waiting(), 0);
    assert.equal(fixture.jobs.pending, 0);
  });
});
