// Changes pushed, end to end over loopback HTTP: two server processes on one
// PostgreSQL (a commit through one announced on a stream held by the other; a
// stream resumed after a disconnect misses nothing; a long-poll answered by
// the other's commit), and an app closed with streams open (it ends them,
// rather than waiting for them).
import assert from "node:assert/strict";
import { once } from "node:events";
import { after, before, describe, it } from "node:test";
import { createApp, readConfig } from "../../lib/app/mod.ts";
import { postgresSkip, startPostgres, type TestPostgres } from "../_helpers/postgres.ts";
import { listeningUrl, type Started, startServer } from "../_helpers/server.ts";
import { readSse, type SseReader } from "../_helpers/sse.ts";
import { login, message, patch, signUp, syncGet, ticketEnd } from "../_helpers/sync_client.ts";

const PASSWORD = "correct horse battery";

async function stop(started: Started): Promise<void> {
  started.child.kill("SIGTERM");
  await once(started.child, "exit");
}

async function changes(url: string, access: string, headers: Record<string, string> = {}) {
  const response = await fetch(`${url}/api/v2/sync/user/changes`, {
    headers: { authorization: `Bearer ${access}`, ...headers },
  });
  assert.equal(response.status, 200);
  assert.match(response.headers.get("content-type") ?? "", /^text\/event-stream/);
  assert.equal(response.headers.get("content-encoding"), null, "a stream is never compressed");
  return readSse(response);
}

async function announced(reader: SseReader): Promise<{ id: string; serial: number }> {
  const event = await reader.nextEvent();
  assert.ok(event !== undefined, "the stream ended before an event");
  assert.equal(event.event, "revision");
  const data = JSON.parse(event.data) as { revision: string; serial: number };
  assert.equal(data.revision, event.id);
  return { id: event.id, serial: data.serial };
}

async function committed(url: string, access: string, n: number): Promise<void> {
  const accepted = await patch(url, access, { objects: { messages: [message(n)] }, serial: n });
  assert.equal(accepted.status, 202);
  assert.equal(await ticketEnd(url, access, accepted.body.ticket!.uuid), "done");
}

describe("changes pushed across two processes on PostgreSQL", { skip: postgresSkip }, () => {
  let server: TestPostgres;
  before(async () => {
    server = await startPostgres();
  });
  after(() => server.stop());

  it("announces on a stream held by one a change committed through the other; resumed, misses nothing", async () => {
    const env = {
      SERVICES: "sync",
      DATABASE_URL: await server.database(),
      PASSWORD_HASH_COST: "1024",
    };
    const [a, b] = [startServer(env), startServer(env)];
    try {
      const [urlA, urlB] = [await listeningUrl(a), await listeningUrl(b)];
      assert.equal(await signUp(urlA, "ada", PASSWORD), 201);
      const access = (await login(urlA, "ada", PASSWORD)).body.access_token!;
      const first = (await syncGet(urlA, access)).body.data!;

      // Held by B from the revision the device has: nothing until A commits.
      const held = await changes(urlB, access, { "last-event-id": first.revision });
      await committed(urlA, access, 1);
      const seen = await announced(held);
      assert.equal(seen.serial, first.serial + 1);
      assert.equal(seen.id, (await syncGet(urlB, access)).body.data!.revision);

      // The device goes away; A commits twice meanwhile; back, resumed from the last event's id.
      await held.cancel();
      await committed(urlA, access, 2);
      await committed(urlA, access, 3);
      const resumed = await changes(urlB, access, { "last-event-id": seen.id });
      const caughtUp = await announced(resumed);
      assert.equal(caughtUp.serial, seen.serial + 2, "the head past the last event, at once");
      const diff = await syncGet(urlB, access, `/since/${seen.id}`);
      assert.equal(diff.status, 200);
      assert.equal(diff.body.data!.revision, caughtUp.id);

      // And on: the next commit through A.
      await committed(urlA, access, 4);
      assert.equal((await announced(resumed)).serial, caughtUp.serial + 1);
      await resumed.cancel();

      // A long-poll on B, answered with A's commit: whether the commit lands before the poll
      // reads the head (answered at once) or while it waits (answered then), the diff is the same.
      const head = (await syncGet(urlB, access)).body.data!;
      const longPoll = syncGet(urlB, access, `/since/${head.revision}?wait=60`);
      await committed(urlA, access, 5);
      const answer = await longPoll;
      assert.equal(answer.status, 200);
      assert.equal(answer.body.data!.serial, head.serial + 1);
    } finally {
      await stop(a);
      await stop(b);
    }
  });
});

describe("an app closed with change streams open", () => {
  it("ends them and closes without waiting for them", { timeout: 20_000 }, async () => {
    const app = createApp(
      readConfig({
        SERVICES: "sync",
        STATE_DIR: "",
        CLIENTS_FILE: "data/clients.json",
        PASSWORD_HASH_COST: "1024",
        LOG_LEVEL: "error",
      }),
      // A close that waited for the streams would wait this long: the test's timeout would end first.
      { requestDrainMs: 60_000, closeTimeoutMs: 60_000 },
    );
    await app.start();
    const { url } = await app.listen({ port: 0, host: "127.0.0.1" });
    assert.equal(await signUp(url, "ada", PASSWORD), 201);
    const access = (await login(url, "ada", PASSWORD)).body.access_token!;
    const readers = [await changes(url, access), await changes(url, access)];
    for (const reader of readers) await announced(reader);
    await app.close();
    for (const reader of readers) assert.equal(await reader.next(), undefined);
  });
});
