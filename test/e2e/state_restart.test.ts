// The token and sync service restarted, as a deploy does: users, tokens,
// synced objects, serials, revisions, tickets and queued work are all there
// afterwards, on the embedded durable store (STATE_DIR) and on PostgreSQL
// (DATABASE_URL), after SIGTERM and after SIGKILL right after the last 2xx.
import assert from "node:assert/strict";
import { once } from "node:events";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { postgresSkip, startPostgres, type TestPostgres } from "../_helpers/postgres.ts";
import { listeningUrl, startServer } from "../_helpers/server.ts";
import { login, message, patch, refresh, signUp, syncGet, ticketEnd } from "../_helpers/sync_client.ts";

const PASSWORD = "correct horse battery";

/** What a user did before the restart, to check after it. */
interface Before {
  readonly access: string;
  readonly refreshToken: string;
  readonly spentRefresh: string;
  readonly revisions: readonly string[];
  readonly serial: number;
  readonly tickets: readonly string[];
  readonly queued: string;
}

async function useTheService(url: string): Promise<Before> {
  assert.equal(await signUp(url, "ada", PASSWORD), 201);
  const first = await login(url, "ada", PASSWORD);
  assert.equal(first.status, 200);
  const second = await refresh(url, first.body.refresh_token!);
  assert.equal(second.status, 200);
  const access = second.body.access_token!;
  const revisions: string[] = [];
  const tickets: string[] = [];
  for (let n = 1; n <= 4; n++) {
    const accepted = await patch(url, access, { objects: { messages: [message(n)] }, serial: n });
    assert.equal(accepted.status, 202);
    tickets.push(accepted.body.ticket!.uuid);
    assert.equal(await ticketEnd(url, access, accepted.body.ticket!.uuid), "done");
    revisions.push((await syncGet(url, access)).body.data!.revision);
  }
  const head = await syncGet(url, access);
  // The last answer before the stop: a patch accepted, its work queued.
  const queued = await patch(url, access, { objects: { messages: [message(5, "queued last")] }, serial: 5 });
  assert.equal(queued.status, 202);
  return { access, refreshToken: second.body.refresh_token!, spentRefresh: first.body.refresh_token!, revisions, serial: head.body.data!.serial, tickets, queued: queued.body.ticket!.uuid };
}

async function checkAfterRestart(url: string, before: Before): Promise<void> {
  // The access token issued before the restart still works, and the queued patch is done.
  assert.equal(await ticketEnd(url, before.access, before.queued), "done");
  const snapshot = await syncGet(url, before.access);
  assert.equal(snapshot.status, 200);
  assert.deepEqual(snapshot.body.data!.objects.messages.map((m) => m.subject), ["Message 1", "Message 2", "Message 3", "Message 4", "queued last"]);
  assert.ok(snapshot.body.data!.serial > before.serial, `serial ${snapshot.body.data!.serial} after ${before.serial}: never lower`);
  for (const revision of before.revisions) {
    const diff = await syncGet(url, before.access, `/since/${revision}`);
    assert.ok(diff.status === 200 || diff.status === 204, `a revision issued before the restart answers ${diff.status}`);
  }
  for (const ticket of before.tickets) assert.equal(await ticketEnd(url, before.access, ticket, 1), "done");
  // Logins, refreshes, the taken name and the spent refresh token, as before.
  assert.equal((await login(url, "ada", PASSWORD)).status, 200);
  assert.equal(await signUp(url, "ADA", "another password"), 409);
  const renewed = await refresh(url, before.refreshToken);
  assert.equal(renewed.status, 200, JSON.stringify(renewed.body));
  const reused = await refresh(url, before.spentRefresh);
  assert.equal(reused.status, 400);
  assert.equal(reused.body.error, "invalid_grant");
}

