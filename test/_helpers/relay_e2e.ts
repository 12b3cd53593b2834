// Shared by the end-to-end relay tests that run real relay processes on a
// real backend: a counting receiver, a tenants file, a client that posts
// thousands of messages and tries again while the relay or its backend is
// away, and the checks and report at the end.
import assert from "node:assert/strict";
import { once } from "node:events";
import { writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import type { TestContext } from "node:test";
import { setTimeout as delay } from "node:timers/promises";
import { listeningUrl, type Started, startServer } from "./server.ts";

export const MESSAGES = 10_000;
export const TENANTS = ["acme", "globex", "initech", "umbrella", "hooli", "stark", "wayne", "tyrell"];

/** A loopback receiver that counts deliveries by webhook-id. */
export class Receiver {
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

/** A tenants file: the tenants, one endpoint each, all to the receiver. */
export function tenantsFile(dir: string, url: string): string {
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

/**
 * Posts `count` messages over 16 connections, spread over the tenants and
 * over `urls` in turn. A 503 or a refused connection (the relay or Redis
 * away) is tried again after 50 ms, up to 600 times per message.
 * @param onAccepted told of each acceptance, with how many so far
 * @returns the accepted message ids
 */
export async function post(urls: () => readonly string[], count: number, onAccepted: (accepted: number) => void = () => {}): Promise<Set<string>> {
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
export async function counter(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  let sum = 0;
  for (const line of text.split("\n")) if (line.startsWith(`${name}{`) || line.startsWith(`${name} `)) sum += Number(line.split(" ").at(-1));
  return sum;
}

export async function stop(started: Started): Promise<void> {
  if (started.child.exitCode !== null || started.child.signalCode !== null) return;
  started.child.kill("SIGTERM");
  const [code] = await once(started.child, "exit");
  assert.equal(code, 0, started.errors());
}

export function report(t: TestContext, receiver: Receiver, accepted: ReadonlySet<string>): void {
  const duplicates = receiver.duplicates();
  // Beyond the accepted: messages queued whose 202 never reached the client (Redis died before answering), so it posted them again.
  const unconfirmed = [...receiver.seen.keys()].filter((id) => !accepted.has(id)).length;
  t.diagnostic(`${accepted.size} accepted, ${receiver.seen.size} distinct delivered (${unconfirmed} queued without a 202), ${duplicates} duplicates`);
  for (const id of accepted) assert.ok(receiver.seen.has(id), `${id} was delivered`);
}

/**
 * Waits until every accepted message has arrived at the receiver, at most
 * `ms`; past that, fails with what is missing and the relays' error output.
 */
export async function allDelivered(receiver: Receiver, accepted: ReadonlySet<string>, relays: readonly Started[], ms = 180_000): Promise<void> {
  const abort = new AbortController();
  const outcome = await Promise.race([
    receiver.all(accepted).then(() => "delivered" as const),
    delay(ms, "late" as const, { signal: abort.signal }),
  ]);
  abort.abort();
  if (outcome === "delivered") return;
  const missing = [...accepted].filter((id) => !receiver.seen.has(id)).length;
  const errors = relays.map((relay) => relay.errors().slice(-3000)).join("\n---\n");
  assert.fail(`${missing} of ${accepted.size} accepted messages not delivered within ${ms} ms; the relays said:\n${errors}`);
}

/**
 * Two relay processes with `env` share 10,000 messages posted to both:
 * every one is delivered, and both processes delivered some.
 * @param env the relays' environment, its tenants sending to `receiver`
 */
export async function twoRelaysShare(t: TestContext, receiver: Receiver, env: Record<string, string>): Promise<void> {
  const first = startServer(env);
  const second = startServer(env);
  try {
    const urls = [await listeningUrl(first), await listeningUrl(second)];
    const accepted = await post(() => urls, MESSAGES);
    assert.equal(accepted.size, MESSAGES);
    await allDelivered(receiver, accepted, [first, second]);
    report(t, receiver, accepted);
    const attempts = await Promise.all(urls.map((url) => counter(url, "tributary_relay_delivery_attempts_total")));
    t.diagnostic(`delivery attempts by process: ${attempts.join(", ")}`);
    for (const made of attempts) assert.ok(made > 0, `both processes delivered: ${attempts.join(", ")}`);
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
export async function killedMidDelivery(t: TestContext, receiver: Receiver, env: Record<string, string>, comeBack: string): Promise<void> {
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
    t.diagnostic(`${unanswered} requests were unanswered at the kill (held ones time out and are tried again); ${comeBack}`);
    report(t, receiver, accepted);
  } finally {
    receiver.close();
    if (second !== undefined) await stop(second);
  }
}
