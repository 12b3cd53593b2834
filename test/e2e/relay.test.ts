// The relay end to end on loopback: real HTTP intake, the real worker and
// delivery client, and real receivers (node:http servers) that succeed, fail,
// answer 410, 429 or a redirect, hang, or close the connection. Deliveries
// are verified with the standardwebhooks and svix packages and decrypted with jose.
// The retry schedule is in milliseconds; every wait is for an event (a
// request reaching a receiver, a job reaching a state), never a fixed sleep.
import assert from "node:assert/strict";
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { after, before, describe, it } from "node:test";
import { compactDecrypt } from "jose";
import { Webhook } from "standardwebhooks";
import { Webhook as SvixWebhook } from "svix";
import { parseWebhookSecret, sha256Hex, verifyWebhook } from "../../lib/crypto/mod.ts";
import { createNodeListener } from "../../lib/http/mod.ts";
import {
  createAddressPolicy,
  createHttpDelivery,
  createRelayService,
  type JobView,
  MemoryQueue,
  RelayWorker,
  TenantRegistry,
} from "../../lib/relay/mod.ts";

const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const KEYS = generateKeyPairSync("rsa", { modulusLength: 2048 });
const PUBLIC_PEM = KEYS.publicKey.export({ type: "spki", format: "pem" }) as string;

interface Received {
  readonly headers: IncomingMessage["headers"];
  readonly body: string;
}

/** A receiver on 127.0.0.1 (or another loopback address) whose answers a script decides. */
class Receiver {
  readonly received: Received[] = [];
  #server: Server | undefined;
  #waiters: { count: number; resolve: () => void }[] = [];
  url = "";

  readonly script: (n: number, res: ServerResponse) => void;
  readonly host: string;

  constructor(script: (n: number, res: ServerResponse) => void, host = "127.0.0.1") {
    this.script = script;
    this.host = host;
  }

  async start(): Promise<this> {
    this.#server = createServer((req, res) => {
      let body = "";
      req.setEncoding("utf8");
      req.on("data", (chunk: string) => (body += chunk));
      req.on("end", () => {
        this.received.push({ headers: req.headers, body });
        this.script(this.received.length, res);
        for (const waiter of this.#waiters.filter((w) => this.received.length >= w.count)) {
          waiter.resolve();
        }
        this.#waiters = this.#waiters.filter((w) => this.received.length < w.count);
      });
    });
    this.#server.listen(0, this.host);
    await once(this.#server, "listening");
    this.url = `http://${this.host}:${(this.#server.address() as AddressInfo).port}/hook`;
    return this;
  }

  /** Resolves once `count` requests have arrived. */
  got(count: number): Promise<void> {
    if (this.received.length >= count) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push({ count, resolve }));
  }

  async stop(): Promise<void> {
    this.#server?.closeAllConnections();
    this.#server?.close();
  }
}

function answer(status: number, headers: Record<string, string> = {}) {
  return (_n: number, res: ServerResponse) => {
    res.writeHead(status, headers);
    res.end("ok");
  };
}

