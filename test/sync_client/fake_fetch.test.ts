// The sync client's token, retry and refusal logic against a scripted fetch:
// each request answered by the test, with a hand-driven clock and a sleep
// that records its waits instead of waiting.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  createSyncClient,
  type OnlineSource,
  type SyncClientEvent,
  type SyncClientOptions,
} from "../../lib/sync_client/mod.ts";
import { message } from "../_helpers/sync_server.ts";

const URL_BASE = "http://127.0.0.1:1";
const REVISION = "00000000-0000-4000-8000-00000000000a";

interface Sent {
  readonly method: string;
  readonly path: string;
  readonly body: string;
  readonly headers: Headers;
}

type Answer = Response | Error;

function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}

const TOKENS = (n: number) => ({
  access_token: `access-${n}`,
  token_type: "Bearer",
  expires_in: 3600,
  refresh_token: `refresh-${n}`,
});
const SNAPSHOT = json(200, {
  ticket: null,
  data: {
    revision: REVISION,
    serial: 1,
    created_at: "2026-11-24T08:00:00Z",
    objects: { me: null, messages: [], teams: [] },
  },
});

/** A client whose every request the `answer` function answers. */
function scripted(
  answer: (sent: Sent, index: number) => Answer | Promise<Answer>,
  options: Partial<SyncClientOptions> = {},
) {
  const sent: Sent[] = [];
  const waits: number[] = [];
  const clock = { time: Date.UTC(2026, 10, 24) };
  const client = createSyncClient({
    baseUrl: URL_BASE,
    clientId: "demo-app",
    now: () => clock.time,
    random: (size) => new Uint8Array(size).fill(128),
    sleep: (ms) => {
      waits.push(ms);
      return Promise.resolve();
    },
    fetch: async (input, init) => {
      const request = {
        method: init?.method ?? "GET",
        path: new URL(input).pathname,
        body: typeof init?.body === "string" ? init.body : "",
        headers: new Headers(init?.headers),
      };
      sent.push(request);
      const result = await answer(request, sent.length - 1);
      if (result instanceof Error) throw result;
      return result;
    },
    ...options,
  });
  return { client, sent, waits, clock };
}

describe("createSyncClient() tokens", () => {
  it("logs in with the password grant as a form, with the client's id and scope", async () => {
    const { client, sent } = scripted(() => json(200, TOKENS(1)));
    await client.login("ada", "pw");
    assert.equal(sent[0]!.path, "/oauth2/token");
    assert.deepEqual(Object.fromEntries(new URLSearchParams(sent[0]!.body)), {
      grant_type: "password",
      username: "ada",
      password: "pw",
      scope: "UserActivity",
      client_id: "demo-app",
    });
    assert.equal(client.status().phase, "idle");
  });

  it("refuses a wrong password with ERR_SYNC_CLIENT_LOGIN_FAILED", async () => {
    const { client } = scripted(() => json(400, { error: "invalid_grant" }));
    await assert.rejects(client.login("ada", "wrong"), {
      name: "SyncClientError",
      code: "ERR_SYNC_CLIENT_LOGIN_FAILED",
      status: 400,
    });
  });

  it("retries a refresh whose answer was lost with the same refresh token, and keeps the rotated one", async () => {
    let refreshes = 0;
    const { client, sent, clock } = scripted((request) => {
      if (request.path === "/oauth2/token") {
        const grant = new URLSearchParams(request.body).get("grant_type");
        if (grant === "password") return json(200, TOKENS(1));
        refreshes++;
        return refreshes === 1 ? new TypeError("fetch failed") : json(200, TOKENS(2));
      }
      return request.path.endsWith("/since/" + REVISION)
        ? new Response(null, { status: 204 })
        : SNAPSHOT.clone();
    });
    await client.login("ada", "pw");
    await client.sync();
    clock.time += 3600_000;
    await client.sync();
    const presented = sent.filter((r) => r.path === "/oauth2/token").map((r) =>
      new URLSearchParams(r.body).get("refresh_token")
    );
    assert.deepEqual(presented, [null, "refresh-1", "refresh-1"]);
    const last = sent.at(-1)!;
    assert.equal(last.headers.get("authorization"), "Bearer access-2");
  });

  it("forgets a revoked login and asks onLoginRequired, which may log in again", async () => {
    let asked = 0;
    let logins = 0;
    let refused = false;
    const { client, sent } = scripted((request) => {
      if (request.path === "/oauth2/token") {
        const grant = new URLSearchParams(request.body).get("grant_type");
        if (grant === "password") return json(200, TOKENS(++logins));
        return json(400, { error: "invalid_grant" });
      }
      if (!refused) {
        refused = true;
        return new Response(null, {
          status: 401,
          headers: { "www-authenticate": 'Bearer error="invalid_token"' },
        });
      }
      return SNAPSHOT.clone();
    }, {
      onLoginRequired: async () => {
        asked++;
        await client.login("ada", "pw");
      },
    });
    await client.login("ada", "pw");
    await client.sync();
    assert.equal(asked, 1);
    assert.equal(sent.at(-1)!.headers.get("authorization"), "Bearer access-2");
  });

  it("without onLoginRequired, a revoked login fails the sync with ERR_SYNC_CLIENT_LOGIN_REQUIRED", async () => {
    const { client } = scripted((request) => {
      if (request.path === "/oauth2/token") {
        const grant = new URLSearchParams(request.body).get("grant_type");
        return grant === "password" ? json(200, TOKENS(1)) : json(400, { error: "invalid_grant" });
      }
      return new Response(null, { status: 401 });
    });
    await client.login("ada", "pw");
    await assert.rejects(client.sync(), { code: "ERR_SYNC_CLIENT_LOGIN_REQUIRED" });
    assert.equal(client.status().phase, "logged-out");
  });
});

