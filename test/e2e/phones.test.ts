// The token and sync service driven as phones on a bad network drive it, over
// HTTP on loopback, on memory and on PostgreSQL, with the app's clock in the
// test's hands: conflicting edits from two devices, retried patches and
// deletes, a retried refresh, guessing from one address while the owner logs
// in from another (clients bind 127.0.0.2 and 127.0.0.3), retention counted
// from the end of a revision's time as the head, user names in any script and
// form, account deletion, and who may see or revoke whose token.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { requestFrom } from "../_helpers/http.ts";
import { postgresSkip, startPostgres, type TestPostgres } from "../_helpers/postgres.ts";
import { DAY, PASSWORD, SyncServer } from "../_helpers/sync_server.ts";

/** A ticket as the sync API shows it. */
interface TicketBody {
  readonly uuid: string;
  readonly status: string;
  readonly errors: readonly {
    readonly key: { readonly uuid: string };
    readonly messages: readonly { readonly code: string; readonly revision?: string }[];
  }[];
}

/** What the answers of these tests hold (each has some of it). */
interface Body {
  readonly access_token: string;
  readonly refresh_token: string;
  readonly error?: string;
  readonly username: string;
  readonly active?: boolean;
  readonly ticket: TicketBody;
  readonly data: {
    readonly revision: string;
    readonly serial: number;
    readonly objects: {
      readonly messages: readonly { readonly uuid: string; readonly subject: string }[];
    };
  };
}

interface Answer {
  readonly status: number;
  readonly type: string;
  readonly body: Body;
}

/** A request from a chosen loopback address (so that the server sees several clients), its body read as JSON. */
async function call(
  url: string,
  path: string,
  init: Parameters<typeof requestFrom>[2] = {},
): Promise<Answer> {
  const { status, headers, text } = await requestFrom(url, path, init);
  return {
    status,
    type: String(headers["content-type"] ?? ""),
    body: (text === "" ? {} : JSON.parse(text)) as Body,
  };
}

const form = (params: Record<string, string>) => ({
  "content-type": "application/x-www-form-urlencoded",
  body: new URLSearchParams(params).toString(),
});
const basic = (id: string, secret: string) => `Basic ${btoa(`${id}:${secret}`)}`;

function message(n: number, subject = `Message ${n}`) {
  return {
    uuid: `10000000-0000-4000-8000-${String(n).padStart(12, "0")}`,
    subject,
    body: "",
    read: false,
    sent_at: "2026-11-24T08:00:00Z",
  };
}

/** The service with its clock (the sync client tests' server), on the given storage, asked as phones ask it. */
class Phones {
  readonly #server = new SyncServer();

  get clock(): { time: number } {
    return this.#server.clock;
  }

  get url(): string {
    return this.#server.url;
  }

  /** Starts the server on the storage `env` names: STATE_DIR as `env` has it. */
  async start(env: Record<string, string>): Promise<void> {
    await this.#server.start(env, undefined);
  }

  close(): Promise<void> {
    return this.#server.close();
  }

  async token(
    params: Record<string, string>,
    headers: Record<string, string> = {},
    from?: string,
  ): Promise<Answer> {
    const { body, ...type } = form(params);
    return call(this.url, "/oauth2/token", {
      method: "POST",
      headers: { ...type, ...headers },
      body,
      ...(from === undefined ? {} : { from }),
    });
  }

  async signUp(username: string, password = PASSWORD): Promise<Answer> {
    const signUp = await this.token({ grant_type: "client_credentials", scope: "SignUp" }, {
      authorization: basic("demo-backend", "demo-backend-secret"),
    });
    return call(this.url, "/api/v2/sign-up", {
      method: "POST",
      headers: {
        authorization: `Bearer ${signUp.body.access_token}`,
        "content-type": "application/json",
      },
      body: JSON.stringify({ username, password }),
    });
  }

  login(username: string, password = PASSWORD, from?: string): Promise<Answer> {
    return this.token(
      { grant_type: "password", client_id: "demo-app", username, password, scope: "UserActivity" },
      {},
      from,
    );
  }

  sync(
    access: string,
    path = "",
    init: { method?: string; body?: unknown; headers?: Record<string, string> } = {},
  ): Promise<Answer> {
    return call(this.url, `/api/v2/sync/user${path}`, {
      method: init.method ?? (init.body === undefined ? "GET" : "POST"),
      headers: {
        authorization: `Bearer ${access}`,
        "content-type": "application/json",
        ...init.headers,
      },
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
    });
  }

