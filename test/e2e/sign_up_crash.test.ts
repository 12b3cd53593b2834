// Sign-ups killed mid-flight: 100 at once, the server SIGKILLed once a
// handful have answered, then started again, several times, on the journals
// of STATE_DIR and on PostgreSQL. A sign-up writes the user and its sync
// context together (one transaction on PostgreSQL; on the journals the
// context first), so no kill leaves a user without a context; and every name
// either logs in and syncs, or can sign up again.
import assert from "node:assert/strict";
import { once } from "node:events";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import pg from "pg";
import { MemoryAuthStore } from "../../lib/auth/mod.ts";
import { Journal } from "../../lib/storage/mod.ts";
import { MemorySyncStore } from "../../lib/sync/mod.ts";
import { postgresSkip, startPostgres, type TestPostgres } from "../_helpers/postgres.ts";
import { listeningUrl, startServer } from "../_helpers/server.ts";
import { login, signUp, syncGet } from "../_helpers/sync_client.ts";

const PASSWORD = "correct horse battery";
const AT_ONCE = 100;

/** Starts the server, fires AT_ONCE sign-ups, and kills it with SIGKILL once `answered` have come back 201. */
async function signUpsKilled(
  env: Record<string, string>,
  names: readonly string[],
  answered: number,
): Promise<void> {
  const server = startServer(env);
  const url = await listeningUrl(server);
  let created = 0;
  let killed = false;
  const kill = (): void => {
    if (killed) return;
    killed = true;
    server.child.kill("SIGKILL");
  };
  const exited = once(server.child, "exit");
  await Promise.allSettled(names.map(async (name) => {
    const status = await signUp(url, name, PASSWORD);
    if (status === 201 && ++created >= answered) kill();
  }));
  kill();
  await exited;
}

/** Every name after a restart: a user who logs in can sync (no 404 ERR_SYNC_NO_CONTEXT); one who is not there can sign up. */
async function everyAccountWhole(
  env: Record<string, string>,
  names: readonly string[],
): Promise<{ users: number }> {
  const server = startServer(env);
  const url = await listeningUrl(server);
  let users = 0;
  try {
    for (const name of names) {
      const { status, body } = await login(url, name, PASSWORD);
      if (status === 200) {
        users++;
        const snapshot = await syncGet(url, body.access_token!);
        assert.equal(snapshot.status, 200, `${name} logs in and syncs`);
        assert.equal(
          (snapshot.body.data!.objects as { me?: { username: string } }).me?.username,
          name,
        );
      } else {
        assert.equal(status, 400, `${name}: ${JSON.stringify(body)}`);
        assert.equal(
          await signUp(url, name, PASSWORD),
          201,
          `${name} was not made: the name is free`,
        );
      }
    }
  } finally {
    server.child.kill("SIGTERM");
    await once(server.child, "exit");
  }
  return { users };
}

describe("sign-ups killed mid-flight on STATE_DIR's journals", () => {
  it("leave no user without a sync context, over 5 kills", async () => {
    const dir = join(mkdtempSync(join(tmpdir(), "tributary-signups-")), "state");
    // Every client is 127.0.0.1 here: the per-address limit of failed logins (those of names not made) is off.
    const env = {
      SERVICES: "sync",
      STATE_DIR: dir,
      PASSWORD_HASH_COST: "1024",
      LOGIN_MAX_FAILURES_PER_ADDRESS: "0",
    };
    for (let round = 0; round < 5; round++) {
      const names = Array.from({ length: AT_ONCE }, (_, i) => `r${round}u${i}`);
      await signUpsKilled(env, names, 5 + round * 7);
      // The journals as the killed process left them, read as a start reads them: each user has a context.
      const auth = await Journal.open({ dir, name: "auth" });
      const sync = await Journal.open({ dir, name: "sync" });
      const users = MemoryAuthStore.restore(auth.replay.snapshot, auth.replay.records);
      const contexts = MemorySyncStore.restore(sync.replay.snapshot, sync.replay.records, {
        now: Date.now,
        uuid: () => crypto.randomUUID(),
      });
      await auth.journal.close();
      await sync.journal.close();
      let made = 0;
      for (const name of names) {
        const user = await users.userByName(name);
        if (user === undefined) continue;
        made++;
        assert.notEqual(
          await contexts.head(user.uuid),
          undefined,
          `round ${round}: ${name} has a user and no context`,
        );
      }
      assert.ok(made >= 5 + round * 7, `round ${round}: ${made} users made`);
      await everyAccountWhole(env, names);
    }
  });
});

describe("sign-ups killed mid-flight on PostgreSQL", { skip: postgresSkip }, () => {
  let server: TestPostgres;
  before(async () => {
    server = await startPostgres();
  });
  after(() => server.stop());

  it("leave no user without a sync context, over 2 kills", async () => {
    const database = await server.database();
    const env = {
      SERVICES: "sync",
      DATABASE_URL: database,
      PASSWORD_HASH_COST: "1024",
      LOGIN_MAX_FAILURES_PER_ADDRESS: "0",
    };
    for (let round = 0; round < 2; round++) {
      const names = Array.from({ length: AT_ONCE }, (_, i) => `p${round}u${i}`);
      await signUpsKilled(env, names, 10 + round * 20);
      const client = new pg.Client({ connectionString: database });
      await client.connect();
      try {
        const { rows } = await client.query<{ users: string; orphans: string }>(
          "SELECT count(*) AS users, count(*) FILTER (WHERE c.owner IS NULL) AS orphans FROM auth_users u LEFT JOIN sync_contexts c ON c.owner = u.uuid",
        );
        assert.ok(Number(rows[0]!.users) >= 10 + round * 20, `${rows[0]!.users} users made`);
        assert.equal(Number(rows[0]!.orphans), 0, "no user without a context");
      } finally {
        await client.end();
      }
      await everyAccountWhole(env, names);
    }
  });
});
