// Shared by the end-to-end relay tests that run real relay processes on a
// real backend: a counting receiver, a tenants file, a client that posts
// thousands of messages and tries again while the relay or its backend is
// away, and the checks and report at the end.
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { once } from "node:events";
import { writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import type { TestContext } from "node:test";
import { setTimeout as delay } from "node:timers/promises";
import { listeningUrl, type Started, startServer } from "./server.ts";

export const MESSAGES = 10_000;

/** How long an intake request may stay unanswered before it counts as hung. */
const INTAKE_HANG_MS = 60_000;
export const TENANTS = [
  "acme",
  "globex",
  "initech",
  "umbrella",
  "hooli",
  "stark",
  "wayne",
  "tyrell",
];

/** A loopback receiver that counts deliveries by webhook-id. */
export class Receiver {
  readonly seen = new Map<string, number>();
  /** While set, requests are held unanswered (deliveries stay in flight). */
  hold = false;
  /** Told of every arrival, with its webhook-id. */
  onArrival: (id: string) => void = () => {};
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
        this.onArrival(id);
        if (count === 1 && this.#wanted?.has(id) === true && --this.#missing === 0) {
          this.#allThere();
        }
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
    return this.#missing === 0
      ? Promise.resolve()
      : new Promise((resolve) => (this.#allThere = resolve));
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

/** A tenants file: the tenants, one endpoint each, all to the receiver. */
export function tenantsFile(dir: string, url: string): string {
  const file = join(dir, "tenants.json");
  writeFileSync(
    file,
    JSON.stringify({
      tenants: TENANTS.map((id) => ({
        id,
        api_keys: [`key-${id}`],
        endpoints: [{
          id: "hook",
          url,
          events: ["*"],
          secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        }],
      })),
    }),
  );
  return file;
}

/**
 * Posts `count` messages over 16 connections, spread over the tenants and
 * over `urls` in turn. A 503 or a refused connection (the relay or Redis
 * away) is tried again after 50 ms, up to 600 times per message.
 * @param onAccepted told of each acceptance, with how many so far
 * @returns the accepted message ids
 */
export async function post(
  urls: () => readonly string[],
  count: number,
  onAccepted: (accepted: number) => void = () => {},
): Promise<Set<string>> {
  const accepted = new Set<string>();
  let next = 0;
  const clients = Array.from({ length: 16 }, async () => {
    for (let n = next++; n < count; n = next++) {
      const tenant = TENANTS[n % TENANTS.length]!;
      const body = JSON.stringify({ event: "order.created", data: { n } });
      for (let attempt = 0;; attempt++) {
        assert.ok(attempt < 600, `message ${n} was not accepted after ${attempt} tries`);
        const targets = urls();
        const url = targets[(n + attempt) % targets.length]!;
        try {
          // The relay answers within its queue's 5 s append bound: a request still open after
          // 60 s is a hang, reported as such rather than left to fetch's own 300 s.
          const response = await fetch(`${url}/webhook`, {
            method: "POST",
            headers: { authorization: `Bearer key-${tenant}`, "content-type": "application/json" },
            body,
            signal: AbortSignal.timeout(INTAKE_HANG_MS),
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
          if (error instanceof DOMException && error.name === "TimeoutError") {
            assert.fail(
              `message ${n} (try ${attempt}) got no answer from ${url} in ${INTAKE_HANG_MS} ms`,
            );
          }
        }
        await delay(50);
      }
    }
  });
  await Promise.all(clients);
  return accepted;
}

/** Sum of a counter over its series in a /metrics text. */
export async function counter(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  let sum = 0;
  for (const line of text.split("\n")) {
    if (line.startsWith(`${name}{`) || line.startsWith(`${name} `)) {
      sum += Number(line.split(" ").at(-1));
    }
  }
  return sum;
}

/**
 * What `work` gives, or undefined when it has not settled within `ms` (its
 * timer then cleared).
 */
export async function within<T>(ms: number, work: Promise<T>): Promise<T | undefined> {
  const abort = new AbortController();
  try {
    return await Promise.race([
      work,
      delay(ms, undefined, { signal: abort.signal }),
    ]);
  } finally {
    abort.abort();
  }
}

export async function stop(started: Started): Promise<void> {
  if (started.child.exitCode !== null || started.child.signalCode !== null) return;
  started.child.kill("SIGTERM");
  // A relay that drains for ever fails by name, rather than running out the file's time.
  const exited = await within(
    EXIT_MS,
    once(started.child, "exit").then(([code]) => ({ code: code as number | null })),
  );
  if (exited === undefined) {
    started.child.kill("SIGKILL");
    assert.fail(`the relay had not exited ${EXIT_MS} ms after SIGTERM:\n${started.errors()}`);
  }
  assert.equal(exited.code, 0, started.errors());
}

/** How long a relay may take to drain and exit after SIGTERM. */
const EXIT_MS = 30_000;

export function report(t: TestContext, receiver: Receiver, accepted: ReadonlySet<string>): void {
  const duplicates = receiver.duplicates();
  // Beyond the accepted: messages queued whose 202 never reached the client (Redis died before answering), so it posted them again.
  const unconfirmed = [...receiver.seen.keys()].filter((id) => !accepted.has(id)).length;
  t.diagnostic(
    `${accepted.size} accepted, ${receiver.seen.size} distinct delivered (${unconfirmed} queued without a 202), ${duplicates} duplicates`,
  );
  for (const id of accepted) assert.ok(receiver.seen.has(id), `${id} was delivered`);
}

/**
 * Waits until every accepted message has arrived at the receiver, at most
 * `ms`; past that, fails with what is missing and the relays' error output.
 */
export async function allDelivered(
  receiver: Receiver,
  accepted: ReadonlySet<string>,
  relays: readonly Started[],
  ms = 180_000,
): Promise<void> {
  if ((await within(ms, receiver.all(accepted).then(() => "delivered"))) !== undefined) return;
  const missing = [...accepted].filter((id) => !receiver.seen.has(id)).length;
  const errors = relays.map((relay) => relay.errors().slice(-3000)).join("\n---\n");
  assert.fail(
    `${missing} of ${accepted.size} accepted messages not delivered within ${ms} ms; the relays said:\n${errors}`,
  );
}

/**
 * Two relay processes with `env` share 10,000 messages posted to both:
 * every one is delivered, and both processes delivered some.
 * @param env the relays' environment, its tenants sending to `receiver`
 */
export async function twoRelaysShare(
  t: TestContext,
  receiver: Receiver,
  env: Record<string, string>,
): Promise<void> {
  const first = startServer(env);
  const second = startServer(env);
  try {
    const urls = [await listeningUrl(first), await listeningUrl(second)];
    const accepted = await post(() => urls, MESSAGES);
    assert.equal(accepted.size, MESSAGES);
    await allDelivered(receiver, accepted, [first, second]);
    report(t, receiver, accepted);
    const attempts = await Promise.all(
      urls.map((url) => counter(url, "tributary_relay_delivery_attempts_total")),
    );
    t.diagnostic(`delivery attempts by process: ${attempts.join(", ")}`);
    for (const made of attempts) {
      assert.ok(made > 0, `both processes delivered: ${attempts.join(", ")}`);
    }
    assert.ok(attempts[0]! + attempts[1]! >= MESSAGES);
  } finally {
    receiver.close();
    await Promise.all([stop(first), stop(second)]);
  }
}

/**
 * A relay with `env` takes 10,000 messages while the receiver holds its
 * answers, is killed with SIGKILL with deliveries in flight, and is started
 * again: every message is delivered.
 * @param env the relays' environment, its tenants sending to `receiver`
 * @param comeBack how the jobs the dead process held come back, for the report
 */
export async function killedMidDelivery(
  t: TestContext,
  receiver: Receiver,
  env: Record<string, string>,
  comeBack: string,
): Promise<void> {
  const first = startServer(env);
  let second: Started | undefined;
  try {
    const url = await listeningUrl(first);
    // The receiver holds its answers, so deliveries are in flight when the relay dies.
    receiver.hold = true;
    const accepted = await post(() => [url], MESSAGES);
    assert.equal(accepted.size, MESSAGES);
    while (receiver.held.length < 16) await once(receiver.server, "request");
    first.child.kill("SIGKILL");
    await once(first.child, "exit");
    const unanswered = receiver.held.length;
    receiver.hold = false;
    for (const res of receiver.held.splice(0)) res.destroy();
    assert.ok(receiver.seen.size < MESSAGES, "most messages were still queued when the relay died");
    second = startServer(env);
    await listeningUrl(second);
    await allDelivered(receiver, accepted, [first, second]);
    t.diagnostic(
      `${unanswered} requests were unanswered at the kill (held ones time out and are tried again); ${comeBack}`,
    );
    report(t, receiver, accepted);
  } finally {
    receiver.close();
    if (second !== undefined) await stop(second);
  }
}

/** A delivery as a {@linkcode SigningReceiver} saw it. */
export interface SeenDelivery {
  readonly path: string;
  readonly id: string;
  readonly timestamp: string;
  readonly signatures: readonly string[];
  readonly body: string;
}

/** A loopback receiver that keeps every delivery with its path and signatures, failing while told to. */
export class SigningReceiver {
  readonly deliveries: SeenDelivery[] = [];
  /** Paths answered 500 (their jobs are retried). */
  readonly failing = new Set<string>();
  readonly server: Server;
  #waiting: {
    readonly match: (delivery: SeenDelivery) => boolean;
    readonly resolve: (delivery: SeenDelivery) => void;
  }[] = [];

  constructor() {
    this.server = createServer((req: IncomingMessage, res: ServerResponse) => {
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", () => {
        const delivery: SeenDelivery = {
          path: req.url ?? "",
          id: String(req.headers["webhook-id"]),
          timestamp: String(req.headers["webhook-timestamp"]),
          signatures: String(req.headers["webhook-signature"]).split(" "),
          body: Buffer.concat(chunks).toString(),
        };
        if (this.failing.has(delivery.path)) {
          res.writeHead(500).end();
          return;
        }
        this.deliveries.push(delivery);
        res.writeHead(204).end();
        this.#waiting = this.#waiting.filter((waiter) =>
          !(waiter.match(delivery) && (waiter.resolve(delivery), true))
        );
      });
    });
  }

  async listen(): Promise<string> {
    this.server.listen(0, "127.0.0.1");
    await once(this.server, "listening");
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** The first delivery (so far or to come) of message `id` to `path`. */
  delivery(id: string, path: string): Promise<SeenDelivery> {
    const match = (delivery: SeenDelivery): boolean => delivery.id === id && delivery.path === path;
    const found = this.deliveries.find(match);
    if (found !== undefined) return Promise.resolve(found);
    return new Promise((resolve) => this.#waiting.push({ match, resolve }));
  }

  close(): void {
    this.server.close();
    this.server.closeAllConnections();
  }
}

/** The `whsec_` secrets whose signature is among a delivery's. */
export function signedWith(delivery: SeenDelivery, secrets: readonly string[]): string[] {
  return secrets.filter((secret) => {
    const key = Buffer.from(secret.slice("whsec_".length), "base64");
    const mac = createHmac("sha256", key).update(
      `${delivery.id}.${delivery.timestamp}.${delivery.body}`,
    ).digest("base64");
    return delivery.signatures.includes(`v1,${mac}`);
  });
}

/**
 * Asks `check` again, back to back, until it holds: how long a change made on
 * one process took to be seen on another. Gives up after `ms`.
 * @returns the milliseconds it took
 */
export async function until(check: () => Promise<boolean>, ms = 10_000): Promise<number> {
  const started = performance.now();
  for (let tries = 0;; tries++) {
    if (await check()) return performance.now() - started;
    assert.ok(performance.now() - started < ms && tries < 100_000, `not seen within ${ms} ms`);
  }
}

/**
 * Two relay processes with `env` on one backend: an endpoint created,
 * patched and secret-rotated through the API of the first is used by the
 * intake and the delivery of the second within a second; everything
 * survives a restart of both, a job queued before it for an API-made
 * endpoint is delivered after it, and both secrets sign during the overlap
 * (`overlapSeconds`, longer than the restart takes), only the new one after it.
 * @param env the relays' environment (STATE_DIR empty: all in the backend); its tenants file is the demo one of {@linkcode tenantsFile}, to `receiverUrl`/hook
 * @param receiver where the endpoints send
 * @param receiverUrl its origin
 */
export async function endpointsShared(
  t: TestContext,
  receiver: SigningReceiver,
  receiverUrl: string,
  env: Record<string, string>,
  overlapSeconds = 15,
): Promise<void> {
  const relays = { SECRET_ROTATION_OVERLAP_SECONDS: String(overlapSeconds), ...env };
  const started: Started[] = [];
  const auth = { authorization: "Bearer key-acme", "content-type": "application/json" };
  const api = async (
    url: string,
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; body: Record<string, unknown> }> => {
    const response = await fetch(`${url}/webhook${path}`, {
      method,
      headers: auth,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return {
      status: response.status,
      body: text === "" ? {} : JSON.parse(text) as Record<string, unknown>,
    };
  };
  const post = async (url: string, event: string): Promise<{ id: string; endpoints: string[] }> => {
    const answer = await api(url, "POST", "", { event, data: { at: event } });
    assert.equal(answer.status, 202, JSON.stringify(answer.body));
    return answer.body as { id: string; endpoints: string[] };
  };
  const latencies: number[] = [];
  try {
    const [a, b] = [startServer(relays), startServer(relays)];
    started.push(a, b);
    const [urlA, urlB] = [await listeningUrl(a), await listeningUrl(b)];
    assert.match(b.output(), /Relay endpoints: in the (Redis|Kafka) backend/);

    // Created on A: B routes to it and delivers within a second.
    assert.equal(
      (await api(urlA, "POST", "/endpoints", {
        id: "api",
        url: `${receiverUrl}/api`,
        events: ["invoice.*"],
      })).status,
      201,
    );
    latencies.push(
      await until(async () => (await api(urlB, "GET", "/endpoints/api")).status === 200),
    );
    const first = await post(urlB, "invoice.paid");
    assert.deepEqual(
      first.endpoints,
      ["hook", "api"],
      "B's intake routes to the endpoint made on A",
    );
    await receiver.delivery(first.id, "/api");

    // Patched on A: B sends to the new URL.
    assert.equal(
      (await api(urlA, "PATCH", "/endpoints/api", { url: `${receiverUrl}/api-v2` })).status,
      200,
    );
    latencies.push(
      await until(async () =>
        (await api(urlB, "GET", "/endpoints/api")).body["url"] === `${receiverUrl}/api-v2`
      ),
    );
    await receiver.delivery((await post(urlB, "invoice.paid")).id, "/api-v2");

    // The file's endpoint's secret rotated on A: B signs with both.
    const original = (await api(urlA, "GET", "/endpoints/hook/secret")).body["secrets"] as {
      secret: string;
    }[];
    const rotated = (await api(urlA, "POST", "/endpoints/hook/rotate-secret", {}))
      .body["secrets"] as { secret: string }[];
    assert.equal(rotated.length, 2);
    const fresh = rotated[0]!.secret;
    latencies.push(
      await until(async () =>
        ((await api(urlB, "GET", "/endpoints/hook/secret")).body["secrets"] as unknown[]).length ===
          2
      ),
    );
    const signed = await receiver.delivery((await post(urlB, "order.created")).id, "/hook");
    assert.deepEqual(
      signedWith(signed, [fresh, original[0]!.secret]),
      [fresh, original[0]!.secret],
      "both secrets sign during the overlap",
    );
    t.diagnostic(
      `a change on one process seen on the other after ${
        latencies.map((ms) => ms.toFixed(0)).join(", ")
      } ms`,
    );
    for (const ms of latencies) assert.ok(ms < 1000, `seen within a second: ${ms.toFixed(0)} ms`);

    // A job for the API's endpoint waits (its receiver fails) across a restart of both processes.
    receiver.failing.add("/api-v2");
    const waiting = await post(urlA, "invoice.created");
    await Promise.all([stop(a), stop(b)]);
    receiver.failing.delete("/api-v2");
    const [c, d] = [startServer(relays), startServer(relays)];
    started.push(c, d);
    const [urlC, urlD] = [await listeningUrl(c), await listeningUrl(d)];
    assert.match(
      c.output(),
      /Relay endpoints: in the (Redis|Kafka) backend[^\n]*acme\/hook changed through the API/,
    );
    const after = (await api(urlD, "GET", "/endpoints/hook/secret")).body["secrets"] as {
      secret: string;
      expires_at: string | null;
    }[];
    assert.equal(
      after[0]?.secret,
      fresh,
      "the rotation survived: the file did not bring the old secret back",
    );
    // The old secret is there with the expiry the rotation gave it, unless a slow restart outlasted the overlap.
    const old = rotated[1] as { secret: string; expires_at: string };
    if (after.length === 2) assert.deepEqual(after[1], old);
    else {assert.ok(
        after.length === 1 && Date.parse(old.expires_at) <= Date.now() + 1000,
        `the old secret is gone only once expired: ${JSON.stringify(after)}`,
      );}
    assert.equal((await api(urlD, "GET", "/endpoints/api")).body["url"], `${receiverUrl}/api-v2`);
    const both = await receiver.delivery((await post(urlC, "order.created")).id, "/hook");
    assert.ok(signedWith(both, [fresh]).length === 1, "the new secret signs after the restart");
    await receiver.delivery(waiting.id, "/api-v2"); // queued before the restart, delivered after it to the API's endpoint

    // Past the overlap, only the new secret signs.
    await until(
      async () =>
        ((await api(urlD, "GET", "/endpoints/hook/secret")).body["secrets"] as unknown[]).length ===
          1,
      overlapSeconds * 1000 + 2000,
    );
    const late = await receiver.delivery((await post(urlD, "order.created")).id, "/hook");
    assert.deepEqual(
      signedWith(late, [fresh, original[0]!.secret]),
      [fresh],
      "only the new secret signs after the overlap",
    );
  } finally {
    receiver.close();
    await Promise.all(started.map((relay) => stop(relay)));
  }
}

/**
 * A relay with `env` holds 16 deliveries in flight (the receiver does not
 * answer) when it is killed with SIGKILL beside a second relay that has
 * nothing else to do: every job the dead one held is delivered by the
 * second within `boundMs` of the kill, measured from the receiver's log.
 * @param env the relays' environment, its tenants sending to `receiver`
 */
export async function heldJobsRecovered(
  t: TestContext,
  receiver: Receiver,
  env: Record<string, string>,
  boundMs: number,
): Promise<void> {
  const first = startServer(env);
  let second: Started | undefined;
  try {
    const url = await listeningUrl(first);
    receiver.hold = true;
    const accepted = await post(() => [url], 16);
    while (receiver.held.length < 16) await once(receiver.server, "request");
    second = startServer(env);
    await listeningUrl(second);
    const back = new Map<string, number>();
    let allBack: () => void = () => {};
    const done = new Promise<void>((resolve) => (allBack = resolve));
    let killedAt = 0;
    receiver.onArrival = (id) => {
      if (killedAt === 0 || back.has(id) || !accepted.has(id)) return;
      back.set(id, performance.now() - killedAt);
      if (back.size === accepted.size) allBack();
    };
    receiver.hold = false;
    first.child.kill("SIGKILL");
    killedAt = performance.now();
    await once(first.child, "exit");
    for (const res of receiver.held.splice(0)) res.destroy();
    await Promise.race([
      done,
      once(second.child, "exit").then(() =>
        assert.fail(`the second relay exited: ${second!.errors()}`)
      ),
    ]);
    const worst = Math.max(...back.values());
    t.diagnostic(
      `the ${accepted.size} jobs the killed relay held were delivered by the other ${
        Math.min(...back.values()).toFixed(0)
      } to ${worst.toFixed(0)} ms after the kill`,
    );
    assert.ok(
      worst <= boundMs,
      `the last came ${worst.toFixed(0)} ms after the kill, more than ${boundMs} ms`,
    );
  } finally {
    receiver.close();
    if (second !== undefined) await stop(second);
  }
}
