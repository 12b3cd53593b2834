// The token and sync service restarted, as a deploy does: users, tokens,
// synced objects, serials, revisions, tickets and queued work are all there
// afterwards, on the embedded durable store (STATE_DIR) and on PostgreSQL
// (DATABASE_URL), after SIGTERM and after SIGKILL right after the last 2xx.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { postgresSkip, startPostgres, type TestPostgres } from "../_helpers/postgres.ts";
import { listeningUrl, startServer } from "../_helpers/server.ts";
import {
  login,
  message,
  patch,
  refresh,
  signUp,
  syncGet,
  ticketEnd,
} from "../_helpers/sync_client.ts";

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
  const queued = await patch(url, access, {
    objects: { messages: [message(5, "queued last")] },
    serial: 5,
  });
  assert.equal(queued.status, 202);
  return {
    access,
    refreshToken: second.body.refresh_token!,
    spentRefresh: first.body.refresh_token!,
    revisions,
    serial: head.body.data!.serial,
    tickets,
    queued: queued.body.ticket!.uuid,
  };
}

async function checkAfterRestart(url: string, before: Before): Promise<void> {
  // The access token issued before the restart still works, and the queued patch is done.
  assert.equal(await ticketEnd(url, before.access, before.queued), "done");
  const snapshot = await syncGet(url, before.access);
  assert.equal(snapshot.status, 200);
  assert.deepEqual(snapshot.body.data!.objects.messages.map((m) => m.subject), [
    "Message 1",
    "Message 2",
    "Message 3",
    "Message 4",
    "queued last",
  ]);
  assert.ok(
    snapshot.body.data!.serial > before.serial,
    `serial ${snapshot.body.data!.serial} after ${before.serial}: never lower`,
  );
  for (const revision of before.revisions) {
    const diff = await syncGet(url, before.access, `/since/${revision}`);
    assert.ok(
      diff.status === 200 || diff.status === 204,
      `a revision issued before the restart answers ${diff.status}`,
    );
  }
  for (const ticket of before.tickets) {
    assert.equal(await ticketEnd(url, before.access, ticket, 1), "done");
  }
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
async function restartKeepsEverything(
  env: Record<string, string>,
  signal: "SIGTERM" | "SIGKILL",
  where: RegExp,
): Promise<void> {
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
      await restartKeepsEverything(
        {
          SERVICES: "sync",
          STATE_DIR: dir,
          PASSWORD_HASH_COST: "1024",
          REFRESH_REUSE_INTERVAL_SECONDS: "0",
        },
        signal,
        new RegExp(`Users, tokens and synced data: in ${dir}`),
      );
    });
  });
}

describe("the token and sync service on PostgreSQL, stopped and started again", {
  skip: postgresSkip,
}, () => {
  let server: TestPostgres;
  before(async () => {
    server = await startPostgres();
  });
  after(() => server.stop());

  for (const signal of ["SIGTERM", "SIGKILL"] as const) {
    it(`keeps users, tokens, objects, serials, revisions, tickets and queued work over ${signal}`, async () => {
      const env = {
        SERVICES: "sync",
        DATABASE_URL: await server.database(),
        PASSWORD_HASH_COST: "1024",
        REFRESH_REUSE_INTERVAL_SECONDS: "0",
      };
      await restartKeepsEverything(
        env,
        signal,
        /Users, tokens and synced data: in PostgreSQL at postgres:\/\/postgres@127\.0\.0\.1/,
      );
    });
  }
});

/** Runs a command in a UTS namespace of its own, whose host name is `host` (needs root). */
function onHost(host: string): string[] {
  return ["unshare", "--uts", "sh", "-c", `hostname ${host} && exec "$0" "$@"`];
}

const unshareSkip =
  spawnSync("unshare", ["--uts", "true"]).status === 0 || process.env["REQUIRE_SERVICES"] === "1"
    ? false
    : "unshare --uts is not allowed here (it needs root); set REQUIRE_SERVICES=1 to fail instead";

describe("STATE_DIR shared by processes of two host names (containers on one volume)", {
  skip: unshareSkip,
}, () => {
  it("refuses the second host's process while the first holds the folder, then takes over once its lease has passed", async () => {
    const dir = join(mkdtempSync(join(tmpdir(), "tributary-hosts-")), "state");
    const env = {
      SERVICES: "sync",
      STATE_DIR: dir,
      PASSWORD_HASH_COST: "1024",
      STATE_LOCK_LEASE_MS: "2000",
    };
    const first = startServer(env, { via: onHost("tributary-a") });
    const url = await listeningUrl(first);
    assert.equal(await signUp(url, "ada", PASSWORD), 201);
    const second = startServer(env, { via: onHost("tributary-b") });
    const [code] = await once(second.child, "exit");
    assert.equal(code, 1, "a live lock of another host is not taken over");
    assert.match(
      second.errors(),
      new RegExp(`STATE_DIR ${dir} is in use by process \\d+ on tributary-a`),
    );
    // The first dies without releasing: the second host waits out the lease, then takes the folder and its users.
    first.child.kill("SIGKILL");
    await once(first.child, "exit");
    const killedAt = performance.now();
    const third = startServer(env, { via: onHost("tributary-b") });
    const again = await listeningUrl(third);
    assert.ok(performance.now() - killedAt >= 1500, "not before the lease had passed unrenewed");
    assert.equal((await login(again, "ada", PASSWORD)).status, 200);
    third.child.kill("SIGTERM");
    await once(third.child, "exit");
  });
});

