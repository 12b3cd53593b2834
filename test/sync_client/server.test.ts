// The sync client against the real token and sync service in process
// (createApp, SERVICES=sync, 127.0.0.1:0), its clock in the test's hands:
// two devices of one user kept in step, a patch whose answer is lost sent
// again under its key and applied once, conflicts, a pruned base answered by
// a snapshot, and the outbox of a device process killed with writes queued.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import {
  createSyncClient,
  fileStorage,
  serverWins,
  type SyncClient,
  type SyncClientOptions,
  type SyncConflict,
} from "../../lib/sync_client/mod.ts";
import { DAY, message, noSleep, PASSWORD, SyncServer } from "../_helpers/sync_server.ts";

const server = new SyncServer();
const temporary = mkdtempSync(join(tmpdir(), "tributary-sync-client-"));
const clients: SyncClient[] = [];
before(() => server.start());
after(async () => {
  await Promise.all(clients.map((client) => client.close()));
  await server.close();
  rmSync(temporary, { recursive: true, force: true });
});

let users = 0;
/** A new user, signed up. */
async function newUser(): Promise<string> {
  const username = `device-user-${++users}`;
  await server.signUp(username);
  return username;
}

/** A client of the server, on the server's clock, retrying at once. */
function device(options: Partial<SyncClientOptions> = {}): SyncClient {
  const client = createSyncClient({
    baseUrl: server.url,
    clientId: "demo-app",
    now: () => server.clock.time,
    sleep: noSleep,
    ...options,
  });
  clients.push(client);
  return client;
}

/**
 * Both devices log in and hold message 1; the phone edits it and syncs, then
 * the laptop edits it from the revision before the phone's edit and syncs: a
 * conflict, the laptop's intent "From the laptop" against the server's "From the phone".
 */
async function editOnBoth(user: string, phone: SyncClient, laptop: SyncClient): Promise<void> {
  await phone.login(user, PASSWORD);
  await laptop.login(user, PASSWORD);
  await phone.put("messages", message(1));
  await phone.sync();
  await laptop.sync();
  await phone.put("messages", message(1, "From the phone"));
  await phone.sync();
  // The laptop edits the same message from the revision before the phone's edit.
  await laptop.put("messages", message(1, "From the laptop"));
  await laptop.sync();
}

/** A fetch that records what it sends and what comes back, and may drop an answer. */
function recordingFetch(drop?: (url: string, init: RequestInit | undefined) => boolean) {
  const seen: { method: string; path: string; status: number; key: string | null; body: string }[] =
    [];
  const wrapped = async (input: string, init?: RequestInit): Promise<Response> => {
    const response = await fetch(input, init);
    const text = await response.clone().text();
    seen.push({
      method: init?.method ?? "GET",
      path: new URL(input).pathname,
      status: response.status,
      key: new Headers(init?.headers).get("idempotency-key"),
      body: text,
    });
    if (drop?.(input, init) === true) {
      // The server did the work; the answer is lost on the way back.
      throw new TypeError("fetch failed: the connection was reset");
    }
    return response;
  };
  return { seen, fetch: wrapped };
}

