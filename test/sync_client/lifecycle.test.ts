// The sync client's life against a model of the service (a `fetch`): the
// background loop of start() driven by a watch the test feeds, logout,
// conflicts decided by merge(fn) and by a failing policy, queued pulls and
// lost tickets, refused patches, aborted and closed rounds, and a storage
// that fails. Waits are on the client's own events, never on time.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  type ChangesTransport,
  type ConflictPolicy,
  createSyncClient,
  merge,
  type SyncClient,
  type SyncClientEvent,
  type SyncClientOptions,
  type SyncStorage,
} from "../../lib/sync_client/mod.ts";
import { FakeSyncServer, revisionOf } from "../_helpers/fake_sync_server.ts";
import { createPrng, type Prng } from "../_helpers/prng.ts";

const uuid = (n: number): string => `10000000-0000-4000-8000-${String(n).padStart(12, "0")}`;
const message = (n: number, subject = `Message ${n}`, read = false) => ({
  uuid: uuid(n),
  subject,
  body: "",
  read,
  sent_at: "2026-11-24T08:00:00Z",
});

/** Random bytes from a seeded generator: Idempotency-Keys differ, runs repeat. */
function randomFrom(prng: Prng): (size: number) => Uint8Array {
  return (size) => Uint8Array.from({ length: size }, () => prng.int(256));
}

/** A client of the fake, retrying at once. */
function client(server: FakeSyncServer, options: Partial<SyncClientOptions> = {}): SyncClient {
  return createSyncClient({
    baseUrl: "http://127.0.0.1:1",
    clientId: "demo-app",
    fetch: server.fetch,
    sleep: () => Promise.resolve(),
    random: randomFrom(createPrng(31)),
    now: () => Date.UTC(2026, 10, 24),
    ...options,
  });
}

/** A watch the test feeds: each hint pushed is yielded; records what it was started from. */
function manualWatch() {
  const queue: (string | undefined)[] = [];
  const started: (string | undefined)[] = [];
  let wake: (() => void) | undefined;
  const transport: ChangesTransport = async function* (since, signal) {
    started.push(since);
    signal.addEventListener("abort", () => wake?.(), { once: true });
    while (!signal.aborted) {
      while (queue.length > 0) yield queue.shift();
      await new Promise<void>((resolve) => (wake = resolve));
    }
  };
  return {
    transport,
    started,
    hint(revision: string | undefined) {
      queue.push(revision);
      wake?.();
    },
  };
}

/** Resolves once `test` holds, checked now and at each event of the client. */
function until(device: SyncClient, test: () => boolean): Promise<void> {
  return new Promise((resolve) => {
    if (test()) return resolve();
    const stop = device.subscribe(() => {
      if (!test()) return;
      stop();
      resolve();
    });
  });
}

const idle = (device: SyncClient) => () =>
  device.status().phase === "idle" && device.pending() === 0;