/** Stops a server with a signal, starts another on the same state, and checks what the first did. */
async function restartKeepsEverything(env: Record<string, string>, signal: "SIGTERM" | "SIGKILL", where: RegExp): Promise<void> {
  const first = startServer(env);
  const before = await useTheService(await listeningUrl(first));
  first.child.kill(signal);
  const [code, killed] = await once(first.child, "exit");
  assert.equal(signal === "SIGKILL" ? killed : code, signal === "SIGKILL" ? "SIGKILL" : 0);
  const second = startServer(env);
  const url = await listeningUrl(second);
  assert.match(second.output(), where);
  await checkAfterRestart(url, before);
  second.child.kill("SIGTERM");
  assert.equal((await once(second.child, "exit"))[0], 0);
}

for (const signal of ["SIGTERM", "SIGKILL"] as const) {
  describe(`the token and sync service on STATE_DIR, stopped by ${signal} and started again`, () => {
    it("keeps users, tokens, objects, serials, revisions, tickets and queued work", async () => {
      const dir = join(mkdtempSync(join(tmpdir(), "tributary-restart-")), "state");
      await restartKeepsEverything({ SERVICES: "sync", STATE_DIR: dir, PASSWORD_HASH_COST: "1024", REFRESH_REUSE_INTERVAL_SECONDS: "0" }, signal, new RegExp(`Users, tokens and synced data: in ${dir}`));
    });
  });
}

describe("the token and sync service on PostgreSQL, stopped and started again", { skip: postgresSkip }, () => {
  let server: TestPostgres;
  before(async () => {
    server = await startPostgres();
  });
  after(() => server.stop());

  for (const signal of ["SIGTERM", "SIGKILL"] as const) {
    it(`keeps users, tokens, objects, serials, revisions, tickets and queued work over ${signal}`, async () => {
      const env = { SERVICES: "sync", DATABASE_URL: await server.database(), PASSWORD_HASH_COST: "1024", REFRESH_REUSE_INTERVAL_SECONDS: "0" };
      await restartKeepsEverything(env, signal, /Users, tokens and synced data: in PostgreSQL at postgres:\/\/postgres@127\.0\.0\.1/);
    });
  }
});

describe("STATE_DIR held by another process", () => {
  it("refuses a second process on the same folder, naming STATE_DIR and the holder, without a stack trace", async () => {
    const dir = join(mkdtempSync(join(tmpdir(), "tributary-state-")), "state");
    const first = startServer({ SERVICES: "sync", STATE_DIR: dir });
    await listeningUrl(first);
    const second = startServer({ SERVICES: "sync", STATE_DIR: dir });
    const [code] = await once(second.child, "exit");
    assert.equal(code, 1);
    assert.match(second.errors(), new RegExp(`STATE_DIR ${dir} is in use by process ${first.child.pid}`));
    assert.doesNotMatch(second.errors(), /\n\s+at /);
    first.child.kill("SIGTERM");
    await once(first.child, "exit");
  });

  it("starts on a journal whose last record was torn, and says what it dropped", async () => {
    const dir = join(mkdtempSync(join(tmpdir(), "tributary-torn-")), "state");
    const first = startServer({ SERVICES: "sync", STATE_DIR: dir, PASSWORD_HASH_COST: "1024" });
    const url = await listeningUrl(first);
    assert.equal(await signUp(url, "ada", PASSWORD), 201);
    first.child.kill("SIGKILL");
    await once(first.child, "exit");
    // Half a record at the end, as a crash in the middle of a write leaves it.
    writeFileSync(join(dir, "auth.00000001.log"), Buffer.from([200, 0, 0, 0, 1, 2, 3, 4, 123]), { flag: "a" });
    const second = startServer({ SERVICES: "sync", STATE_DIR: dir, PASSWORD_HASH_COST: "1024" });
    const again = await listeningUrl(second);
    assert.match(second.output(), /the auth journal .*auth\.00000001\.log ended mid-record \(a record is cut short\): cut at byte \d+, 9 bytes dropped/);
    assert.equal((await login(again, "ada", PASSWORD)).status, 200, "everything before the torn record is there");
    second.child.kill("SIGTERM");
    await once(second.child, "exit");
  });
});