describe("relay end to end on loopback", () => {
  const receivers = {
    ok: new Receiver(answer(200)),
    flaky: new Receiver((n, res) => answer(n <= 2 ? 500 : 204)(n, res)),
    gone: new Receiver(answer(410)),
    throttled: new Receiver((n, res) =>
      answer(n === 1 ? 429 : 200, n === 1 ? { "retry-after": "0" } : {})(n, res)
    ),
    redirect: new Receiver(answer(301, { location: "http://127.0.0.1:1/elsewhere" })),
    hangup: new Receiver((_n, res) => res.socket?.destroy()),
    slow: new Receiver(() => undefined),
    sealed: new Receiver(answer(200)),
    private: new Receiver(answer(200), "127.0.0.2"),
  };
  let intake: Server;
  let base = "";
  let queue: MemoryQueue;
  let worker: RelayWorker;
  let close: () => void;

  before(async () => {
    for (const receiver of Object.values(receivers)) await receiver.start();
    const registry = new TenantRegistry({ now: Date.now, random: randomBytes });
    registry.addTenant("acme", [sha256Hex("acme-key")]);
    registry.addTenant("globex", [sha256Hex("globex-key")]);
    for (const [name, receiver] of Object.entries(receivers)) {
      registry.createEndpoint("acme", {
        id: name,
        url: receiver.url,
        events: [`${name}.*`],
        secret: SECRET,
        ...(name === "sealed" ? { public_key: PUBLIC_PEM } : {}),
      });
    }
    registry.createEndpoint("globex", {
      id: "ok",
      url: receivers.ok.url,
      events: ["*"],
      secret: SECRET,
    });
    queue = new MemoryQueue();
    const delivery = createHttpDelivery({
      policy: createAddressPolicy({ allow: ["127.0.0.1/32"] }),
    });
    close = delivery.close;
    worker = new RelayWorker({
      queue,
      registry,
      deliver: delivery.deliver,
      schedule: { kind: "fixed", delaysMs: [5, 10, 20], maxAttempts: 4, jitter: 0 },
      now: Date.now,
      random: Math.random,
      setTimer: (task, ms) => {
        const timer = setTimeout(task, ms);
        return () => clearTimeout(timer);
      },
      deliveryTimeoutMs: 300,
    });
    intake = createServer(createNodeListener(createRelayService({
      registry,
      queue,
      now: Date.now,
      random: randomBytes,
      onAccepted: () => worker.notify(),
    })));
    intake.listen(0, "127.0.0.1");
    await once(intake, "listening");
    base = `http://127.0.0.1:${(intake.address() as AddressInfo).port}`;
    worker.start();
  });

  after(async () => {
    await worker.stop();
    close();
    intake.close();
    for (const receiver of Object.values(receivers)) await receiver.stop();
  });

  async function send(event: string, data: unknown, key = "acme-key"): Promise<string> {
    const response = await fetch(`${base}/webhook`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ event, data }),
    });
    assert.equal(response.status, 202);
    return ((await response.json()) as { id: string }).id;
  }

  /** Waits until the message's job to `endpoint` is in a final state. */
  async function settled(id: string, tenant = "acme"): Promise<JobView> {
    for (;;) {
      const [job] = await queue.message(tenant, id);
      if (job !== undefined && (job.state === "delivered" || job.state === "dead")) return job;
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  it("delivers a message that the standardwebhooks package verifies", async () => {
    const id = await send("ok.created", { user_id: "12345" });
    await receivers.ok.got(1);
    const received = receivers.ok.received.find((r) => r.headers["webhook-id"] === id)!;
    const payload = new Webhook(SECRET).verify(received.body, {
      "webhook-id": received.headers["webhook-id"] as string,
      "webhook-timestamp": received.headers["webhook-timestamp"] as string,
      "webhook-signature": received.headers["webhook-signature"] as string,
    }) as { type: string; data: unknown };
    assert.equal(payload.type, "ok.created");
    assert.deepEqual(payload.data, { user_id: "12345" });
    assert.equal((await settled(id)).state, "delivered");
  });

  it("retries a receiver that fails twice, with the same webhook-id, then delivers", async () => {
    const id = await send("flaky.ping", {});
    const job = await settled(id);
    assert.equal(job.state, "delivered");
    assert.deepEqual(job.attempts.map((a) => a.status), [500, 500, 204]);
    assert.deepEqual(
      new Set(receivers.flaky.received.map((r) => r.headers["webhook-id"])),
      new Set([id]),
    );
  });

  it("disables an endpoint that answers 410 and buries the message", async () => {
    const id = await send("gone.ping", {});
    const job = await settled(id);
    assert.equal(job.state, "dead");
    assert.equal(job.attempts[0]?.outcome, "gone");
  });

  it("honours a 429's Retry-After, then delivers", async () => {
    const id = await send("throttled.ping", {});
    const job = await settled(id);
    assert.deepEqual(job.attempts.map((a) => [a.outcome, a.status]), [["throttled", 429], [
      "success",
      200,
    ]]);
  });

  for (
    const [name, outcome] of [["redirect", "failure"], ["hangup", "failure"], [
      "slow",
      "timeout",
    ]] as const
  ) {
    it(`retries then buries a receiver that ${name === "redirect" ? "redirects" : name === "hangup" ? "closes the connection" : "never answers"}`, async () => {
      const id = await send(`${name}.ping`, {});
      const job = await settled(id);
      assert.equal(job.state, "dead");
      assert.equal(job.attempts.length, 4);
      assert.ok(job.attempts.every((a) => a.outcome === outcome), JSON.stringify(job.attempts));
      if (name === "redirect") assert.equal(job.attempts[0]?.status, 301);
    });
  }

  it("encrypts for an endpoint with a public key: a JSON envelope, signed as sent, whose JWE jose decrypts", async () => {
    const id = await send("sealed.secret", { card: "4111" });
    await settled(id);
    const received = receivers.sealed.received.find((r) => r.headers["webhook-id"] === id)!;
    assert.equal(received.headers["content-type"], "application/json");
    assert.ok(!received.body.includes("4111"));
    verifyWebhook(
      parseWebhookSecret(SECRET),
      {
        id: received.headers["webhook-id"] as string,
        timestamp: received.headers["webhook-timestamp"] as string,
        signature: received.headers["webhook-signature"] as string,
      },
      received.body,
      { now: Math.floor(Date.now() / 1000) },
    );
    const envelope = JSON.parse(received.body) as {
      type: string;
      timestamp: string;
      encrypted: string;
    };
    assert.equal(envelope.type, "sealed.secret");
    const { plaintext, protectedHeader } = await compactDecrypt(
      envelope.encrypted,
      KEYS.privateKey,
    );
    assert.deepEqual(protectedHeader, {
      alg: "RSA-OAEP-256",
      enc: "A256GCM",
      kid: protectedHeader.kid,
    });
    const plain = JSON.parse(new TextDecoder().decode(plaintext)) as {
      type: string;
      timestamp: string;
      data: unknown;
    };
    assert.deepEqual(plain, {
      type: "sealed.secret",
      timestamp: envelope.timestamp,
      data: { card: "4111" },
    });
  });

  it("standardwebhooks and svix verify every plain and encrypted delivery; jose decrypts the JWE inside", async () => {
    const sent = new Map<string, { receiver: Receiver; data: unknown }>();
    for (let i = 0; i < 6; i++) {
      const [name, receiver] =
        ([["ok", receivers.ok], ["sealed", receivers.sealed]] as const)[i % 2]!;
      const data = { i, text: 'grüße \u2028 "quoted"', nested: { list: [1, 2.5, null, true] } };
      sent.set(await send(`${name}.verify`, data), { receiver, data });
    }
    let checked = 0;
    for (const [id, { receiver, data }] of sent) {
      assert.equal((await settled(id)).state, "delivered");
      const deliveries = receiver.received.filter((r) => r.headers["webhook-id"] === id);
      assert.ok(deliveries.length >= 1);
      for (const delivery of deliveries) {
        const headers = {
          "webhook-id": delivery.headers["webhook-id"] as string,
          "webhook-timestamp": delivery.headers["webhook-timestamp"] as string,
          "webhook-signature": delivery.headers["webhook-signature"] as string,
        };
        const standard = new Webhook(SECRET).verify(delivery.body, headers) as Record<
          string,
          unknown
        >;
        const svix = new SvixWebhook(SECRET).verify(delivery.body, headers) as Record<
          string,
          unknown
        >;
        assert.deepEqual(svix, standard);
        assert.equal(standard["type"], receiver === receivers.ok ? "ok.verify" : "sealed.verify");
        let body = standard;
        if (receiver === receivers.sealed) {
          assert.equal(standard["data"], undefined, "no data outside the JWE");
          const { plaintext } = await compactDecrypt(
            standard["encrypted"] as string,
            KEYS.privateKey,
          );
          body = JSON.parse(new TextDecoder().decode(plaintext)) as Record<string, unknown>;
          assert.equal(body["timestamp"], standard["timestamp"]);
        }
        assert.deepEqual(body["data"], data);
        checked++;
      }
    }
    assert.ok(checked >= 6);
  });

  it("the README's receiver verifies and decrypts an encrypted delivery and passes a plain one through", async () => {
    const readme = readFileSync(join(import.meta.dirname, "../../README.md"), "utf8");
    const code = /A receiver verifies, then decrypts:\n\n```js\n([^]*?)```/.exec(readme)?.[1];
    assert.ok(code !== undefined, "the README shows a receiver");
    // Beside node_modules, so that the example's imports resolve as in a receiver's project.
    const dir = mkdtempSync(join(import.meta.dirname, "../../node_modules/.readme-receiver-"));
    const saved = {
      key: process.env["RECEIVER_PRIVATE_KEY_PEM"],
      secret: process.env["WEBHOOK_SECRET"],
    };
    try {
      writeFileSync(join(dir, "receiver.mjs"), code);
      process.env["RECEIVER_PRIVATE_KEY_PEM"] = KEYS.privateKey.export({
        type: "pkcs8",
        format: "pem",
      }) as string;
      process.env["WEBHOOK_SECRET"] = SECRET;
      const { receive } = (await import(pathToFileURL(join(dir, "receiver.mjs")).href)) as {
        receive: (
          body: string,
          headers: Record<string, string>,
        ) => Promise<{ type: string; data: unknown }>;
      };
      for (
        const [name, receiver] of [["sealed", receivers.sealed], ["ok", receivers.ok]] as const
      ) {
        const id = await send(`${name}.readme`, { reading: 7.25 });
        await settled(id);
        const delivery = receiver.received.find((r) => r.headers["webhook-id"] === id)!;
        const headers = Object.fromEntries(
          ["webhook-id", "webhook-timestamp", "webhook-signature"].map((
            h,
          ) => [h, delivery.headers[h] as string]),
        );
        const body = await receive(delivery.body, headers);
        assert.equal(body.type, `${name}.readme`);
        assert.deepEqual(body.data, { reading: 7.25 });
        await assert.rejects(
          receive(delivery.body.replace("readme", "readmf"), headers),
          "an altered body is refused",
        );
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
      for (
        const [name, value] of [["RECEIVER_PRIVATE_KEY_PEM", saved.key], [
          "WEBHOOK_SECRET",
          saved.secret,
        ]] as const
      ) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  });

  it("refuses to deliver to 127.0.0.2 when only 127.0.0.1/32 is allowed, and records why", async () => {
    const id = await send("private.ping", {});
    const job = await settled(id);
    assert.equal(job.state, "dead");
    assert.ok(job.attempts.every((a) => a.outcome === "blocked"));
    assert.match(job.attempts[0]?.error ?? "", /127\.0\.0\.2/);
    assert.equal(receivers.private.received.length, 0, "the receiver on 127.0.0.2 got nothing");
  });

  it("delivers every message of a burst over two tenants to the right endpoints, none lost", async () => {
    const before = receivers.ok.received.length;
    const ids: { id: string; tenant: string }[] = [];
    for (let i = 0; i < 100; i++) {
      const tenant = i % 2 === 0 ? "acme" : "globex";
      ids.push({
        id: await send(i % 2 === 0 ? "ok.burst" : "anything.burst", { i }, `${tenant}-key`),
        tenant,
      });
    }
    await receivers.ok.got(before + 100);
    for (const { id, tenant } of ids) {
      const jobs = await queue.message(tenant, id);
      assert.equal(jobs.length, 1, `${id} has one job`);
      assert.equal((await settled(id, tenant)).state, "delivered");
      assert.equal(jobs[0]?.tenantId, tenant);
    }
    const delivered = receivers.ok.received.slice(before).map((r) => r.headers["webhook-id"]);
    assert.deepEqual(new Set(delivered), new Set(ids.map((m) => m.id)));
  });
});