describe("createSyncClient() against the server", () => {
  it("keeps two devices of one user in step: writes, edits and deletions both ways", async () => {
    const user = await newUser();
    const phone = device();
    const laptop = device();
    await phone.login(user, PASSWORD);
    await laptop.login(user, PASSWORD);
    const changes: string[] = [];
    laptop.subscribe((event) => {
      if (event.kind === "change") changes.push(event.entities.join(","));
    });
    await phone.put("messages", message(1));
    await phone.put("messages", message(2));
    assert.equal(phone.pending(), 2);
    assert.equal(phone.get("messages", message(1).uuid)?.read, false, "the default, at once");
    await phone.sync();
    assert.equal(phone.pending(), 0);
    await laptop.sync();
    assert.deepEqual(laptop.list("messages"), phone.list("messages"));
    assert.equal(laptop.list("messages").length, 2);
    assert.ok(changes.length > 0);
    await laptop.put("messages", { ...message(1, "Edited on the laptop"), read: true });
    await laptop.delete("messages", message(2).uuid);
    await laptop.sync();
    await phone.sync();
    assert.deepEqual(phone.list("messages"), laptop.list("messages"));
    assert.equal(phone.get("messages", message(1).uuid)?.subject, "Edited on the laptop");
    assert.equal(phone.get("messages", message(2).uuid), undefined);
    assert.equal(phone.list("me")[0]?.username, user);
    assert.equal(phone.status().revision, laptop.status().revision);
    assert.equal(phone.status().phase, "idle");
  });

  it("started, pulls another device's patch when the change stream announces it, and polls nothing", async () => {
    const user = await newUser();
    // What the laptop sends, and each revision event its change stream brings, in order.
    const log: string[] = [];
    const laptopFetch = async (input: string, init?: RequestInit): Promise<Response> => {
      const url = new URL(input);
      log.push(`${init?.method ?? "GET"} ${url.pathname}`);
      const response = await fetch(input, init);
      if (!url.pathname.endsWith("/changes") || response.body === null) return response;
      let text = "";
      let counted = 0;
      const body = response.body.pipeThrough(new TextDecoderStream()).pipeThrough(
        new TransformStream<string, string>({
          transform(chunk, controller) {
            text += chunk;
            const events = text.match(/^event: revision$/gm)?.length ?? 0;
            for (; counted < events; counted++) log.push("event");
            controller.enqueue(chunk);
          },
        }),
      ).pipeThrough(new TextEncoderStream());
      return new Response(body, { status: response.status, headers: response.headers });
    };
    const phone = device();
    const laptop = device({ fetch: laptopFetch });
    await phone.login(user, PASSWORD);
    await laptop.login(user, PASSWORD);
    await laptop.sync();
    const arrived = new Promise<void>((resolve) =>
      laptop.subscribe(() => {
        if (laptop.get("messages", message(1).uuid) !== undefined) resolve();
      })
    );
    const started = log.length;
    laptop.start();
    await phone.put("messages", message(1));
    await phone.sync();
    await arrived;
    await laptop.close();
    const since = log.slice(started);
    assert.ok(since.includes("GET /api/v2/sync/user/changes"), since.join("\n"));
    const diffs = since.filter((entry) => entry.includes("/since/")).length;
    const events = since.filter((entry) => entry === "event").length;
    assert.ok(events >= 1, since.join("\n"));
    // start() pulls once as it starts; every other pull follows an event.
    assert.ok(diffs <= events + 1, since.join("\n"));
    const lastDiff = since.findLastIndex((entry) => entry.includes("/since/"));
    assert.ok(
      since.slice(0, lastDiff).includes("event"),
      "the pull that brought it followed an event",
    );
    assert.equal(laptop.get("messages", message(1).uuid)?.subject, "Message 1");
  });

  it("sends a patch whose answer was lost again under the same Idempotency-Key, and the server applies it once", async () => {
    const user = await newUser();
    let dropped = 0;
    const recorder = recordingFetch((url, init) =>
      init?.method === "POST" && new URL(url).pathname === "/api/v2/sync/user" && dropped++ === 0
    );
    const conflicts: SyncConflict[] = [];
    const phone = device({ fetch: recorder.fetch, onConflict: (c) => void conflicts.push(c) });
    await phone.login(user, PASSWORD);
    await phone.sync();
    const before = await server.snapshot(user);
    await phone.put("messages", message(1));
    await phone.sync();
    const posts = recorder.seen.filter((r) =>
      r.method === "POST" && r.path === "/api/v2/sync/user"
    );
    assert.equal(posts.length, 2, "the patch, and its resend");
    assert.ok(posts[0]!.key !== null && posts[0]!.key === posts[1]!.key, "one key");
    assert.equal(posts[0]!.body.length > 0 && posts[0]!.status, 202);
    const tickets = posts.map((post) =>
      (JSON.parse(post.body) as { ticket: { uuid: string } }).ticket.uuid
    );
    assert.equal(tickets[0], tickets[1], "the resend gets the first ticket");
    assert.deepEqual(
      conflicts,
      [],
      "applied once: a second application would conflict with the first",
    );
    const now = await server.snapshot(user);
    assert.equal(now.serial, before.serial + 1, "one revision");
    assert.deepEqual(now.objects.messages.map((m) => m.subject), ["Message 1"]);
  });

  it("hands a conflict to onConflict with the local intent and the server's object; serverWins keeps the server's", async () => {
    const user = await newUser();
    const phone = device();
    const conflicts: SyncConflict[] = [];
    const laptop = device({
      onConflict: (conflict) => {
        conflicts.push(conflict);
        return serverWins(conflict);
      },
    });
    await editOnBoth(user, phone, laptop);
    assert.equal(conflicts.length, 1);
    assert.equal(conflicts[0]!.entity, "messages");
    assert.equal(conflicts[0]!.uuid, message(1).uuid);
    assert.equal(conflicts[0]!.local?.["subject" as never], "From the laptop");
    assert.equal(conflicts[0]!.server?.["subject" as never], "From the phone");
    assert.equal(laptop.get("messages", message(1).uuid)?.subject, "From the phone");
    assert.equal(laptop.pending(), 0);
  });

  it("with localWins sends the local intent again on the server's new revision", async () => {
    const user = await newUser();
    const phone = device();
    const laptop = device();
    await editOnBoth(user, phone, laptop);
    await phone.sync();
    assert.equal(phone.get("messages", message(1).uuid)?.subject, "From the laptop");
    assert.equal((await server.snapshot(user)).objects.messages[0]?.subject, "From the laptop");
  });

  it("takes a snapshot when its base revision is past the retention (410), and refreshes its token on the way", async () => {
    const user = await newUser();
    const recorder = recordingFetch();
    const phone = device();
    const laptop = device({ fetch: recorder.fetch });
    await phone.login(user, PASSWORD);
    await laptop.login(user, PASSWORD);
    await laptop.sync();
    await phone.put("messages", message(1));
    await phone.sync();
    server.clock.time += 2 * DAY;
    await phone.put("messages", message(2));
    await phone.delete("messages", message(1).uuid);
    await phone.sync();
    await laptop.sync();
    assert.ok(recorder.seen.some((r) => r.path.includes("/since/") && r.status === 410));
    assert.ok(recorder.seen.some((r) => r.path === "/api/v2/sync/user" && r.status === 200));
    assert.ok(recorder.seen.some((r) => r.path === "/oauth2/token" && r.status === 200));
    assert.deepEqual(laptop.list("messages"), phone.list("messages"));
    assert.deepEqual(laptop.list("messages").map((m) => m.uuid), [message(2).uuid]);
  });

  it("sends the outbox of a device process killed with its patch sent and unanswered once it starts again, applied once", async () => {
    const user = await newUser();
    const folder = join(temporary, "device");
    const child = spawn(process.execPath, [
      "--import",
      "tsx",
      join(import.meta.dirname, "..", "_helpers", "sync_device.ts"),
      server.url,
      folder,
      user,
      PASSWORD,
    ], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout!.on("data", (chunk: Buffer) => (out += chunk.toString()));
    while (!out.includes("sent\n")) {
      await Promise.race([once(child.stdout!, "data"), once(child, "exit")]);
      assert.equal(child.exitCode, null, `the device exited: ${out}`);
    }
    child.kill("SIGKILL");
    await once(child, "exit");
    const before = await server.snapshot(user);
    const recorder = recordingFetch();
    const conflicts: SyncConflict[] = [];
    const restarted = device({
      storage: fileStorage(folder),
      fetch: recorder.fetch,
      onConflict: (c) => void conflicts.push(c),
    });
    await restarted.ready();
    assert.equal(restarted.pending(), 3, "the outbox came back");
    await restarted.sync();
    const posts = recorder.seen.filter((r) =>
      r.method === "POST" && r.path === "/api/v2/sync/user"
    );
    assert.equal(posts.length, 1);
    assert.equal(
      posts[0]!.key,
      out.match(/key ([0-9a-f-]+)/)?.[1],
      "the key the killed process sent",
    );
    assert.deepEqual(conflicts, []);
    assert.equal(restarted.pending(), 0);
    const now = await server.snapshot(user);
    assert.equal(now.serial, before.serial, "applied once, before the kill");
    assert.deepEqual(now.objects.messages.map((m) => m.subject).sort(), [
      "Message 1",
      "Message 2",
      "Message 3",
    ]);
    assert.deepEqual(restarted.list("messages").map((m) => m.subject).sort(), [
      "Message 1",
      "Message 2",
      "Message 3",
    ]);
  });
});
