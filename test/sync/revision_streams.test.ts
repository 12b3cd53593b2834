// The change stream (GET <base>/changes) and the long-poll (since/<rev>?wait=)
// in process: on the store's in-process feed, with the heartbeat and the
// long-poll's end driven by hand (no timers, no sleeps).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createFetchHandler, HttpError } from "../../lib/http/mod.ts";
import { StorageError } from "../../lib/storage/mod.ts";
import {
  MemoryRevisionFeed,
  RevisionStreams,
  type RevisionStreamsOptions,
  type SyncData,
  type SyncDiff,
  type Ticket,
} from "../../lib/sync/mod.ts";
import { ALICE, BASE, BOB, message, type SyncFixture, syncFixture } from "../_helpers/sync.ts";
import { readSse, type SseReader } from "../_helpers/sse.ts";

/** Timers a test fires by hand: the heartbeat's, and each long-poll's end. */
function handTimers() {
  const beats = new Set<() => void>();
  const ends: { task: () => void; ms: number; cancelled: boolean }[] = [];
  const options: Omit<RevisionStreamsOptions, "headOf"> = {
    every: (task) => {
      beats.add(task);
      return () => void beats.delete(task);
    },
    after: (task, ms) => {
      const end = { task, ms, cancelled: false };
      ends.push(end);
      return () => void (end.cancelled = true);
    },
  };
  return {
    options,
    /** Heartbeat timers running (one at most, and none once no stream is open). */
    beating: () => beats.size,
    beat: () => {
      for (const task of beats) task();
    },
    ends,
  };
}

async function open(
  fixture: SyncFixture,
  user: string,
  query = "",
  headers: Record<string, string> = {},
): Promise<Response> {
  return await createFetchHandler(fixture.handler)(
    new Request(`http://localhost:8000${BASE}/changes${query}`, {
      headers: { "x-test-user": user, ...headers },
    }),
  );
}

async function stream(
  fixture: SyncFixture,
  user = ALICE,
  query = "",
  headers: Record<string, string> = {},
): Promise<SseReader> {
  const response = await open(fixture, user, query, headers);
  assert.equal(response.status, 200, await (response.status === 200 ? "" : response.text()));
  assert.equal(response.headers.get("content-type"), "text/event-stream; charset=utf-8");
  assert.equal(response.headers.get("cache-control"), "no-store, no-transform");
  const reader = readSse(response);
  assert.deepEqual(await reader.next(), { kind: "retry", ms: 3000 });
  return reader;
}

async function head(fixture: SyncFixture, user = ALICE): Promise<SyncData> {
  const response = await fixture.request(user, BASE);
  return (response.json() as { data: SyncData }).data;
}

async function patch(fixture: SyncFixture, body: unknown, headers: Record<string, string> = {}) {
  const response = await fixture.request(ALICE, BASE, {
    method: "POST",
    body: JSON.stringify(body),
    headers,
  });
  assert.equal(response.status, 202, response.text);
  return (response.json() as { ticket: Ticket }).ticket;
}

function revisionOf(data: string): { revision: string; serial: number } {
  return JSON.parse(data) as { revision: string; serial: number };
}