describe("createSyncClient() start()", () => {
  it("sends a write made after start without sync(), and pulls when the watch tells of a new revision", async () => {
    const server = new FakeSyncServer();
    const watch = manualWatch();
    const phone = client(server, { watch: watch.transport });
    await phone.login("ada", "pw");
    await phone.sync();
    phone.start();
    phone.start();
    await phone.put("messages", message(1));
    await until(phone, () => server.get(uuid(1)) !== undefined && idle(phone)());
    assert.equal(server.get(uuid(1))?.["subject"], "Message 1");
    server.write("messages", uuid(2), message(2));
    watch.hint(revisionOf(server.serial));
    await until(phone, () => phone.get("messages", uuid(2)) !== undefined);
    assert.equal(watch.started.length, 1, "one loop, however often started");
    assert.equal(watch.started[0], revisionOf(1));
    await phone.close();
  });

  it("pulls on a hint of a revision it is not at, or of none, and not on its own", async () => {
    const server = new FakeSyncServer();
    const watch = manualWatch();
    const phone = client(server, { watch: watch.transport });
    await phone.login("ada", "pw");
    await phone.sync();
    phone.start();
    await until(phone, idle(phone));
    const diffs = () => server.sent.filter((r) => r.path.includes("/since/")).length;
    const before = diffs();
    server.write("messages", uuid(3), message(3));
    watch.hint(revisionOf(1));
    watch.hint(undefined);
    await until(phone, () => phone.get("messages", uuid(3)) !== undefined);
    assert.equal(diffs(), before + 1, "the hint of its own revision pulled nothing");
    await phone.close();
  });

  it("records a failed background round in the status, and goes on at the next wake-up", async () => {
    const server = new FakeSyncServer();
    const watch = manualWatch();
    let broken = true;
    server.override = (request) =>
      broken && request.path.includes("/since/") ? new Response("", { status: 400 }) : undefined;
    const phone = client(server, { watch: watch.transport });
    await phone.login("ada", "pw");
    phone.start();
    await until(phone, () => phone.status().lastError !== undefined);
    assert.equal(phone.status().phase, "idle");
    assert.equal((phone.status().lastError as { code?: string }).code, "ERR_SYNC_CLIENT_RESPONSE");
    broken = false;
    server.write("messages", uuid(4), message(4));
    watch.hint(undefined);
    await until(phone, () => phone.get("messages", uuid(4)) !== undefined && idle(phone)());
    assert.equal(phone.status().lastError, undefined, "the round that succeeded cleared it");
    await phone.close();
    assert.throws(() => phone.start(), { code: "ERR_SYNC_CLIENT_CLOSED" });
    assert.equal(phone.status().phase, "closed");
  });

  it("polls by pollChanges when the platform's fetch cannot stream, and by its interval", async () => {
    const server = new FakeSyncServer();
    const waits: number[] = [];
    let pulled = 0;
    const { pollChanges } = await import("../../lib/sync_client/mod.ts");
    const phone = client(server, {
      watch: pollChanges({
        interval: 5000,
        sleep: (ms) => {
          waits.push(ms);
          pulled++;
          return pulled < 3 ? Promise.resolve() : new Promise(() => {});
        },
      }),
    });
    await phone.login("ada", "pw");
    phone.start();
    server.write("messages", uuid(5), message(5));
    await until(phone, () => phone.get("messages", uuid(5)) !== undefined);
    assert.deepEqual(waits.slice(0, 3), [5000, 5000, 5000]);
    await phone.close();
    assert.throws(() => pollChanges({ interval: 0 }), RangeError);
  });
});

describe("createSyncClient() logout()", () => {
  it("revokes the refresh token, forgets the login and keeps the data", async () => {
    const server = new FakeSyncServer();
    server.write("messages", uuid(1), message(1));
    const phone = client(server);
    await phone.login("ada", "pw");
    await phone.sync();
    await phone.logout();
    assert.deepEqual(server.revoked, ["refresh-1"]);
    const revoke = server.sent.find((r) => r.path === "/oauth2/revoke")!;
    assert.equal(new URLSearchParams(revoke.body).get("client_id"), "demo-app");
    assert.equal(phone.status().phase, "logged-out");
    assert.equal(phone.list("messages").length, 1);
    await assert.rejects(phone.sync(), { code: "ERR_SYNC_CLIENT_LOGIN_REQUIRED" });
    await phone.logout();
    assert.equal(server.revoked.length, 1, "nothing more to revoke");
  });

  it("forgets the login when the server cannot be reached to revoke it", async () => {
    const server = new FakeSyncServer();
    server.override = (request) =>
      request.path === "/oauth2/revoke" ? new TypeError("fetch failed") : undefined;
    const phone = client(server, { clientSecret: "s3cret" });
    await phone.login("ada", "pw");
    await phone.logout();
    assert.equal(phone.status().phase, "logged-out");
    const revoke = server.sent.find((r) => r.path === "/oauth2/revoke")!;
    assert.equal(new URLSearchParams(revoke.body).get("client_secret"), "s3cret");
  });

  it("refuses another user's login while the outbox holds writes, and clears the copy when empty", async () => {
    const server = new FakeSyncServer();
    server.write("messages", uuid(1), message(1));
    const phone = client(server);
    await phone.login("ada", "pw");
    await phone.sync();
    await phone.put("messages", message(2));
    await phone.logout();
    await assert.rejects(phone.login("bob", "pw"), { code: "ERR_SYNC_CLIENT_OTHER_USER" });
    await phone.login("ada", "pw");
    await phone.sync();
    await phone.logout();
    await phone.login("bob", "pw");
    assert.deepEqual(phone.list("messages"), [], "ada's copy is gone");
    assert.equal(phone.status().revision, undefined);
  });
});

