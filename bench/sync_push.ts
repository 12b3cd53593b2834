// Changes pushed to devices, and the sync client's cost (issue 31):
// - latency: two server processes on PostgreSQL, 1,000 other devices'
//   change streams open (spread over both); device A patches through process
//   1, device B (the sync client, its watch a change stream on process 2)
//   pulls the diff each time a revision is announced. For 200 patches, one
//   every 100 ms at most, the time from A posting the patch (its ticket comes
//   back done: committed) to B's local copy having it: p50 <= 100 ms, p99 <= 1 s;
// - 10,000 open change streams on one process (embedded store; 1,000 users
//   x 10 streams, with SYNC_STREAMS_PER_USER=10 for the bench, the default
//   being 8): the server's RSS after opening them - before, per stream,
//   <= 10 KB; then one patch through the API to each of the 1,000 users, 32
//   at a time: from the first posted to every stream having heard its user's
//   revision <= 2 s;
// - the client's overhead: the sync client applying 1,000 local edits (new
//   messages) then sync(), against a plain fetch loop sending the same edits
//   one patch each and following their tickets (embedded store; 3 rounds,
//   fresh users, median): client / loop <= 1.5.
// Servers run pinned to one CPU; the streams' holder and PostgreSQL to the
// other. Each server and the streams' holder needs 11,000 open files.
// Needs: PostgreSQL's initdb and pg_ctl (a cluster of its own in a temporary folder), ulimit -n of 11,000, about 3 minutes.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import {
  type ChangesTransport,
  createSyncClient,
  type SyncClient,
} from "../lib/sync_client/mod.ts";
import { startPostgres } from "../test/_helpers/postgres.ts";
import { login, message, signUpToken } from "../test/_helpers/sync_client.ts";
import { type BenchResult, report, ROOT } from "./_data.ts";
import { median, pinnedCommand, pinToClientCpu, startPinnedServer } from "./_processes.ts";

const PASSWORD = "correct horse battery";
const OTHERS = 1_000;
const PATCHES = Number(process.env["BENCH_SYNC_PUSH_PATCHES"] ?? 200);
const PACE_MS = 100;
const STREAM_USERS = 1_000;
const STREAMS_PER_USER = 10;
const EDITS = 1_000;
const ROUNDS = Number(process.env["BENCH_ROUNDS"] ?? 3);
const FILES_NEEDED = STREAM_USERS * STREAMS_PER_USER + 1_000;
const SYNC_ENV = {
  PORT: "0",
  HOST: "127.0.0.1",
  SERVICES: "sync",
  PASSWORD_HASH_COST: "1024",
  SYNC_MAX_QUEUED_PER_USER: "64",
  // Every device of the bench logs in from 127.0.0.1: attempts in flight count against the address.
  LOGIN_MAX_FAILURES_PER_ADDRESS: "0",
};

// The open-file limit: each server and the streams' holder keeps 10,000 sockets. Below it, run
// again under a raised soft limit (the children inherit it), or say how.
const softLimit = Number(
  /^Max open files\s+(\d+)/m.exec(readFileSync("/proc/self/limits", "utf8"))?.[1],
);
if (softLimit < FILES_NEEDED) {
  const hard = Number(spawnSync("sh", ["-c", "ulimit -Hn"], { encoding: "utf8" }).stdout);
  if (!(hard >= FILES_NEEDED) || process.env["BENCH_SYNC_PUSH_RAISED"] === "1") {
    console.error(
      `sync_push needs ${FILES_NEEDED} open files per process (10,000 streams); the limit is ${softLimit} (hard ${hard}): raise it (ulimit -n ${FILES_NEEDED}) and run again`,
    );
    process.exit(1);
  }
  console.log(`raising the open-file limit from ${softLimit} to ${FILES_NEEDED} (ulimit -n)`);
  const again = spawnSync("sh", [
    "-c",
    `ulimit -n ${FILES_NEEDED} && exec "$0" "$@"`,
    process.execPath,
    ...process.execArgv,
    ...process.argv.slice(1),
  ], { stdio: "inherit", env: { ...process.env, BENCH_SYNC_PUSH_RAISED: "1" } });
  process.exit(again.status ?? 1);
}