  /** Posts a patch and follows its ticket to the end (bounded). */
  async patch(
    access: string,
    body: unknown,
    headers: Record<string, string> = {},
  ): Promise<{ accepted: Answer; ticket: TicketBody }> {
    const accepted = await this.sync(access, "", { body, headers });
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
    for (let poll = 0; poll < 10_000; poll++) {
      const { body: answer } = await this.sync(access, `/ticket/${accepted.body.ticket.uuid}`);
      if (answer.ticket.status !== "new" && answer.ticket.status !== "work") {
        return { accepted, ticket: answer.ticket };
      }
    }
    assert.fail("the ticket did not end");
  }
}

const BACKENDS = [
  { name: "memory", skip: false as const, env: async () => ({ STATE_DIR: "" }) },
  {
    name: "PostgreSQL",
    skip: postgresSkip,
    env: async () => {
      postgres ??= await startPostgres();
      return { DATABASE_URL: await postgres.database() };
    },
  },
];
let postgres: TestPostgres | undefined;
after(() => postgres?.stop());

for (const backend of BACKENDS) {
  describe(`phones on ${backend.name}`, { skip: backend.skip }, () => {
    const phones = new Phones();
    before(async () => phones.start(await backend.env()));
    after(() => phones.close());

    it("signs up e-mail addresses and names in any form, refuses look-alikes, and counts passwords in characters", async () => {
      assert.equal((await phones.signUp("ada.l+sync@example.org")).status, 201);
      const jose = await phones.signUp("jose\u0301");
      assert.equal(jose.status, 201);
      assert.equal(jose.body.username, "jos\u00e9");
      assert.equal((await phones.signUp("JOS\u00c9")).status, 409);
      assert.equal((await phones.signUp("ADA.L+SYNC@example.org")).status, 409);
      assert.equal((await phones.signUp("emoji", "🔑🔑🔑🔑")).status, 422);
      assert.equal((await phones.login("Jos\u00e9")).status, 200, "any case and form logs in");
    });

    it("aborts the second of two edits from one base with a conflict naming the first's revision; retries are safe", async () => {
      assert.equal((await phones.signUp("twodevices")).status, 201);
      const phone = (await phones.login("twodevices")).body.access_token;
      const laptop = (await phones.login("twodevices")).body.access_token;
      await phones.patch(phone, { objects: { messages: [message(1), message(2)] } });
      const base = (await phones.sync(phone)).body.data.revision;
      const first = await phones.patch(phone, {
        objects: { messages: [message(1, "phone")] },
        base_revision: base,
      });
      assert.equal(first.ticket.status, "done");
      const head = (await phones.sync(phone)).body.data.revision;
      const second = await phones.patch(laptop, {
        objects: { messages: [message(1, "laptop"), message(2, "laptop")] },
        base_revision: base,
      });
      assert.equal(second.ticket.status, "aborted");
      assert.deepEqual(
        second.ticket.errors.map((e) => [e.key.uuid, e.messages[0]?.code, e.messages[0]?.revision]),
        [[message(1).uuid, "conflict", head]],
      );
      const subjects = (await phones.sync(laptop)).body.data.objects.messages.map((m) => m.subject);
      assert.deepEqual(subjects, ["phone", "Message 2"], "nothing of the laptop's patch applied");
      // A patch retried after a lost 202: the same ticket, applied once.
      const key = { "idempotency-key": "2b7e4c1a-0d3f-4e5a-9b8c-7d6e5f4a3b2c" };
      const once = await phones.patch(laptop, { objects: { messages: [message(3)] } }, key);
      const again = await phones.sync(laptop, "", {
        body: { objects: { messages: [message(3)] } },
        headers: key,
      });
      assert.equal(again.body.ticket.uuid, once.accepted.body.ticket.uuid);
      assert.equal(again.body.ticket.status, "done");
      const serial = (await phones.sync(laptop)).body.data.serial;
      const other = await phones.sync(laptop, "", {
        body: { objects: { messages: [message(4)] } },
        headers: key,
      });
      assert.equal(other.status, 422);
      // A delete retried: done, nothing more.
      assert.equal(
        (await phones.patch(laptop, { deleted_objects: { messages: [message(3).uuid] } })).ticket
          .status,
        "done",
      );
      assert.equal(
        (await phones.patch(laptop, { deleted_objects: { messages: [message(3).uuid] } })).ticket
          .status,
        "done",
      );
      assert.equal((await phones.sync(laptop)).body.data.serial, serial + 1);
    });

    it("answers a refresh retried within the reuse interval with a pair of the same login; later reuse revokes it", async () => {
      assert.equal((await phones.signUp("retrier")).status, 201);
      const login = (await phones.login("retrier")).body;
      const refresh = (token: string) =>
        phones.token({ grant_type: "refresh_token", client_id: "demo-app", refresh_token: token });
      const lost = await refresh(login.refresh_token);
      phones.clock.time += 10_000;
      const retried = await refresh(login.refresh_token);
      assert.equal(retried.status, 200);
      for (const pair of [lost.body, retried.body]) {
        assert.equal((await phones.sync(pair.access_token)).status, 200);
      }
      phones.clock.time += 31_000;
      assert.equal((await refresh(login.refresh_token)).body.error, "invalid_grant");
      for (const pair of [lost.body, retried.body]) {
        assert.equal((await phones.sync(pair.access_token)).status, 401, "the login is revoked");
      }
    });

    it("slows guesses from one address without locking the owner out elsewhere", async () => {
      assert.equal((await phones.signUp("target")).status, 201);
      for (let i = 0; i < 5; i++) {
        assert.equal((await phones.login("target", `wrong guess ${i}`, "127.0.0.2")).status, 400);
      }
      const waited = await phones.login("target", PASSWORD, "127.0.0.2");
      assert.equal(waited.status, 429, "the guessing address waits, right password or not");
      assert.equal(
        (await phones.login("target", PASSWORD, "127.0.0.3")).status,
        200,
        "the owner's phone logs in",
      );
      phones.clock.time += 2000;
      assert.equal(
        (await phones.login("target", PASSWORD, "127.0.0.2")).status,
        200,
        "the wait is short and over",
      );
    });

    it("keeps a revision a base for the retention after it stopped being the head, then 410 for good", async () => {
      assert.equal((await phones.signUp("keeper")).status, 201);
      const access = (await phones.login("keeper")).body.access_token;
      const old = (await phones.sync(access)).body.data.revision;
      phones.clock.time += 5 * DAY;
      const access2 = (await phones.login("keeper")).body.access_token;
      await phones.patch(access2, { objects: { messages: [message(1)] } });
      assert.equal(
        (await phones.sync(access2, `/since/${old}`)).status,
        200,
        "the head for five days, still a base",
      );
      phones.clock.time += DAY + 1000;
      const access3 = (await phones.login("keeper")).body.access_token;
      assert.equal((await phones.sync(access3, `/since/${old}`)).status, 410);
      phones.clock.time += 400 * DAY;
      const access4 = (await phones.login("keeper")).body.access_token;
      assert.equal((await phones.sync(access4, `/since/${old}`)).status, 410, "never 404");
    });

    it("deletes an account: the context, the user and every token; the name is free again", async () => {
      assert.equal((await phones.signUp("leaver")).status, 201);
      const login = (await phones.login("leaver")).body;
      await phones.patch(login.access_token, { objects: { messages: [message(1)] } });
      const deleted = await phones.sync(login.access_token, "", { method: "DELETE" });
      assert.equal(deleted.status, 204);
      assert.equal((await phones.sync(login.access_token)).status, 401);
      assert.equal(
        (await phones.token({
          grant_type: "refresh_token",
          client_id: "demo-app",
          refresh_token: login.refresh_token,
        })).body.error,
        "invalid_grant",
      );
      assert.equal((await phones.login("leaver")).body.error, "invalid_grant");
      assert.equal((await phones.signUp("leaver")).status, 201);
      const fresh = (await phones.login("leaver")).body.access_token;
      assert.deepEqual(
        (await phones.sync(fresh)).body.data.objects.messages,
        [],
        "nothing of the old account",
      );
    });

    it("shows and revokes a token only for the client it was issued to", async () => {
      assert.equal((await phones.signUp("private")).status, 201);
      const login = (await phones.login("private")).body;
      const backend = { authorization: basic("demo-backend", "demo-backend-secret") };
      const { body: _b, ...type } = form({});
      const introspect = await call(phones.url, "/oauth2/introspect", {
        method: "POST",
        headers: { ...type, ...backend },
        body: new URLSearchParams({ token: login.access_token }).toString(),
      });
      assert.deepEqual(introspect.body, { active: false }, "no user name for another client");
      const refused = await call(phones.url, "/oauth2/revoke", {
        method: "POST",
        headers: { ...type, ...backend },
        body: new URLSearchParams({ token: login.refresh_token }).toString(),
      });
      assert.equal(refused.status, 400);
      assert.equal(refused.body.error, "unauthorized_client");
      assert.equal((await phones.sync(login.access_token)).status, 200, "still valid");
      const revoked = await call(phones.url, "/oauth2/revoke", {
        method: "POST",
        headers: type,
        body: new URLSearchParams({ client_id: "demo-app", token: login.refresh_token }).toString(),
      });
      assert.equal(revoked.status, 200);
      assert.match(revoked.type, /^application\/json/);
      assert.deepEqual(revoked.body, {});
      assert.equal((await phones.sync(login.access_token)).status, 401);
    });
  });
}
