// The sync client's property test (issue 31): seeded random schedules of 3 to
// 8 devices of one user (sync clients in this process, each with a memory or
// a folder storage, restarted at random) against the real server as child
// processes: (a) one process on the embedded store (STATE_DIR), SIGKILLed and
// started again when a chosen request of the schedule reaches it; (b) two
// processes on one PostgreSQL database, each request going to either, one of
// them SIGKILLed and started again likewise. Each device makes random
// creates, edits and deletes (each put carrying a unique marker as its
// subject) while randomly offline, and syncs through a faulty network of its
// own that drops requests, drops answers after the server got the request,
// duplicates requests and delays them by event-loop turns (all from the
// seed, bounded). At the end (all online, no faults, sync() until the head
// stays): every device's copy equals the server's context read by a fresh
// client; every device's last intent on each object was acknowledged, or
// reported to onConflict or as rejected; no marker was applied more often
// than once plus its conflicts; and no acknowledged change was lost (each
// object's final value is written by a patch no later acknowledged patch
// follows). Seeds: SYNC_PROPERTY_SEEDS (default 4 per store), and
// REGRESSIONS, the seeds that once failed.
import assert from "node:assert/strict";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import {
  createSyncClient,
  fileStorage,
  memoryStorage,
  type SyncClient,
  type SyncStorage,
} from "../../lib/sync_client/mod.ts";
import { postgresServerSkip, startPostgres, type TestPostgres } from "../_helpers/postgres.ts";
import { createPrng, type Prng } from "../_helpers/prng.ts";
import { listeningUrl, type Started, startServer } from "../_helpers/server.ts";
import { signUp } from "../_helpers/sync_client.ts";

const PASSWORD = "correct horse battery";
/** Seeds that failed once, run first on both stores. */
const REGRESSIONS: readonly number[] = [];
const COUNT = Number(process.env["SYNC_PROPERTY_SEEDS"] ?? "4");
const SEEDS = [...REGRESSIONS, ...Array.from({ length: COUNT }, (_, i) => 0x5eed0 + i)];

const temporary = mkdtempSync(join(tmpdir(), "tributary-sync-property-"));
after(() => rmSync(temporary, { recursive: true, force: true }));

/** A turn of the event loop: a delay that orders, not a wait for time. */
const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** The server processes of a run, killed and started again by the schedule. */
class Cluster {
  readonly #env: Record<string, string>;
  readonly #servers: Started[] = [];
  readonly urls: string[] = [];
  /** Resolved while every process is up; a request waits on it. */
  up: Promise<void> = Promise.resolve();
  kills = 0;

  constructor(env: Record<string, string>) {
    this.#env = env;
  }