/** A user signed up and logged in on a server. */
interface Account {
  readonly url: string;
  readonly username: string;
  readonly access: string;
}

/**
 * Signs users up and logs them in through the API, 16 at a time, user i on server i mod n.
 * @returns their access tokens, by server
 */
async function accounts(urls: readonly string[], prefix: string, count: number) {
  const tokens = await Promise.all(urls.map((url) => signUpToken(url)));
  const made: Account[] = [];
  let next = 0;
  await Promise.all(Array.from({ length: 16 }, async () => {
    for (let i = next++; i < count; i = next++) {
      const url = urls[i % urls.length]!;
      const username = `${prefix}${i}`;
      const response = await fetch(`${url}/api/v2/sign-up`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${tokens[i % urls.length]}`,
          "content-type": "application/json",
        },
        body: JSON.stringify({ username, password: PASSWORD }),
      });
      if (response.status !== 201) {
        throw new Error(`cannot sign ${username} up: ${response.status} ${await response.text()}`);
      }
      const answer = await login(url, username, PASSWORD);
      const access = answer.body.access_token;
      if (access === undefined) {
        throw new Error(
          `cannot log ${username} in: ${answer.status} ${JSON.stringify(answer.body)}`,
        );
      }
      made.push({ url, username, access });
    }
  }));
  return made;
}

/** The streams' holder (bench/_streams.ts), answering one JSON line per command. */
interface Holder {
  readonly opened: { opened: number; seconds: number };
  command<T>(line: string): Promise<T>;
  close(): Promise<void>;
}

async function holdStreams(targets: readonly Account[], perTarget: number): Promise<Holder> {
  const [command, ...args] = pinnedCommand([
    process.execPath,
    "--import",
    "tsx",
    "bench/_streams.ts",
    JSON.stringify({ targets: targets.map(({ url, access }) => ({ url, access })), perTarget }),
  ], "client");
  const child = spawn(command!, args, { cwd: ROOT, stdio: ["pipe", "pipe", "inherit"] });
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const read = async <T>(): Promise<T> => {
    const next = await lines.next();
    if (next.done === true) throw new Error(`the streams' holder exited (${child.exitCode})`);
    return JSON.parse(next.value) as T;
  };
  const opened = await read<{ opened: number; seconds: number }>();
  return {
    opened,
    command: <T>(line: string) => {
      child.stdin!.write(`${line}\n`);
      return read<T>();
    },
    async close() {
      child.stdin!.write("close\n");
      if (child.exitCode === null) await once(child, "exit");
    },
  };
}

async function stop(...children: ChildProcess[]): Promise<void> {
  for (const child of children) child.kill("SIGTERM");
  await Promise.all(
    children.map((child) => child.exitCode === null ? once(child, "exit") : undefined),
  );
}

/**
 * The bench's own changes transport: the change stream read through the
 * client's authorized fetch, each `revision` event's id handed on; opened
 * again from the last id when it ends.
 */
function watchStream(): ChangesTransport {
  return async function* (since, signal, request) {
    let last = since;
    while (!signal.aborted) {
      try {
        const response = await request("/api/v2/sync/user/changes", {
          headers: last === undefined ? {} : { "last-event-id": last },
          signal,
        });
        if (response.status !== 200 || response.body === null) {
          throw new Error(`the change stream answered ${response.status}`);
        }
        const decoder = new TextDecoder();
        let buffer = "";
        for await (const chunk of response.body) {
          buffer += decoder.decode(chunk as Uint8Array, { stream: true });
          for (let end = buffer.indexOf("\n\n"); end !== -1; end = buffer.indexOf("\n\n")) {
            const id = /^id: (.*)$/m.exec(buffer.slice(0, end))?.[1];
            buffer = buffer.slice(end + 2);
            if (id !== undefined) {
              last = id;
              yield id;
            }
          }
        }
      } catch (error) {
        if (signal.aborted) return;
        console.error(`B's change stream: ${String(error)}; opened again`);
      }
    }
  };
}

/** Resolves with performance.now() once `holds` is true of the client, or undefined after `ms`. */
function when(client: SyncClient, holds: () => boolean, ms: number): Promise<number | undefined> {
  if (holds()) return Promise.resolve(performance.now());
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      stopListening();
      resolve(undefined);
    }, ms);
    const stopListening = client.subscribe((event) => {
      if (event.kind !== "change" || !holds()) return;
      const at = performance.now();
      clearTimeout(timer);
      stopListening();
      resolve(at);
    });
  });
}