describe("GET /api/v2/sync/user/changes", () => {
  it("announces a patch's revision as it commits, as id, event and data", async () => {
    const timers = handTimers();
    const fixture = await syncFixture({ streamOptions: timers.options });
    const at = await head(fixture);
    const reader = await stream(fixture, ALICE, `?since=${at.revision}`);
    const ticket = await patch(fixture, { objects: { messages: [message(1)] } });
    assert.equal(ticket.status, "done");
    const event = await reader.nextEvent();
    const now = await head(fixture);
    assert.equal(now.serial, 2);
    assert.deepEqual(event, {
      kind: "event",
      id: now.revision,
      event: "revision",
      data: JSON.stringify({ revision: now.revision, serial: 2 }),
    });
    await reader.cancel();
  });

  it("announces a queued patch's revision once its job has run, and nothing before", async () => {
    const timers = handTimers();
    const fixture = await syncFixture({ streamOptions: timers.options });
    const at = await head(fixture);
    const reader = await stream(fixture, ALICE, `?since=${at.revision}`);
    // With an Idempotency-Key a patch is queued: its revision comes when the job runs.
    await patch(fixture, { objects: { messages: [message(1)] } }, { "idempotency-key": "k-1" });
    timers.beat();
    assert.deepEqual(await reader.next(), { kind: "comment", text: "ping" });
    await fixture.runJobs();
    const event = await reader.nextEvent();
    assert.equal(revisionOf(event!.data).serial, 2);
    await reader.cancel();
  });

  it("announces only the user's own revisions", async () => {
    const timers = handTimers();
    const fixture = await syncFixture({ streamOptions: timers.options });
    const bobs = await stream(fixture, BOB, `?since=${(await head(fixture, BOB)).revision}`);
    await patch(fixture, { objects: { messages: [message(1)] } });
    timers.beat();
    assert.deepEqual(await bobs.next(), { kind: "comment", text: "ping" });
    await bobs.cancel();
  });

  it("resumed with Last-Event-ID, announces at once the head past it, and misses nothing after", async () => {
    const timers = handTimers();
    const fixture = await syncFixture({ streamOptions: timers.options });
    const first = await stream(fixture, ALICE, `?since=${(await head(fixture)).revision}`);
    await patch(fixture, { objects: { messages: [message(1)] } });
    const seen = await first.nextEvent();
    // The client goes away; two patches commit meanwhile.
    await first.cancel();
    assert.equal(fixture.streams.size, 0);
    await patch(fixture, { objects: { messages: [message(2)] } });
    await patch(fixture, { objects: { messages: [message(3)] } });
    // Last-Event-ID wins over the since of the URL the client first opened.
    const resumed = await stream(fixture, ALICE, `?since=${seen!.id}`, {
      "last-event-id": seen!.id,
    });
    const caughtUp = await resumed.nextEvent();
    assert.deepEqual(revisionOf(caughtUp!.data), {
      revision: (await head(fixture)).revision,
      serial: 4,
    });
    assert.equal(caughtUp!.id, revisionOf(caughtUp!.data).revision);
    await patch(fixture, { objects: { messages: [message(4)] } });
    assert.equal(revisionOf((await resumed.nextEvent())!.data).serial, 5);
    await resumed.cancel();
  });

  it("resumed from the head, announces nothing until the next commit", async () => {
    const timers = handTimers();
    const fixture = await syncFixture({ streamOptions: timers.options });
    const at = await head(fixture);
    const reader = await stream(fixture, ALICE, "", { "last-event-id": at.revision });
    timers.beat();
    assert.deepEqual(await reader.next(), { kind: "comment", text: "ping" });
    await reader.cancel();
  });

  it("announces the head at once without a revision, or from one it does not know", async () => {
    const timers = handTimers();
    const fixture = await syncFixture({ streamOptions: timers.options });
    const at = await head(fixture);
    for (const query of ["", "?since=0b5b6c9e-2f44-4c1b-9d2a-3e4f5a6b7c8d"]) {
      const reader = await stream(fixture, ALICE, query);
      assert.deepEqual(revisionOf((await reader.nextEvent())!.data), {
        revision: at.revision,
        serial: 1,
      });
      await reader.cancel();
    }
  });

  it("sends a ping at each heartbeat, from one timer for every stream, stopped when none is open", async () => {
    const timers = handTimers();
    const fixture = await syncFixture({ streamOptions: timers.options });
    const at = (await head(fixture)).revision;
    assert.equal(timers.beating(), 0);
    const a = await stream(fixture, ALICE, `?since=${at}`);
    const b = await stream(fixture, ALICE, `?since=${at}`);
    assert.equal(timers.beating(), 1);
    timers.beat();
    assert.deepEqual(await a.next(), { kind: "comment", text: "ping" });
    assert.deepEqual(await b.next(), { kind: "comment", text: "ping" });
    await patch(fixture, { objects: { messages: [message(1)] } });
    assert.equal((await a.next())?.kind, "event");
    await a.cancel();
    await b.cancel();
    assert.equal(timers.beating(), 0);
  });

  it("ends a stream at the heartbeat after its token is refused, and keeps it while the token store is away", async () => {
    const timers = handTimers();
    /** What asking for each user's token gives now: refused, the store away, or (absent) the user. */
    const answers = new Map<string, Error>();
    const fixture = await syncFixture({
      streamOptions: timers.options,
      authorize: (request) => {
        const user = request.headers["x-test-user"]!;
        const answer = answers.get(user);
        return answer === undefined ? Promise.resolve(user) : Promise.reject(answer);
      },
    });
    const at = (await head(fixture)).revision;
    const alices = await stream(fixture, ALICE, `?since=${at}`);
    const bobs = await stream(fixture, BOB);
    assert.equal((await bobs.next())?.kind, "event");
    // The token store cannot answer: the streams stay (a blip must not drop every client).
    answers.set(ALICE, new StorageError("ERR_STORAGE_UNAVAILABLE", "the database is away"));
    timers.beat();
    assert.deepEqual(await alices.next(), { kind: "comment", text: "ping" });
    // (The heartbeat asked at once; the store is back for the patch.)
    answers.delete(ALICE);
    await patch(fixture, { objects: { messages: [message(1)] } });
    assert.equal((await alices.next())?.kind, "event");
    // Her token expired (or was revoked): her stream ends at the next heartbeat; Bob's goes on.
    answers.set(ALICE, new HttpError("ERR_HTTP_UNAUTHORIZED", "the token is expired"));
    timers.beat();
    assert.deepEqual(await alices.next(), { kind: "comment", text: "ping" });
    await new Promise(setImmediate);
    assert.equal(fixture.streams.size, 1, "one stream left open");
    assert.equal(await alices.next(), undefined, "her stream ended");
    assert.deepEqual(await bobs.next(), { kind: "comment", text: "ping" });
    await bobs.cancel();
  });

  it("answers 429 above SYNC_STREAMS_PER_USER, and opens again once one is closed", async () => {
    const timers = handTimers();
    const fixture = await syncFixture({ streamOptions: { ...timers.options, maxPerUser: 2 } });
    const a = await stream(fixture, ALICE);
    const b = await stream(fixture, ALICE);
    const refused = await open(fixture, ALICE);
    assert.equal(refused.status, 429);
    assert.equal(refused.headers.get("retry-after"), "5");
    assert.equal(
      ((await refused.json()) as { error: { code: string } }).error.code,
      "ERR_SYNC_TOO_MANY_STREAMS",
    );
    // Another user is not held to Alice's bound.
    const bobs = await stream(fixture, BOB);
    await a.cancel();
    const c = await stream(fixture, ALICE);
    for (const reader of [b, c, bobs]) await reader.cancel();
    assert.equal(fixture.streams.size, 0);
  });

  it("answers 503 with Retry-After above SYNC_STREAMS_MAX", async () => {
    const timers = handTimers();
    const fixture = await syncFixture({ streamOptions: { ...timers.options, maxOpen: 2 } });
    const a = await stream(fixture, ALICE);
    const b = await stream(fixture, BOB);
    const refused = await open(fixture, ALICE);
    assert.equal(refused.status, 503);
    assert.equal(refused.headers.get("retry-after"), "5");
    assert.equal(
      ((await refused.json()) as { error: { code: string } }).error.code,
      "ERR_SYNC_STREAMS_UNAVAILABLE",
    );
    await a.cancel();
    await b.cancel();
  });

  it("ends every stream when the streams close (drain), and refuses new ones with 503", async () => {
    const timers = handTimers();
    const fixture = await syncFixture({ streamOptions: timers.options });
    const a = await stream(fixture, ALICE, `?since=${(await head(fixture)).revision}`);
    const b = await stream(fixture, BOB, `?since=${(await head(fixture, BOB)).revision}`);
    fixture.streams.close();
    assert.equal(await a.next(), undefined);
    assert.equal(await b.next(), undefined);
    assert.equal(fixture.streams.size, 0);
    assert.equal(timers.beating(), 0);
    assert.equal((await open(fixture, ALICE)).status, 503);
  });

  it("answers 400 for a since that is not a revision id, 404 for a user without a context", async () => {
    const fixture = await syncFixture();
    const bad = await open(fixture, ALICE, "?since=nope");
    assert.equal(bad.status, 400);
    assert.equal(
      ((await bad.json()) as { error: { code: string } }).error.code,
      "ERR_SYNC_INVALID_ID",
    );
    const none = await open(fixture, "c0ffee00-0000-4000-8000-000000000003");
    assert.equal(none.status, 404);
    assert.equal(fixture.streams.size, 0);
  });

  it("answers HEAD with the stream's headers, holding no stream", async () => {
    const fixture = await syncFixture();
    const response = await createFetchHandler(fixture.handler)(
      new Request(`http://localhost:8000${BASE}/changes`, {
        method: "HEAD",
        headers: { "x-test-user": ALICE },
      }),
    );
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("content-type"), "text/event-stream; charset=utf-8");
    assert.equal(fixture.streams.size, 0);
  });
});