describe("merge()", () => {
  /** Two devices at one revision, each about to edit message 1. */
  async function conflicting(onConflict: ConflictPolicy) {
    const server = new FakeSyncServer();
    server.write("messages", uuid(1), message(1));
    const events: SyncClientEvent[] = [];
    const laptop = client(server, { onConflict });
    laptop.subscribe((event) => events.push(event));
    await laptop.login("ada", "pw");
    await laptop.sync();
    return { server, laptop, events };
  }

  const readOrSubject = merge((local, server) => ({
    ...server,
    read: local["read"] === true || server["read"] === true,
  }));

  it("keeps what the merge function gives when both sides edited", async () => {
    const { server, laptop, events } = await conflicting(readOrSubject);
    server.write("messages", uuid(1), message(1, "Renamed on the phone"));
    await laptop.put("messages", message(1, "Message 1", true));
    await laptop.sync();
    assert.deepEqual(server.get(uuid(1)), message(1, "Renamed on the phone", true));
    assert.deepEqual(laptop.get("messages", uuid(1)), message(1, "Renamed on the phone", true));
    const conflict = events.find((e) => e.kind === "conflict");
    assert.ok(conflict?.kind === "conflict");
    assert.equal(conflict.conflict.local?.["subject" as never], "Message 1");
  });

  it("leaves an object deleted on the server deleted", async () => {
    const { server, laptop } = await conflicting(readOrSubject);
    server.write("messages", uuid(1), null);
    await laptop.put("messages", message(1, "Edited", true));
    await laptop.sync();
    assert.equal(server.get(uuid(1)), null);
    assert.equal(laptop.get("messages", uuid(1)), undefined);
  });

  it("sends a local deletion again", async () => {
    const { server, laptop } = await conflicting(readOrSubject);
    server.write("messages", uuid(1), message(1, "Edited on the phone"));
    await laptop.delete("messages", uuid(1));
    await laptop.sync();
    assert.equal(server.get(uuid(1)), null);
    assert.equal(laptop.get("messages", uuid(1)), undefined);
  });

  it("keeps the server's object when the policy throws, and records the error", async () => {
    const { server, laptop } = await conflicting(() => {
      throw new Error("the policy broke");
    });
    server.write("messages", uuid(1), message(1, "The phone's"));
    await laptop.put("messages", message(1, "The laptop's"));
    await laptop.sync().catch(() => {});
    assert.equal(laptop.get("messages", uuid(1))?.subject, "The phone's");
    assert.equal(laptop.pending(), 0);
  });
});