/** POSTs a patch and follows its ticket until done; gives when it was done (performance.now()). */
async function patchDone(url: string, access: string, body: unknown): Promise<number> {
  const headers = { authorization: `Bearer ${access}`, "content-type": "application/json" };
  const posted = await fetch(`${url}/api/v2/sync/user`, {
    method: "POST",
    headers,
    body: JSON.stringify(body),
  });
  let { ticket } = (await posted.json()) as { ticket: { uuid: string; status: string } };
  if (posted.status !== 202) throw new Error(`a patch answered ${posted.status}`);
  // Bounded: a ticket that does not end within 10,000 polls stops the run.
  for (let poll = 0; ticket.status === "new" || ticket.status === "work"; poll++) {
    if (poll === 10_000) throw new Error(`ticket ${ticket.uuid} did not end`);
    const answer = await fetch(`${url}/api/v2/sync/user/ticket/${ticket.uuid}`, { headers });
    ticket = ((await answer.json()) as { ticket: typeof ticket }).ticket;
  }
  if (ticket.status !== "done") throw new Error(`a patch ended ${ticket.status}`);
  return performance.now();
}

const percentile = (values: readonly number[], p: number): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const results: BenchResult[] = [];

// 1. A patch on device A, in device B's local copy, across two processes on PostgreSQL.
{
  const postgres = await startPostgres(true);
  pinToClientCpu(postgres.pid()!);
  const database = postgres.viaSocket(await postgres.database());
  const env = { ...SYNC_ENV, DATABASE_URL: database };
  const servers = [
    await startPinnedServer(["--import", "tsx", "server.ts"], env),
    await startPinnedServer(["--import", "tsx", "server.ts"], env),
  ];
  let holder: Holder | undefined;
  let b: SyncClient | undefined;
  try {
    const urls = servers.map((server) => server.url);
    const started = performance.now();
    const others = await accounts(urls, "other", OTHERS);
    const [ada] = await accounts(urls.slice(0, 1), "ada", 1);
    console.log(
      `latency: ${OTHERS + 1} users signed up and logged in on PostgreSQL in ${
        ((performance.now() - started) / 1000).toFixed(1)
      } s`,
    );
    holder = await holdStreams(others, 1);
    console.log(
      `latency: ${holder.opened.opened} other devices' streams open (half on each process) in ${
        holder.opened.seconds.toFixed(1)
      } s`,
    );
    b = createSyncClient({ baseUrl: urls[1]!, clientId: "demo-app", watch: watchStream() });
    await b.login(ada!.username, PASSWORD);
    await b.sync();
    b.start();
    const sinceSent: number[] = [];
    const sinceDone: number[] = [];
    let missed = 0;
    // 10 patches to warm up, then the measured ones.
    for (let n = 0; n < 10 + PATCHES; n++) {
      const subject = `Patch ${n}`;
      const uuid = message(n % 50)["uuid"] as string;
      const next = performance.now() + PACE_MS;
      const sent = performance.now();
      const client = b;
      const seen = when(client, () => client.get("messages", uuid)?.subject === subject, 10_000);
      const done = await patchDone(ada!.url, ada!.access, {
        objects: { messages: [message(n % 50, subject)] },
        serial: null,
      });
      const at = (await seen) ?? (missed++, performance.now());
      if (n >= 10) {
        sinceSent.push(at - sent);
        sinceDone.push(Math.max(0, at - done));
      }
      await sleep(next - performance.now());
    }
    const [p50, p99] = [percentile(sinceSent, 50), percentile(sinceSent, 99)];
    console.log(
      `latency: ${PATCHES} patches through process 1, in B's local copy (B on process 2): from posted p50 ${
        p50.toFixed(1)
      } ms, p99 ${p99.toFixed(1)} ms, worst ${
        Math.max(...sinceSent).toFixed(1)
      } ms; from A's ticket done p50 ${percentile(sinceDone, 50).toFixed(1)} ms, p99 ${
        percentile(sinceDone, 99).toFixed(1)
      } ms${missed > 0 ? `; ${missed} not seen within 10 s` : ""}`,
    );
    results.push({
      name: "sync push latency p50",
      measure: "patch posted on process 1 to B's local copy via process 2, p50 / 100 ms",
      ratio: p50 / 100,
      target: "<= 1",
      pass: p50 <= 100 && missed === 0,
    });
    results.push({
      name: "sync push latency p99",
      measure: "patch posted on process 1 to B's local copy via process 2, p99 / 1 s",
      ratio: p99 / 1000,
      target: "<= 1",
      pass: p99 <= 1000 && missed === 0,
    });
  } finally {
    await b?.close();
    await holder?.close();
    await stop(...servers.map((server) => server.child));
    await postgres.stop();
  }
}