describe("GET /api/v2/sync/user/since/<revision>?wait=<seconds>", () => {
  it("answers the diff as soon as a commit lands, its wait's timer cancelled", async () => {
    const timers = handTimers();
    const fixture = await syncFixture({ streamOptions: timers.options });
    const at = await head(fixture);
    const answer = fixture.request(ALICE, `${BASE}/since/${at.revision}?wait=30`);
    // Waiting, counted as a stream, its end set for 30 s.
    while (timers.ends.length === 0) await new Promise((resolve) => setImmediate(resolve));
    assert.equal(timers.ends[0]!.ms, 30_000);
    assert.equal(fixture.streams.size, 1);
    await patch(fixture, { objects: { messages: [message(1)] } });
    const response = await answer;
    assert.equal(response.status, 200);
    const diff = (response.json() as { data: SyncDiff }).data;
    assert.equal(diff.base_revision, at.revision);
    assert.equal(diff.serial, 2);
    assert.deepEqual(diff.objects.messages.map((m) => m["uuid"]), [message(1)["uuid"]]);
    assert.equal(timers.ends[0]!.cancelled, true);
    assert.equal(fixture.streams.size, 0);
  });

  it("answers 204 at the end of the wait when nothing changed", async () => {
    const timers = handTimers();
    const fixture = await syncFixture({ streamOptions: timers.options });
    const at = await head(fixture);
    let answered = false;
    const answer = fixture.request(ALICE, `${BASE}/since/${at.revision}?wait=5`).finally(() => {
      answered = true;
    });
    while (timers.ends.length === 0) await new Promise((resolve) => setImmediate(resolve));
    // A heartbeat does not end the wait.
    timers.beat();
    for (let turn = 0; turn < 20; turn++) await new Promise((resolve) => setImmediate(resolve));
    assert.equal(answered, false);
    timers.ends[0]!.task();
    const response = await answer;
    assert.equal(response.status, 204);
    assert.equal(response.headers["etag"], `"${at.revision}"`);
    assert.equal(fixture.streams.size, 0);
  });

  it("answers at once when the head is past the revision already, without waiting", async () => {
    const timers = handTimers();
    const fixture = await syncFixture({ streamOptions: timers.options });
    const at = await head(fixture);
    await patch(fixture, { objects: { messages: [message(1)] } });
    const response = await fixture.request(ALICE, `${BASE}/since/${at.revision}?wait=60`);
    assert.equal(response.status, 200);
    assert.equal(timers.ends.length, 0);
  });

  it("answers 204 when the streams close (drain) during the wait", async () => {
    const timers = handTimers();
    const fixture = await syncFixture({ streamOptions: timers.options });
    const at = await head(fixture);
    const answer = fixture.request(ALICE, `${BASE}/since/${at.revision}?wait=60`);
    while (fixture.streams.size === 0) await new Promise((resolve) => setImmediate(resolve));
    fixture.streams.close();
    assert.equal((await answer).status, 204);
  });

  const invalid = ["61", "-1", "1.5", "abc"] as const;
  for (const wait of invalid) {
    it(`answers 400 ERR_SYNC_INVALID_WAIT for wait=${JSON.stringify(wait)}`, async () => {
      const fixture = await syncFixture();
      const at = await head(fixture);
      const response = await fixture.request(ALICE, `${BASE}/since/${at.revision}?wait=${wait}`);
      assert.equal(response.status, 400);
      assert.equal(
        (response.json() as { error: { code: string } }).error.code,
        "ERR_SYNC_INVALID_WAIT",
      );
    });
  }

  it("counts a long-poll against the user's bound", async () => {
    const timers = handTimers();
    const fixture = await syncFixture({ streamOptions: { ...timers.options, maxPerUser: 1 } });
    const at = await head(fixture);
    const reader = await stream(fixture, ALICE, `?since=${at.revision}`);
    const response = await fixture.request(ALICE, `${BASE}/since/${at.revision}?wait=5`);
    assert.equal(response.status, 429);
    await reader.cancel();
  });
});