describe("createSyncClient() retries", () => {
  it("honours Retry-After on a 503, and backs off with full jitter on failed fetches", async () => {
    let calls = 0;
    const { client, waits } = scripted((request) => {
      if (request.path === "/oauth2/token") return json(200, TOKENS(1));
      calls++;
      if (calls === 1) return new Response(null, { status: 503, headers: { "retry-after": "7" } });
      if (calls <= 3) return new TypeError("fetch failed");
      return SNAPSHOT.clone();
    });
    await client.login("ada", "pw");
    await client.sync();
    // Every draw is 0x80808080 / 2 ** 32 (0.50196…) of the ceiling: 500 ms doubled per attempt.
    assert.deepEqual(waits, [7000, 501, 1003]);
  });

  it("waits for the platform's online event while it is offline, then sends", async () => {
    let online = false;
    const listeners = new Set<(online: boolean) => void>();
    const source: OnlineSource = {
      isOnline: () => online,
      subscribe: (listener) => {
        listeners.add(listener);
        return () => listeners.delete(listener);
      },
    };
    const phases: string[] = [];
    const { client, sent } = scripted((request) => {
      if (request.path === "/oauth2/token") return json(200, TOKENS(1));
      return SNAPSHOT.clone();
    }, {
      online: source,
      sleep: () =>
        new Promise((resolve) => {
          // Going online while the client waits.
          online = true;
          for (const listener of listeners) listener(true);
          resolve();
        }),
    });
    client.subscribe((event: SyncClientEvent) => {
      if (event.kind === "status") phases.push(event.status.phase);
    });
    online = true;
    await client.login("ada", "pw");
    online = false;
    await client.sync();
    assert.ok(phases.includes("offline"), phases.join(","));
    assert.equal(sent.filter((r) => r.path === "/api/v2/sync/user").length, 1);
    assert.equal(client.status().phase, "idle");
  });
});

describe("createSyncClient() refused writes", () => {
  it("drops the object a 422 names, reports it, and sends the others again", async () => {
    const posts: string[] = [];
    const { client } = scripted((request) => {
      if (request.path === "/oauth2/token") return json(200, TOKENS(1));
      if (request.method === "POST") {
        posts.push(request.body);
        if (posts.length === 1) {
          return json(422, [{ message: "Too long", field: "objects.messages[1].subject" }]);
        }
        return json(202, {
          ticket: { uuid: "t", status: "done", errors: [], client_serial: null },
          data: null,
        });
      }
      if (request.path.includes("/since/")) return new Response(null, { status: 204 });
      return SNAPSHOT.clone();
    });
    const rejected: SyncClientEvent[] = [];
    client.subscribe((event) => {
      if (event.kind === "rejected") rejected.push(event);
    });
    await client.login("ada", "pw");
    await client.sync();
    await client.put("messages", message(1));
    await client.put("messages", message(2, "x".repeat(300)));
    await client.sync();
    assert.equal(rejected.length, 1, JSON.stringify(rejected));
    assert.equal(rejected[0]!.kind === "rejected" && rejected[0]!.uuid, message(2).uuid);
    const second = JSON.parse(posts[1]!) as { objects: { messages: { uuid: string }[] } };
    assert.deepEqual(second.objects.messages.map((m) => m.uuid), [message(1).uuid]);
    assert.equal(client.pending(), 0);
  });

  it("checks what put is given: a uuid, and JSON scalars", async () => {
    const { client } = scripted(() => json(200, TOKENS(1)));
    await assert.rejects(client.put("messages", { subject: "x" } as never), TypeError);
    await assert.rejects(
      client.put("messages", { ...message(1), body: 3 } as never),
      TypeError,
    );
    await assert.rejects(client.delete("me" as never, "x"), TypeError);
    assert.equal(client.pending(), 0);
  });
});
