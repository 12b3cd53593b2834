// The relay on a real Redis with real relay processes: two processes sharing
// one queue, a relay killed with SIGKILL mid-delivery, and Redis itself killed
// and restarted from its append-only file. Each run accepts 10,000 messages
// and checks that every one reaches the receiver; duplicates (the same
// webhook-id twice, which at-least-once delivery allows) are counted and
// reported.
import assert from "node:assert/strict";
import { once } from "node:events";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { after, before, describe, it, type TestContext } from "node:test";
import { freePort, redisServerSkip, redisSkip, startRedis, type TestRedis } from "../_helpers/redis.ts";
import { listeningUrl, type Started, startServer } from "../_helpers/server.ts";

const MESSAGES = 10_000;
const TENANTS = ["acme", "globex", "initech", "umbrella"];

/** A loopback receiver that counts deliveries by webhook-id. */
class Receiver {
  readonly seen = new Map<string, number>();
  /** While set, requests are held unanswered (deliveries stay in flight). */
  hold = false;
  readonly held: ServerResponse[] = [];
  readonly server: Server;
  #wanted: ReadonlySet<string> | undefined;
  #missing = 0;
  #allThere: () => void = () => {};

  constructor() {
    this.server = createServer((req: IncomingMessage, res: ServerResponse) => {
      req.resume();
      req.on("end", () => {
        const id = String(req.headers["webhook-id"]);
        const count = (this.seen.get(id) ?? 0) + 1;
        this.seen.set(id, count);
        if (count === 1 && this.#wanted?.has(id) === true && --this.#missing === 0) this.#allThere();
        if (this.hold) this.held.push(res);
        else res.writeHead(204).end();
      });
    });
  }

  async listen(): Promise<string> {
    this.server.listen(0, "127.0.0.1");
    await once(this.server, "listening");
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
  }

  /** Resolves once every id of `ids` has arrived at least once. */
  all(ids: ReadonlySet<string>): Promise<void> {
    this.#wanted = ids;
    this.#missing = [...ids].filter((id) => !this.seen.has(id)).length;
    return this.#missing === 0 ? Promise.resolve() : new Promise((resolve) => (this.#allThere = resolve));
  }

  /** Arrivals beyond the first, over all ids. */
  duplicates(): number {
    let extra = 0;
    for (const count of this.seen.values()) extra += count - 1;
    return extra;
  }

  close(): void {
    for (const res of this.held.splice(0)) res.destroy();
    this.server.close();
    this.server.closeAllConnections();
  }
}

/** A tenants file: four tenants, one endpoint each, all to the receiver. */
function tenantsFile(dir: string, url: string): string {
  const file = join(dir, "tenants.json");
  writeFileSync(file, JSON.stringify({
    tenants: TENANTS.map((id) => ({
      id,
      api_keys: [`key-${id}`],
      endpoints: [{ id: "hook", url, events: ["*"], secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" }],
    })),
  }));
  return file;
}

function relayEnv(redisUrl: string, tenants: string): Record<string, string> {
  return {
    SERVICES: "relay",
    STORAGE_TYPE: "redis",
    REDIS_URL: redisUrl,
    TENANTS_FILE: tenants,
    ALLOW_PRIVATE_TARGETS: "127.0.0.1/32",
    RETRY_SCHEDULE: "100ms",
    MAX_ATTEMPTS: "1000",
    DELIVERY_TIMEOUT_MS: "1000",
    ENDPOINT_CONCURRENCY: "16",
  };
}

/**
 * Posts `count` messages over 16 connections, spread over the tenants and
 * over `urls` in turn. A 503 or a refused connection (the relay or Redis
 * away) is tried again after 50 ms, up to 600 times per message.
 * @param onAccepted told of each acceptance, with how many so far
 * @returns the accepted message ids
 */
async function post(urls: () => readonly string[], count: number, onAccepted: (accepted: number) => void = () => {}): Promise<Set<string>> {
  const accepted = new Set<string>();
  let next = 0;
  const clients = Array.from({ length: 16 }, async () => {
    for (let n = next++; n < count; n = next++) {
      const tenant = TENANTS[n % TENANTS.length]!;
      const body = JSON.stringify({ event: "order.created", data: { n } });
      for (let attempt = 0; ; attempt++) {
        assert.ok(attempt < 600, `message ${n} was not accepted after ${attempt} tries`);
        const targets = urls();
        const url = targets[(n + attempt) % targets.length]!;
        try {
          const response = await fetch(`${url}/webhook`, {
            method: "POST",
            headers: { authorization: `Bearer key-${tenant}`, "content-type": "application/json" },
            body,
          });
          if (response.status === 202) {
            accepted.add(((await response.json()) as { id: string }).id);
            onAccepted(accepted.size);
            break;
          }
          assert.equal(response.status, 503, await response.text());
          await response.body?.cancel();
        } catch (error) {
          if (error instanceof assert.AssertionError) throw error;
        }
        await delay(50);
      }
    }
  });
  await Promise.all(clients);
  return accepted;
}

/** Sum of a counter over its series in a /metrics text. */
async function counter(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  let sum = 0;
  for (const line of text.split("\n")) if (line.startsWith(`${name}{`) || line.startsWith(`${name} `)) sum += Number(line.split(" ").at(-1));
  return sum;
}

async function stop(started: Started): Promise<void> {
  if (started.child.exitCode !== null || started.child.signalCode !== null) return;
  started.child.kill("SIGTERM");
  const [code] = await once(started.child, "exit");
  assert.equal(code, 0, started.errors());
}

function report(t: TestContext, receiver: Receiver, accepted: ReadonlySet<string>): void {
  const duplicates = receiver.duplicates();
  // Beyond the accepted: messages queued whose 202 never reached the client (Redis died before answering), so it posted them again.
  const unconfirmed = [...receiver.seen.keys()].filter((id) => !accepted.has(id)).length;
  t.diagnostic(`${accepted.size} accepted, ${receiver.seen.size} distinct delivered (${unconfirmed} queued without a 202), ${duplicates} duplicates`);
  for (const id of accepted) assert.ok(receiver.seen.has(id), `${id} was delivered`);
}

describe("the relay on one Redis, several processes", { skip: redisSkip, timeout: 240_000 }, () => {
  let redis: TestRedis;
  const dirs: string[] = [];
  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    await redis.stop();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });
  /** A fresh key prefix, so that the tests share the server but not the queue. */
  let n = 0;
  function setup(receiverUrl: string): Record<string, string> {
    const dir = mkdtempSync(join(tmpdir(), "tributary-relay-redis-"));
    dirs.push(dir);
    return { ...relayEnv(redis.url, tenantsFile(dir, receiverUrl)), REDIS_KEY_PREFIX: `{e2e-${process.pid}-${++n}}` };
  }

  it("shares 10,000 messages between two relay processes: each delivered, none lost", async (t) => {
    const receiver = new Receiver();
    const env = setup(await receiver.listen());
    const first = startServer(env);
    const second = startServer(env);
    try {
      const urls = [await listeningUrl(first, "Webhook intake"), await listeningUrl(second, "Webhook intake")];
      const accepted = await post(() => urls, MESSAGES);
      assert.equal(accepted.size, MESSAGES);
      await receiver.all(accepted);
      report(t, receiver, accepted);
      const attempts = await Promise.all(urls.map((url) => counter(url, "tributary_relay_delivery_attempts_total")));
      t.diagnostic(`delivery attempts by process: ${attempts.join(", ")}`);
      for (const made of attempts) assert.ok(made > 0, `both processes delivered: ${attempts.join(", ")}`);
      assert.ok(attempts[0]! + attempts[1]! >= MESSAGES);
    } finally {
      receiver.close();
      await Promise.all([stop(first), stop(second)]);
    }
  });

  it("loses nothing when a relay is killed with SIGKILL mid-delivery and started again", async (t) => {
    const receiver = new Receiver();
    const env = setup(await receiver.listen());
    const first = startServer(env);
    let second: Started | undefined;
    try {
      const url = await listeningUrl(first, "Webhook intake");
      // The receiver holds its answers, so deliveries are in flight when the relay dies.
      receiver.hold = true;
      const accepted = await post(() => [url], MESSAGES);
      assert.equal(accepted.size, MESSAGES);
      while (receiver.held.length < 16) await once(receiver.server, "request");
      first.child.kill("SIGKILL");
      await once(first.child, "exit");
      const inFlight = receiver.held.length;
      receiver.hold = false;
      for (const res of receiver.held.splice(0)) res.destroy();
      assert.ok(receiver.seen.size < MESSAGES, "most messages were still queued when the relay died");
      second = startServer(env);
      await listeningUrl(second, "Webhook intake");
      // The jobs the dead relay held come back when their leases expire.
      await receiver.all(accepted);
      t.diagnostic(`${inFlight} requests were unanswered at the kill (held ones time out after 1 s and are tried again)`);
      report(t, receiver, accepted);
    } finally {
      receiver.close();
      if (second !== undefined) await stop(second);
    }
  });
});

describe("the relay while Redis is killed and restarted from its append-only file", { skip: redisServerSkip, timeout: 240_000 }, () => {
  it("loses none of 10,000 accepted messages", async (t) => {
    const dir = mkdtempSync(join(tmpdir(), "tributary-redis-aof-"));
    const port = await freePort();
    let redis = await startRedis(dir, port);
    const receiver = new Receiver();
    const relay = startServer(relayEnv(redis.url, tenantsFile(dir, await receiver.listen())));
    try {
      const url = await listeningUrl(relay, "Webhook intake");
      let killed: Promise<void> | undefined;
      const accepted = await post(() => [url], MESSAGES, (count) => {
        // Once 3,000 are in, Redis dies mid-intake and mid-delivery and comes back on its own file.
        if (count !== 3000) return;
        killed = (async () => {
          redis.child!.kill("SIGKILL");
          await once(redis.child!, "exit");
          redis = await startRedis(dir, port);
        })();
      });
      await killed;
      assert.equal(accepted.size, MESSAGES);
      await receiver.all(accepted);
      report(t, receiver, accepted);
      assert.match(relay.errors(), /Relay queue: Redis at redis:\/\/127\.0\.0\.1:\d+: /, "the relay said it lost Redis");
    } finally {
      receiver.close();
      await stop(relay);
      await redis.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