describe("RevisionStreams", () => {
  const revision = (serial: number) => ({
    uuid: `00000000-0000-4000-8000-${String(serial).padStart(12, "0")}`,
    serial,
    createdAt: 0,
  });

  it("announces revisions heard before the client reads as one event, the newest; older ones never", async () => {
    const feed = new MemoryRevisionFeed();
    const streams = new RevisionStreams(feed, {
      headOf: () => Promise.resolve(undefined),
      every: () => () => {},
    });
    const watcher = await streams.open(ALICE, new AbortController().signal);
    watcher.start(1, revision(1));
    const events = watcher[Symbol.asyncIterator]();
    assert.equal((await events.next()).value, "retry: 3000\n\n");
    for (const serial of [3, 2, 4, 1]) await feed.publish(ALICE, revision(serial));
    assert.match((await events.next()).value as string, /^id: 0{8}-0000-4000-8000-0{11}4\n/);
    // The client has 4: an older one heard late (another process's, delayed) is not announced.
    await feed.publish(ALICE, revision(3));
    watcher.ping();
    assert.equal((await events.next()).value, ": ping\n\n");
    await events.return!();
    assert.equal(streams.size, 0);
  });

  it("ends a watcher when its request's signal aborts, freeing its place", async () => {
    const streams = new RevisionStreams(new MemoryRevisionFeed(), {
      headOf: () => Promise.resolve(undefined),
      every: () => () => {},
      maxPerUser: 1,
    });
    const controller = new AbortController();
    const watcher = await streams.open(ALICE, controller.signal);
    controller.abort();
    assert.equal(watcher.closed, true);
    assert.equal(streams.size, 0);
    (await streams.open(ALICE, new AbortController().signal)).close();
  });

  it("opened for a request already gone, closes and leaves no subscription behind", async () => {
    const feed = new MemoryRevisionFeed();
    let subscribed = 0;
    const counting = {
      ...feed,
      onGap: (listener: () => void) => feed.onGap(listener),
      subscribe: async (
        owner: string,
        listener: Parameters<MemoryRevisionFeed["subscribe"]>[1],
      ) => {
        const stop = await feed.subscribe(owner, listener);
        subscribed++;
        return () => {
          subscribed--;
          stop();
        };
      },
    } as unknown as MemoryRevisionFeed;
    const streams = new RevisionStreams(counting, {
      headOf: () => Promise.resolve(undefined),
      every: () => () => {},
    });
    const gone = new AbortController();
    gone.abort();
    const watcher = await streams.open(ALICE, gone.signal);
    assert.equal(watcher.closed, true);
    assert.equal(streams.size, 0);
    await new Promise(setImmediate);
    assert.equal(subscribed, 0, "its subscription was stopped");
  });

  it("keeps streams whose check fails otherwise than by a refusal, or hangs; a hung check holds up no later one", async () => {
    const timers = handTimers();
    const streams = new RevisionStreams(new MemoryRevisionFeed(), {
      ...timers.options,
      headOf: () => Promise.resolve(undefined),
    });
    let answer: () => Promise<boolean> = () => new Promise(() => {});
    const watcher = await streams.open(ALICE, new AbortController().signal, () => answer());
    const failing = await streams.open(
      BOB,
      new AbortController().signal,
      () => Promise.reject(new Error("a bug, not a refusal")),
    );
    timers.beat();
    await new Promise(setImmediate);
    assert.equal(watcher.closed, false);
    assert.equal(failing.closed, false);
    // The hung check gives up after a heartbeat's time: the stream stays.
    const wait = timers.ends.find((end) => !end.cancelled)!;
    assert.equal(wait.ms, 15_000);
    wait.task();
    await new Promise(setImmediate);
    assert.equal(watcher.closed, false);
    // The next heartbeat asks again, and hears the refusal.
    answer = () => Promise.resolve(false);
    timers.beat();
    await new Promise(setImmediate);
    assert.equal(watcher.closed, true);
    assert.equal(failing.closed, false);
    failing.close();
  });

  it("keeps a stream whose check throws at once, and goes on checking the others", async () => {
    const timers = handTimers();
    const streams = new RevisionStreams(new MemoryRevisionFeed(), {
      ...timers.options,
      headOf: () => Promise.resolve(undefined),
    });
    const unhandled: unknown[] = [];
    const note = (reason: unknown): void => void unhandled.push(reason);
    process.on("unhandledRejection", note);
    try {
      const throwing = await streams.open(ALICE, new AbortController().signal, () => {
        throw new Error("a bug, thrown before any promise");
      });
      const refused = await streams.open(
        BOB,
        new AbortController().signal,
        () => Promise.resolve(false),
      );
      timers.beat();
      await new Promise(setImmediate);
      await new Promise(setImmediate);
      assert.equal(throwing.closed, false, "the throwing check keeps its stream");
      assert.equal(refused.closed, true, "the other stream's refusal is heard");
      assert.equal(
        timers.ends.filter((end) => !end.cancelled).length,
        0,
        "no give-up timer left waiting",
      );
      assert.deepEqual(unhandled, []);
      throwing.close();
    } finally {
      process.off("unhandledRejection", note);
    }
  });
});