describe("createSyncClient() pulls and patches the server queues or loses", () => {
  it("follows a queued snapshot's ticket to its data, and asks again for a lost one", async () => {
    const server = new FakeSyncServer();
    server.write("messages", uuid(1), message(1));
    let asked = 0;
    let polls = 0;
    server.override = (request) => {
      if (request.method === "GET" && request.path === "/api/v2/sync/user" && asked++ < 2) {
        return Response.json({ ticket: { uuid: `t${asked}`, status: "new" }, data: null }, {
          status: 202,
        });
      }
      if (request.path === "/api/v2/sync/user/ticket/t1") return new Response("", { status: 404 });
      if (request.path === "/api/v2/sync/user/ticket/t2") {
        polls++;
        return Response.json({
          ticket: { uuid: "t2", status: polls === 1 ? "work" : "done" },
          data: polls === 1 ? null : {
            revision: revisionOf(server.serial),
            serial: server.serial,
            objects: { me: null, messages: [message(1)], teams: [] },
          },
        });
      }
      return undefined;
    };
    const phone = client(server);
    await phone.login("ada", "pw");
    await phone.sync();
    assert.deepEqual(phone.list("messages"), [message(1)]);
    assert.equal(polls, 2);
  });

  it("sends a patch whose ticket failed again under a new key, after a backoff", async () => {
    const server = new FakeSyncServer();
    const keys: string[] = [];
    server.override = (request) => {
      if (request.method !== "POST" || request.path !== "/api/v2/sync/user") return undefined;
      keys.push(request.headers.get("idempotency-key")!);
      if (keys.length === 1) {
        return Response.json({ ticket: { uuid: "failed", status: "failed" }, data: null }, {
          status: 202,
        });
      }
      if (keys.length === 2) {
        return Response.json({ ticket: { uuid: "lost", status: "new" }, data: null }, {
          status: 202,
        });
      }
      return undefined;
    };
    const phone = client(server);
    await phone.login("ada", "pw");
    await phone.sync();
    await phone.put("messages", message(1));
    await phone.sync();
    assert.equal(keys.length, 3);
    assert.equal(new Set(keys).size, 3, "each resend under a new key");
    assert.deepEqual(server.get(uuid(1)), message(1));
  });

  it("drops an object a rule refused and reports it; a bad base asks for a snapshot", async () => {
    const server = new FakeSyncServer();
    let posts = 0;
    server.override = (request) => {
      if (request.method !== "POST" || request.path !== "/api/v2/sync/user") return undefined;
      posts++;
      const errors = posts === 1
        ? [{
          section: "objects",
          entity: "teams",
          key: { uuid: uuid(9) },
          attribute: "name",
          messages: [{ level: "error", code: "unique", message: "Taken" }],
        }]
        : posts === 2
        ? [{
          section: "objects",
          entity: "messages",
          key: null,
          attribute: "base_revision",
          messages: [{ level: "error", code: "expired", message: "Gone" }],
        }]
        : [];
      if (errors.length === 0) return undefined;
      return Response.json({ ticket: { uuid: `a${posts}`, status: "aborted", errors } }, {
        status: 202,
      });
    };
    const rejected: SyncClientEvent[] = [];
    const phone = client(server);
    phone.subscribe((event) => event.kind === "rejected" && rejected.push(event));
    await phone.login("ada", "pw");
    await phone.sync();
    await phone.put("teams", { uuid: uuid(9), name: "Red" });
    await phone.put("messages", message(1));
    await phone.sync();
    assert.equal(rejected.length, 1);
    assert.ok(rejected[0]!.kind === "rejected" && rejected[0]!.uuid === uuid(9));
    assert.equal(phone.get("teams", uuid(9)), undefined);
    assert.deepEqual(server.get(uuid(1)), message(1));
    assert.equal(server.count("/api/v2/sync/user"), 2, "two snapshots: the first, and the rebase");
  });

  it("refuses every object of a patch aborted for reasons it cannot tell apart", async () => {
    const server = new FakeSyncServer();
    server.override = (request) =>
      request.method === "POST" && request.path === "/api/v2/sync/user"
        ? Response.json({
          ticket: {
            uuid: "x",
            status: "aborted",
            errors: [{
              section: "objects",
              entity: "messages",
              key: null,
              attribute: null,
              messages: [],
            }],
          },
        }, { status: 202 })
        : undefined;
    const phone = client(server);
    await phone.login("ada", "pw");
    await phone.put("messages", message(1));
    await phone.put("messages", message(2));
    await phone.sync();
    assert.equal(phone.pending(), 0);
    assert.deepEqual(phone.list("messages"), []);
  });

  it("fails with ERR_SYNC_CLIENT_RESPONSE on answers the API does not give", async () => {
    const cases: ((request: { method: string; path: string }) => Response | undefined)[] = [
      (r) =>
        r.path === "/api/v2/sync/user" && r.method === "GET"
          ? Response.json({ data: { serial: 1 } })
          : undefined,
      (r) => r.method === "POST" ? new Response("", { status: 200 }) : undefined,
      (r) =>
        r.path.includes("/ticket/")
          ? new Response("", { status: 418 })
          : r.method === "POST"
          ? Response.json({ ticket: { uuid: "w", status: "work" } }, { status: 202 })
          : undefined,
    ];
    for (const override of cases) {
      const server = new FakeSyncServer();
      const phone = client(server);
      await phone.login("ada", "pw");
      server.override = override;
      await phone.put("messages", message(1));
      await assert.rejects(phone.sync(), { code: "ERR_SYNC_CLIENT_RESPONSE" });
      assert.equal(phone.status().phase, "idle");
      assert.ok(phone.status().lastError !== undefined);
    }
  });
});