describe("STATE_DIR held by another process", () => {
  it("refuses a second process on the same folder, naming STATE_DIR and the holder, without a stack trace", async () => {
    const dir = join(mkdtempSync(join(tmpdir(), "tributary-state-")), "state");
    const first = startServer({ SERVICES: "sync", STATE_DIR: dir });
    await listeningUrl(first);
    const second = startServer({ SERVICES: "sync", STATE_DIR: dir });
    const [code] = await once(second.child, "exit");
    assert.equal(code, 1);
    assert.match(
      second.errors(),
      new RegExp(`STATE_DIR ${dir} is in use by process ${first.child.pid}`),
    );
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
    writeFileSync(join(dir, "auth.00000001.log"), Buffer.from([200, 0, 0, 0, 1, 2, 3, 4, 123]), {
      flag: "a",
    });
    const second = startServer({ SERVICES: "sync", STATE_DIR: dir, PASSWORD_HASH_COST: "1024" });
    const again = await listeningUrl(second);
    // A warning, on standard error.
    assert.match(
      second.errors(),
      /the auth journal .*auth\.00000001\.log ended mid-record \(a record is cut short\), as a crash while writing leaves it: cut at byte \d+, the 9 bytes after it kept in .*auth\.00000001\.log\.torn-\d{8}T\d{6}Z/,
    );
    assert.equal(
      (await login(again, "ada", PASSWORD)).status,
      200,
      "everything before the torn record is there",
    );
    second.child.kill("SIGTERM");
    await once(second.child, "exit");
  });

  it("refuses to start on a flipped bit in the middle of a journal, naming it; state check reports it and state repair keeps the rest", async () => {
    const dir = join(mkdtempSync(join(tmpdir(), "tributary-flipped-")), "state");
    const env = { SERVICES: "sync", STATE_DIR: dir, PASSWORD_HASH_COST: "1024" };
    const first = startServer(env);
    const url = await listeningUrl(first);
    const users = Array.from({ length: 12 }, (_, i) => `user${i}`);
    for (const user of users) {
      assert.equal(await signUp(url, user, PASSWORD), 201);
      const { body } = await login(url, user, PASSWORD);
      const accepted = await patch(url, body.access_token!, {
        objects: { messages: [message(1, `from ${user}`)] },
        serial: 1,
      });
      assert.equal(await ticketEnd(url, body.access_token!, accepted.body.ticket!.uuid), "done");
    }
    first.child.kill("SIGKILL");
    await once(first.child, "exit");
    // One bit, half way through the sync journal: records follow it, so this is damage, not a torn tail.
    const log = join(dir, "sync.00000001.log");
    const bytes = readFileSync(log);
    const at = Math.floor(bytes.length / 2);
    bytes[at] = bytes[at]! ^ 0x10;
    writeFileSync(log, bytes);

    const refused = startServer(env);
    const [code] = await once(refused.child, "exit") as [number | null];
    assert.equal(code, 1);
    assert.match(
      refused.errors(),
      new RegExp(
        `Cannot open the sync journal: .*sync\\.00000001\\.log at byte \\d+ is damaged \\(.+\\); cutting there would lose the \\d+ whole records after it.*nothing was changed`,
      ),
    );
    assert.deepEqual(readFileSync(log), bytes, "the start changed nothing");

    const cli = (...args: string[]) =>
      spawnSync(process.execPath, [
        join(import.meta.dirname, "..", "..", "bin", "tributary.mjs"),
        ...args,
      ], { encoding: "utf8", env: { PATH: process.env["PATH"] ?? "", STATE_DIR: dir } });
    const check = cli("state", "check");
    assert.equal(check.status, 1, check.stderr);
    assert.match(check.stdout, /^ok +auth: \d+ whole records$/m);
    assert.match(check.stdout, /^DAMAGED +sync: \d+ whole records a repair keeps$/m);
    const repair = cli("state", "repair");
    assert.equal(repair.status, 0, repair.stderr);
    assert.match(repair.stdout, /^REPAIRED sync: .*\n {2}.*sync\.00000001\.log at byte \d+/m);
    assert.ok(
      readdirSync(dir).some((file) => /^sync\.00000001\.log\.damaged-\d{8}T\d{6}Z$/.test(file)),
      "the damaged log moved aside",
    );
    assert.equal(cli("state", "check").status, 0);

    const second = startServer(env);
    const again = await listeningUrl(second);
    let withMessage = 0;
    for (const user of users) {
      const { status, body } = await login(again, user, PASSWORD);
      assert.equal(status, 200, `${user} logs in: the auth journal was whole`);
      const snapshot = await syncGet(again, body.access_token!);
      if (
        snapshot.status === 200 &&
        snapshot.body.data!.objects.messages.some((m) => m.subject === `from ${user}`)
      ) withMessage++;
    }
    assert.ok(
      withMessage >= users.length - 1,
      `${withMessage} of ${users.length} users' messages kept: all but the damaged record's`,
    );
    second.child.kill("SIGTERM");
    await once(second.child, "exit");
  });
});