// 2. 10,000 streams on one process: their memory, and one change to each of 1,000 users heard.
{
  const memoryFile = join(mkdtempSync(join(tmpdir(), "tributary-bench-memory-")), "usage.json");
  const server = await startPinnedServer([
    "--expose-gc",
    "--import",
    "tsx",
    "--import",
    "./bench/_memory_probe.ts",
    "server.ts",
  ], {
    ...SYNC_ENV,
    STATE_DIR: "",
    SYNC_STREAMS_PER_USER: String(STREAMS_PER_USER),
    BENCH_MEMORY_FILE: memoryFile,
  });
  /** The server's memory after a full garbage collection (its probe, on SIGUSR2), and its RSS. */
  const memory = async (): Promise<{ heap: number; rss: number }> => {
    rmSync(memoryFile, { force: true });
    server.child.kill("SIGUSR2");
    // Bounded: the probe answers within 10 s or the run stops.
    for (let tries = 0; !existsSync(memoryFile); tries++) {
      if (tries === 500) throw new Error("the server's memory probe did not answer");
      await sleep(20);
    }
    const usage = JSON.parse(readFileSync(memoryFile, "utf8")) as NodeJS.MemoryUsage;
    return { heap: usage.heapUsed + usage.external, rss: usage.rss };
  };
  let holder: Holder | undefined;
  try {
    const users = await accounts([server.url], "user", STREAM_USERS);
    const before = await memory();
    holder = await holdStreams(users, STREAMS_PER_USER);
    const after = await memory();
    const count = holder.opened.opened;
    const perStream = (after.heap - before.heap) / count;
    const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MB`;
    console.log(
      `streams: ${count} open on one process in ${
        holder.opened.seconds.toFixed(1)
      } s; after a full GC the server's heap + external ${mb(before.heap)} before, ${
        mb(after.heap)
      } after: ${(perStream / 1024).toFixed(2)} KB a stream; its RSS ${mb(before.rss)} before, ${
        mb(after.rss)
      } after: ${((after.rss - before.rss) / count / 1024).toFixed(2)} KB a stream`,
    );
    results.push({
      name: "sync streams memory",
      measure:
        "server heap + external after a full GC, with 10,000 streams open - before, per stream / 10 KB",
      ratio: perStream / 10_240,
      target: "<= 1",
      pass: perStream <= 10_240,
    });
    await holder.command("arm");
    const epoch = () => performance.timeOrigin + performance.now();
    const started = epoch();
    let next = 0;
    await Promise.all(Array.from({ length: 32 }, async () => {
      for (let i = next++; i < users.length; i = next++) {
        const user = users[i]!;
        await patchDone(user.url, user.access, {
          objects: { messages: [message(i, `Change ${i}`)] },
          serial: null,
        });
      }
    }));
    const patched = epoch() - started;
    const heard = await holder.command<{ heard: number; missing: number; last: number }>(
      "await 10000",
    );
    const took = heard.missing > 0 ? Number.POSITIVE_INFINITY : heard.last - started;
    console.log(
      `streams: ${users.length} patches done in ${
        patched.toFixed(0)
      } ms; ${heard.heard} streams heard them${
        heard.missing > 0 ? ` (${heard.missing} did not within 10 s)` : ""
      }, the last ${(heard.last - started).toFixed(0)} ms after the first patch was posted`,
    );
    results.push({
      name: "sync streams fan-out",
      measure: "one patch to each of 1,000 users, to all 10,000 streams heard / 2 s",
      ratio: took / 2000,
      target: "<= 1",
      pass: took <= 2000,
    });
  } finally {
    await holder?.close();
    await stop(server.child);
  }
}

// 3. The client's overhead: 1,000 local edits and sync(), against a fetch loop of the same patches.
{
  const server = await startPinnedServer(["--import", "tsx", "server.ts"], {
    ...SYNC_ENV,
    STATE_DIR: "",
  });
  try {
    const users = await accounts([server.url], "device", ROUNDS * 2 + 3);
    const edit = (n: number) =>
      ({ ...message(n, `Edit ${n}`) }) as Parameters<SyncClient["put"]>[1];
    const viaClient = async (
      account: Account,
      edits = EDITS,
      maxPatchObjects?: number,
    ): Promise<number> => {
      const client = createSyncClient({
        baseUrl: account.url,
        clientId: "demo-app",
        ...(maxPatchObjects === undefined ? {} : { maxPatchObjects }),
      });
      await client.login(account.username, PASSWORD);
      await client.sync();
      const started = performance.now();
      for (let n = 0; n < edits; n++) await client.put("messages", edit(n) as never);
      await client.sync();
      const took = performance.now() - started;
      if (client.list("messages").length !== edits || client.pending() !== 0) {
        throw new Error(
          `the client has ${client.list("messages").length} messages, ${client.pending()} pending`,
        );
      }
      await client.close();
      return took;
    };
    const viaLoop = async (account: Account): Promise<number> => {
      const started = performance.now();
      for (let n = 0; n < EDITS; n++) {
        await patchDone(account.url, account.access, {
          objects: { messages: [edit(n)] },
          serial: null,
        });
      }
      return performance.now() - started;
    };
    // Warm both paths up on their own users.
    await viaClient(users[0]!);
    await viaLoop(users[1]!);
    const client: number[] = [];
    const loop: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      client.push(await viaClient(users[2 + round * 2]!));
      loop.push(await viaLoop(users[3 + round * 2]!));
      console.log(
        `client: round ${round + 1}: ${EDITS} edits and sync() ${
          client[round]!.toFixed(0)
        } ms; the fetch loop, one patch an edit, ${loop[round]!.toFixed(0)} ms`,
      );
    }
    const ratio = median(client.map((c, i) => c / loop[i]!));
    // Informational: the client made to send one object a patch, on 100 edits.
    const single = await viaClient(users[2 + ROUNDS * 2]!, 100, 1);
    console.log(
      `client: one object a patch (maxPatchObjects 1), 100 edits and sync() ${
        single.toFixed(0)
      } ms: ${(single / 100).toFixed(1)} ms an edit, the loop's ${
        (median(loop) / EDITS).toFixed(2)
      } ms (informational)`,
    );
    results.push({
      name: "sync client overhead",
      measure:
        "1,000 edits and sync() through the client / the same as one patch each in a fetch loop, median of rounds",
      ratio,
      target: "<= 1.5",
      pass: ratio <= 1.5,
    });
  } finally {
    await stop(server.child);
  }
}

report(results);