describe("createSyncClient() stopping", () => {
  it("ends a round the caller's signal aborts with ERR_SYNC_CLIENT_ABORTED, keeping the outbox", async () => {
    const server = new FakeSyncServer();
    const stop = new AbortController();
    server.override = (request) => {
      if (request.path !== "/api/v2/sync/user" || request.method !== "POST") return undefined;
      stop.abort();
      return new TypeError("fetch failed");
    };
    const phone = client(server);
    await phone.login("ada", "pw");
    await phone.put("messages", message(1));
    await assert.rejects(phone.sync({ signal: stop.signal }), { code: "ERR_SYNC_CLIENT_ABORTED" });
    assert.equal(phone.pending(), 1);
    assert.equal(phone.status().phase, "idle");
    await assert.rejects(phone.sync({ signal: stop.signal }), { code: "ERR_SYNC_CLIENT_ABORTED" });
  });

  it("ends a round close() interrupts with ERR_SYNC_CLIENT_CLOSED, and refuses writes after", async () => {
    const server = new FakeSyncServer();
    let closing: Promise<void> | undefined;
    const phone = client(server);
    server.override = (request) => {
      if (request.path !== "/api/v2/sync/user" || request.method !== "POST") return undefined;
      closing ??= phone.close();
      return new TypeError("fetch failed");
    };
    await phone.login("ada", "pw");
    await phone.put("messages", message(1));
    await assert.rejects(phone.sync(), { code: "ERR_SYNC_CLIENT_CLOSED" });
    await closing;
    await phone.close();
    await assert.rejects(phone.put("messages", message(2)), { code: "ERR_SYNC_CLIENT_CLOSED" });
    await assert.rejects(phone.sync(), { code: "ERR_SYNC_CLIENT_CLOSED" });
    await assert.rejects(phone.login("ada", "pw"), { code: "ERR_SYNC_CLIENT_CLOSED" });
  });
});

describe("createSyncClient() storage failures", () => {
  it("undoes a write the storage could not keep, and reports ERR_SYNC_CLIENT_STORAGE", async () => {
    let failing = false;
    const entries = new Map<string, unknown>();
    const storage: SyncStorage = {
      load: () => Promise.resolve(new Map(entries)),
      write(changes) {
        if (failing) return Promise.reject(new Error("disk full"));
        for (const [key, value] of changes) {
          if (value === undefined) entries.delete(key);
          else entries.set(key, value);
        }
        return Promise.resolve();
      },
      close: () => Promise.resolve(),
    };
    const phone = client(new FakeSyncServer(), { storage });
    await phone.login("ada", "pw");
    failing = true;
    await assert.rejects(phone.put("messages", message(1)), {
      code: "ERR_SYNC_CLIENT_STORAGE",
      message: /disk full/,
    });
    assert.equal(phone.pending(), 0);
    assert.equal(phone.get("messages", uuid(1)), undefined);
  });

  it("reports a storage that cannot load from ready() and the first operation", async () => {
    const storage: SyncStorage = {
      load: () => Promise.reject(new Error("unreadable")),
      write: () => Promise.resolve(),
      close: () => Promise.resolve(),
    };
    const phone = client(new FakeSyncServer(), { storage });
    await assert.rejects(phone.ready(), { code: "ERR_SYNC_CLIENT_STORAGE" });
    await assert.rejects(phone.login("ada", "pw"), { code: "ERR_SYNC_CLIENT_STORAGE" });
  });
});