  async start(processes: number): Promise<void> {
    for (let i = 0; i < processes; i++) this.#servers.push(startServer(this.#env));
    for (const server of this.#servers) this.urls.push(await listeningUrl(server));
  }

  /** SIGKILLs process `i` and starts it again (on a new port); requests wait meanwhile. */
  kill(i: number): Promise<void> {
    const restarted = (async () => {
      const server = this.#servers[i]!;
      server.child.kill("SIGKILL");
      if (server.child.exitCode === null && server.child.signalCode === null) {
        await once(server.child, "exit");
      }
      const next = startServer(this.#env);
      this.#servers[i] = next;
      this.urls[i] = await listeningUrl(next);
      this.kills++;
    })();
    this.up = Promise.all([this.up, restarted]).then(() => {});
    return restarted;
  }

  async stop(): Promise<void> {
    for (const server of this.#servers) {
      if (server.child.exitCode !== null || server.child.signalCode !== null) continue;
      server.child.kill("SIGTERM");
      await once(server.child, "exit");
    }
  }
}

/** What the wire saw of the patches: their bodies by key, when sent, when seen done. */
class Wire {
  seq = 0;
  readonly bodyOf = new Map<string, string>();
  readonly deviceOf = new Map<string, number>();
  readonly sentAt = new Map<string, number>();
  readonly keyOfTicket = new Map<string, string>();
  /** Done tickets' keys, with the sequence number at which done was first seen. */
  readonly doneAt = new Map<string, number>();

  /** Records an answer of the sync API as it came off the server. */
  answer(path: string, key: string | null, text: string): void {
    let body: { ticket?: { uuid?: string; status?: string } | null } = {};
    try {
      body = JSON.parse(text) as typeof body;
    } catch {
      return;
    }
    const ticket = body.ticket;
    if (ticket?.uuid === undefined) return;
    if (key !== null && path === "/api/v2/sync/user") this.keyOfTicket.set(ticket.uuid, key);
    const owner = this.keyOfTicket.get(ticket.uuid);
    if (ticket.status === "done" && owner !== undefined && !this.doneAt.has(owner)) {
      this.doneAt.set(owner, ++this.seq);
    }
  }
}

/** One device: its client, storage, faults, and what it was told. */
interface Device {
  readonly n: number;
  /** Its storage, opened again as the app does after a restart. */
  readonly open: () => SyncStorage;
  client: SyncClient;
  online: boolean;
  /** Resolved when it comes online: an offline request waits for it, then fails. */
  onlineGate: Promise<void>;
  goOnline: () => void;
  /** Its sync() in flight, if any. */
  syncing: Promise<void> | undefined;
  faults: boolean;
  readonly prng: Prng;
  /** Its intents in order: the uuid and the marker (null: a deletion). */
  readonly intents: { uuid: string; marker: string | null }[];
  /** Markers (or `delete <uuid>`) reported to onConflict as local, with counts. */
  readonly conflicts: Map<string, number>;
  /** Objects whose write was reported as rejected. */
  readonly rejected: Set<string>;
}

interface Run {
  readonly seed: number;
  readonly cluster: Cluster;
  readonly wire: Wire;
  readonly user: string;
  /** Process i's restart is triggered when the wire's sequence reaches each of these. */
  readonly killAt: Map<number, number>;
  faultsSeen: { dropRequest: number; dropAnswer: number; duplicate: number; delay: number };
  /** Errors of syncs other than a close's. */
  readonly failures: unknown[];
}

/** Sets a device on- or offline. */
function setOnline(d: Device, online: boolean): void {
  if (online === d.online) return;
  d.online = online;
  if (online) d.goOnline();
  else d.onlineGate = new Promise((resolve) => (d.goOnline = resolve));
}

/** Starts a sync of the device unless one is in flight. */
function startSync(run: Run, d: Device): void {
  if (d.syncing !== undefined) return;
  const client = d.client;
  d.syncing = client.sync().catch((error: unknown) => {
    if ((error as { code?: string }).code !== "ERR_SYNC_CLIENT_CLOSED") run.failures.push(error);
  }).finally(() => {
    if (d.client === client) d.syncing = undefined;
  });
}

/** A device's fetch: to a process of the cluster, through its faults. */
function deviceFetch(run: Run, device: () => Device) {
  let streak = 0;
  return async (input: string, init?: RequestInit): Promise<Response> => {
    const d = device();
    if (!d.online) {
      // The platform is offline: the request fails once it is back (or the client stops).
      await new Promise<void>((resolve) => {
        void d.onlineGate.then(resolve);
        init?.signal?.addEventListener("abort", () => resolve(), { once: true });
      });
      throw new TypeError("fetch failed: offline");
    }
    await run.cluster.up;
    const { prng } = d;
    const url = new URL(input);
    const target = run.cluster.urls[prng.int(run.cluster.urls.length)]!;
    const faulty = d.faults && streak < 3;
    const roll = faulty ? prng.next() : 1;
    const key = new Headers(init?.headers).get("idempotency-key");
    if (roll < 0.12) {
      for (let i = prng.int(20); i > 0; i--) await turn();
      run.faultsSeen.delay++;
    }
    if (roll >= 0.12 && roll < 0.22) {
      streak++;
      run.faultsSeen.dropRequest++;
      throw new TypeError("fetch failed: the request was dropped");
    }
    const send = async (): Promise<Response> => {
      const seq = ++run.wire.seq;
      if (key !== null && !run.wire.sentAt.has(key)) {
        run.wire.sentAt.set(key, seq);
        run.wire.bodyOf.set(key, String(init?.body));
        run.wire.deviceOf.set(key, d.n);
      }
      for (const [i, at] of run.killAt) {
        if (seq >= at) {
          run.killAt.delete(i);
          void run.cluster.kill(i);
        }
      }
      const response = await fetch(`${target}${url.pathname}${url.search}`, init);
      const text = await response.text();
      if (url.pathname.startsWith("/api/v2/sync/user")) run.wire.answer(url.pathname, key, text);
      return new Response(response.status === 204 || response.status === 304 ? null : text, {
        status: response.status,
        headers: response.headers,
      });
    };
    if (roll >= 0.22 && roll < 0.29) {
      run.faultsSeen.duplicate++;
      await send().catch(() => {});
    }
    const response = await send();
    if (roll >= 0.29 && roll < 0.39) {
      streak++;
      run.faultsSeen.dropAnswer++;
      throw new TypeError("fetch failed: the answer was lost");
    }
    streak = 0;
    return response;
  };
}

function newClient(run: Run, device: () => Device, storage: SyncStorage): SyncClient {
  const client = createSyncClient({
    baseUrl: "http://tributary.invalid",
    clientId: "demo-app",
    storage,
    fetch: deviceFetch(run, device),
    sleep: () => turn(),
    watch: async function* () {},
  });
  client.subscribe((event) => {
    const d = device();
    if (event.kind === "conflict") {
      const local = event.conflict.local;
      const mark = local === null
        ? `delete ${event.conflict.uuid}`
        : String((local as { subject?: unknown }).subject);
      d.conflicts.set(mark, (d.conflicts.get(mark) ?? 0) + 1);
    }
    if (event.kind === "rejected") d.rejected.add(event.uuid);
  });
  return client;
}

const uuidOf = (seed: number, device: number, n: number): string =>
  `${(seed >>> 0).toString(16).padStart(8, "0")}-0000-4000-8000-${
    String(device * 10_000 + n).padStart(12, "0")
  }`;

/** One seed's schedule against a cluster; returns what it checked, for the log. */
async function runSeed(seed: number, cluster: Cluster, processes: number): Promise<string> {
  const prng = createPrng(seed);
  const user = `prop-${seed.toString(36)}-${processes}`;
  assert.equal(await signUp(cluster.urls[0]!, user, PASSWORD), 201);
  const devicesCount = 3 + prng.int(6);
  const steps = devicesCount * 12;
  const killAt = new Map<number, number>();
  // One kill of each process somewhere in the schedule's requests (a few per step).
  for (let i = 0; i < processes; i++) killAt.set(i, 10 + prng.int(steps));
  const planned = [...killAt.values()];
  const run: Run = {
    seed,
    cluster,
    wire: new Wire(),
    user,
    killAt,
    faultsSeen: { dropRequest: 0, dropAnswer: 0, duplicate: 0, delay: 0 },
    failures: [],
  };
  const devices: Device[] = [];
  for (let n = 0; n < devicesCount; n++) {
    const memory = memoryStorage();
    const folder = join(temporary, `${seed}-${processes}-${n}`);
    const open = prng.next() < 0.5 ? () => memory : () => fileStorage(folder);
    let client: SyncClient | undefined;
    const device: Device = {
      n,
      open,
      syncing: undefined,
      onlineGate: Promise.resolve(),
      goOnline: () => {},
      get client() {
        return client!;
      },
      set client(next) {
        client = next;
      },
      online: true,
      faults: false,
      prng: createPrng(seed * 31 + n),
      intents: [],
      conflicts: new Map(),
      rejected: new Set(),
    };
    device.client = newClient(run, () => device, open());
    await device.client.login(user, PASSWORD);
    await device.client.sync();
    device.faults = true;
    devices.push(device);
  }
  let writes = 0;
  let restarts = 0;
  for (let step = 0; step < steps; step++) {
    const d = prng.pick(devices);
    const roll = prng.next();
    if (roll < 0.45) {
      // A write: a create, or an edit or deletion of a message it shows.
      const shown = d.client.list("messages");
      const kind = shown.length === 0 ? 0 : prng.int(4);
      const marker = `s${seed.toString(36)}-d${d.n}-w${++writes}`;
      if (kind === 3) {
        const uuid = prng.pick(shown).uuid;
        d.intents.push({ uuid, marker: null });
        await d.client.delete("messages", uuid);
      } else {
        const uuid = kind === 0 ? uuidOf(seed, d.n, writes) : prng.pick(shown).uuid;
        d.intents.push({ uuid, marker });
        await d.client.put("messages", {
          uuid,
          subject: marker,
          body: "",
          read: prng.next() < 0.5,
          sent_at: "2026-11-24T08:00:00Z",
        });
      }
    } else if (roll < 0.55) {
      setOnline(d, !d.online);
    } else if (roll < 0.6) {
      // The app restarts, a sync maybe in flight: the client closed and made again on its storage.
      await d.client.close();
      await d.syncing;
      d.syncing = undefined;
      d.client = newClient(run, () => d, d.open());
      await d.client.ready();
      restarts++;
    } else if (roll < 0.9) {
      // Some devices start syncing; the schedule goes on meanwhile (writes while a patch is in flight).
      for (const each of devices) if (prng.next() < 0.5) startSync(run, each);
    } else {
      // The online devices' syncs in flight end.
      await Promise.all(devices.filter((each) => each.online).map((each) => each.syncing));
    }
  }
  const killed = planned.map((at) => at > run.wire.seq ? "at the end" : `at ${at}`);
  // The end: the kills not yet reached happen now; every device online, no faults, in step.
  for (const i of [...killAt.keys()]) {
    killAt.delete(i);
    await run.cluster.kill(i);
  }
  await run.cluster.up;
  for (const d of devices) {
    setOnline(d, true);
    d.faults = false;
  }
  await Promise.all(devices.map((d) => d.syncing));
  assert.deepEqual(run.failures, [], `seed ${seed}: syncs failed`);
  let head = "";
  for (let pass = 0; pass < 6; pass++) {
    for (const d of devices) await d.client.sync();
    for (const d of devices) await d.client.sync();
    const heads = new Set(devices.map((d) => d.client.status().revision));
    if (heads.size === 1 && [...heads][0] === head) break;
    head = [...heads][0] ?? "";
  }
  await run.cluster.up;

  // The server's context, read by a fresh client on a fault-free fetch.
  const reader = createSyncClient({
    baseUrl: run.cluster.urls[0]!,
    clientId: "demo-app",
    watch: async function* () {},
  });
  await reader.login(user, PASSWORD);
  await reader.sync();
  const server = reader.list("messages");
  await reader.close();
  const context = `seed ${seed} (${processes} process(es), ${devicesCount} devices)`;
  for (const d of devices) {
    assert.equal(d.client.pending(), 0, `${context}: device ${d.n}'s outbox is empty`);
    assert.deepEqual(d.client.list("messages"), server, `${context}: device ${d.n} = server`);
    assert.equal(d.client.status().revision, reader.status().revision, `${context}: the head`);
  }

  // The patches acknowledged (seen done on the wire): what each wrote.
  type Written = { key: string; device: number; uuid: string; marker: string | null };
  const acknowledged: Written[] = [];
  for (const [key, doneAt] of run.wire.doneAt) {
    void doneAt;
    const body = JSON.parse(run.wire.bodyOf.get(key)!) as {
      objects: { messages?: { uuid: string; subject: string }[] };
      deleted_objects: { messages?: string[] };
    };
    const device = run.wire.deviceOf.get(key)!;
    for (const m of body.objects.messages ?? []) {
      acknowledged.push({ key, device, uuid: m.uuid, marker: m.subject });
    }
    for (const uuid of body.deleted_objects.messages ?? []) {
      acknowledged.push({ key, device, uuid, marker: null });
    }
  }
  // Each device's last intent on each object: acknowledged, or reported.
  for (const d of devices) {
    const last = new Map<string, string | null>();
    for (const intent of d.intents) last.set(intent.uuid, intent.marker);
    for (const [uuid, marker] of last) {
      const applied = acknowledged.some((w) =>
        w.device === d.n && w.uuid === uuid && w.marker === marker
      );
      const reported = d.conflicts.has(marker ?? `delete ${uuid}`) || d.rejected.has(uuid);
      assert.ok(
        applied || reported,
        `${context}: device ${d.n}'s last intent on ${uuid} (${marker}) was neither applied nor reported`,
      );
    }
    // Applied at most once, and once more per conflict it was reported in.
    for (const intent of d.intents) {
      if (intent.marker === null) continue;
      const keys = new Set(
        acknowledged.filter((w) => w.marker === intent.marker).map((w) => w.key),
      );
      assert.ok(
        keys.size <= 1 + (d.conflicts.get(intent.marker) ?? 0),
        `${context}: ${intent.marker} applied ${keys.size} times`,
      );
    }
  }
  // No acknowledged change lost: each object's final state is written by an
  // acknowledged patch that no acknowledged patch sent after it was done follows.
  const uuids = new Set(acknowledged.map((w) => w.uuid));
  for (const uuid of uuids) {
    const writers = acknowledged.filter((w) => w.uuid === uuid);
    const latest = writers.filter((w) =>
      !writers.some((later) => run.wire.sentAt.get(later.key)! > run.wire.doneAt.get(w.key)!)
    );
    const final = server.find((m) => m.uuid === uuid)?.subject ?? null;
    assert.ok(
      latest.some((w) => w.marker === final),
      `${context}: ${uuid} ends as ${final}, not as any of the last acknowledged writes (${
        latest.map((w) => w.marker).join(", ")
      })`,
    );
  }
  for (const object of server) {
    assert.ok(uuids.has(object.uuid), `${context}: ${object.uuid} was never acknowledged`);
  }
  for (const d of devices) await d.client.close();
  const f = run.faultsSeen;
  const conflicts = devices.reduce(
    (sum, d) => sum + [...d.conflicts.values()].reduce((a, b) => a + b, 0),
    0,
  );
  return `${context}: ${writes} writes, ${run.wire.doneAt.size} patches acknowledged, ` +
    `${conflicts} conflicts reported, ` +
    `${restarts} device restarts, ${cluster.kills} server kills (${killed.join(", ")} of ` +
    `${run.wire.seq} wire events), faults: ${f.dropRequest} ` +
    `requests dropped, ${f.dropAnswer} answers dropped, ${f.duplicate} duplicated, ` +
    `${f.delay} delayed`;
}

/** Runs a seed; on failure prints it for REGRESSIONS and fails. */
async function checked(seed: number, go: () => Promise<string>): Promise<void> {
  try {
    console.log(await go());
  } catch (error) {
    console.log(`sync client property: seed ${seed} failed; add it to REGRESSIONS`);
    throw error;
  }
}

const BASE_ENV = {
  SERVICES: "sync",
  PASSWORD_HASH_COST: "1024",
  RATE_LIMIT_PER_SECOND: "0",
  RATE_LIMIT_CONCURRENCY: "0",
};

describe("the sync client's property: devices in step through faults and server kills", () => {
  describe("(a) one process on the embedded store (STATE_DIR)", () => {
    for (const seed of SEEDS) {
      it(`seed ${seed}`, async () => {
        const cluster = new Cluster({
          ...BASE_ENV,
          STATE_DIR: mkdtempSync(join(temporary, `state-${seed}-`)),
        });
        await cluster.start(1);
        try {
          await checked(seed, () => runSeed(seed, cluster, 1));
        } finally {
          await cluster.up.catch(() => {});
          await cluster.stop();
        }
      });
    }
  });

  describe("(b) two processes on PostgreSQL", { skip: postgresServerSkip }, () => {
    let postgres: TestPostgres | undefined;
    after(() => postgres?.stop());
    for (const seed of SEEDS) {
      it(`seed ${seed}`, async () => {
        postgres ??= await startPostgres();
        const cluster = new Cluster({ ...BASE_ENV, DATABASE_URL: await postgres.database() });
        await cluster.start(2);
        try {
          await checked(seed, () => runSeed(seed, cluster, 2));
        } finally {
          await cluster.up.catch(() => {});
          await cluster.stop();
        }
      });
    }
  });
});
