import assert from "node:assert/strict";
import { once } from "node:events";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { promtoolCheck, promtoolFound, promtoolSkip } from "../_helpers/promtool.ts";
import { freePort } from "../_helpers/redis.ts";
import { listeningUrl, startServer } from "../_helpers/server.ts";

const ROOT = join(import.meta.dirname, "..", "..");

/** A plain credential the log says where to find (`<label>: see <file>`), read from that file as a user would. */
function credentialFrom(output: string, label: string, read: (file: unknown) => string): string {
  const at = output.indexOf(`${label}`);
  assert.notEqual(at, -1, `the log names ${label}`);
  const file = /: see (\S+)/.exec(output.slice(at).split("\n")[0]!)?.[1];
  assert.ok(file !== undefined, `the log says where ${label} is`);
  return read(JSON.parse(readFileSync(join(ROOT, file), "utf8")));
}

/** The demo key, from the file the log names. */
function demoKey(output: string): string {
  return credentialFrom(
    output,
    'API key "demo"',
    (file) =>
      (file as { api_keys: { name: string; key: string }[] }).api_keys.find((entry) =>
        entry.name === "demo"
      )!.key,
  );
}

describe("server.ts", () => {
  it("serves the demo data with the demo key of the file its log names and stops cleanly on SIGTERM", async () => {
    const started = startServer({});
    const url = await listeningUrl(started);
    assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/);
    const key = demoKey(started.output());
    const response = await fetch(`${url}/v1/odata/v4/Locations?$top=2&$select=Id,Name`, {
      headers: { "x-api-key": key },
    });
    assert.equal(response.status, 200);
    const body = await response.json() as { value: unknown[] };
    assert.equal(body.value.length, 2);
    assert.equal((await fetch(`${url}/health`)).status, 200);
    assert.equal((await fetch(`${url}/nowhere`)).status, 404);
    started.child.kill("SIGTERM");
    const [code] = await once(started.child, "exit");
    assert.equal(code, 0);
  });

  it("serves /metrics for all three services in a text promtool check metrics accepts", {
    skip: promtoolSkip,
  }, async () => {
    assert.ok(promtoolFound, "REQUIRE_SERVICES=1 but promtool is not on PATH");
    const started = startServer({});
    const url = await listeningUrl(started);
    const key = demoKey(started.output());
    assert.equal(
      (await fetch(`${url}/v1/odata/v4/Locations?$top=1`, { headers: { "x-api-key": key } }))
        .status,
      200,
    );
    assert.equal((await fetch(`${url}/oauth2/token`, { method: "POST" })).status, 400);
    // The demo endpoint is on 127.0.0.1, which the default policy refuses: an attempt is recorded, no connection made.
    const intake = await fetch(`${url}/webhook`, {
      method: "POST",
      headers: { authorization: "Bearer demo-acme-key", "content-type": "application/json" },
      body: JSON.stringify({ event: "order.created", data: { id: 1 } }),
    });
    assert.equal(intake.status, 202);
    const response = await fetch(`${url}/metrics`);
    assert.equal(response.status, 200);
    const text = await response.text();
    for (const service of ["water", "sync", "relay"]) {
      assert.match(text, new RegExp(`tributary_http_requests_total\\{service="${service}"`));
    }
    assert.match(text, /tributary_relay_messages_accepted_total 1/);
    const { code, output } = await promtoolCheck(text);
    assert.equal(code, 0, output);
    started.child.kill("SIGTERM");
    assert.equal((await once(started.child, "exit"))[0], 0);
  });

  it("runs the sync service alone, without API keys, with the demo client of the file its log names", async () => {
    const started = startServer({ SERVICES: "sync", API_KEYS_FILE: "" });
    const url = await listeningUrl(started);
    const secret = credentialFrom(
      started.output(),
      'OAuth client "demo-backend" secret',
      (file) =>
        (file as { client_id: string; client_secret?: string }[]).find((client) =>
          client.client_id === "demo-backend"
        )!.client_secret!,
    );
    const response = await fetch(`${url}/oauth2/token`, {
      method: "POST",
      headers: {
        authorization: `Basic ${btoa(`demo-backend:${secret}`)}`,
        "content-type": "application/x-www-form-urlencoded",
      },
      body: "grant_type=client_credentials",
    });
    assert.equal(response.status, 200);
    assert.equal((await response.json() as { scope: string }).scope, "SignUp");
    assert.equal((await fetch(`${url}/v1/odata/v4/Locations`)).status, 404, "no water service");
    assert.doesNotMatch(started.output(), /API key/);
    started.child.kill("SIGTERM");
    const [code] = await once(started.child, "exit");
    assert.equal(code, 0);
  });

  it(
    "loses no accepted webhook to SIGKILL: 10,000 posted at full speed on the journaled memory queue, killed mid-load, every 202 delivered after the restart",
    { timeout: 180_000 },
    async (t) => {
      const dir = mkdtempSync(join(tmpdir(), "tributary-kill-"));
      const deliveries = new Map<string, number>();
      let wanted: Set<string> | undefined;
      let allThere: () => void = () => {};
      const done = new Promise<void>((resolve) => (allThere = resolve));
      const check = (): void => {
        if (wanted !== undefined && [...wanted].every((id) => deliveries.has(id))) allThere();
      };
      const receiver = createServer((req, res) => {
        req.resume();
        req.on("end", () => {
          const id = String(req.headers["webhook-id"]);
          deliveries.set(id, (deliveries.get(id) ?? 0) + 1);
          res.writeHead(204).end();
          check();
        });
      });
      receiver.listen(0, "127.0.0.1");
      await once(receiver, "listening");
      const tenants = join(dir, "tenants.json");
      writeFileSync(
        tenants,
        JSON.stringify({
          tenants: [{
            id: "acme",
            api_keys: ["k"],
            endpoints: [{
              id: "e",
              url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/`,
              events: ["*"],
              secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            }],
          }],
        }),
      );
      const env = {
        SERVICES: "relay",
        TENANTS_FILE: tenants,
        ALLOW_PRIVATE_TARGETS: "127.0.0.1/32",
        RETRY_SCHEDULE: "20ms",
        MAX_ATTEMPTS: "1000",
        STATE_DIR: join(dir, "state"),
      };
      try {
        const first = startServer(env);
        const url = await listeningUrl(first);
        assert.match(first.output(), /Relay queue: in memory, journaled in /);
        const accepted = new Set<string>();
        let posted = 0;
        let stopped = false;
        // Sixteen clients share 10,000 posts; SIGKILL comes once half of them are accepted.
        const clients = Array.from({ length: 16 }, async () => {
          while (posted < 10_000 && !stopped) {
            posted++;
            let response: Response;
            try {
              response = await fetch(`${url}/webhook`, {
                method: "POST",
                headers: { authorization: "Bearer k", "content-type": "application/json" },
                body: JSON.stringify({ event: "order.created", data: { n: posted } }),
              });
              if (response.status !== 202) throw new Error(`answered ${response.status}`);
              accepted.add(((await response.json()) as { id: string }).id);
            } catch {
              stopped = true;
              return;
            }
            if (accepted.size === 5_000) first.child.kill("SIGKILL");
          }
        });
        await Promise.all(clients);
        if (first.child.exitCode === null && first.child.signalCode === null) {
          await once(
            first.child,
            "exit",
          );
        }
        assert.equal(first.child.signalCode, "SIGKILL", "killed mid-load, not finished");
        assert.ok(accepted.size >= 5_000 && accepted.size < 10_000, `${accepted.size} accepted`);
        const before = [...accepted].filter((id) => deliveries.has(id)).length;

        wanted = accepted;
        const second = startServer(env);
        await listeningUrl(second);
        assert.match(
          second.output(),
          /Relay queue: \d+ jobs not yet delivered were restored from the journal/,
        );
        check();
        await done;
        const duplicates = [...deliveries.values()].reduce((sum, n) => sum + n - 1, 0);
        t.diagnostic(
          `${accepted.size} answered 202 before the kill, ${before} of them delivered before it; all delivered after the restart; ${duplicates} delivered twice or more`,
        );
        for (const id of accepted) assert.ok(deliveries.has(id), `${id} delivered`);
        second.child.kill("SIGTERM");
        assert.equal((await once(second.child, "exit"))[0], 0, second.errors());
      } finally {
        receiver.close();
        receiver.closeAllConnections();
      }
    },
  );

  it("stops with a message naming QUEUE_SNAPSHOT_FILE, which is no longer read", async () => {
    const started = startServer({ SERVICES: "relay", QUEUE_SNAPSHOT_FILE: "var/relay-queue.json" });
    const [code] = await once(started.child, "exit");
    assert.equal(code, 1);
    assert.match(started.errors(), /QUEUE_SNAPSHOT_FILE is no longer read/);
    assert.doesNotMatch(started.errors(), /\n\s+at /);
  });

  it("stops with a message naming REDIS_URL and the address when Redis cannot be reached", async () => {
    const port = await freePort();
    const started = startServer({
      SERVICES: "relay",
      STORAGE_TYPE: "redis",
      REDIS_URL: `redis://relay:pw@127.0.0.1:${port}`,
    });
    const [code] = await once(started.child, "exit");
    assert.equal(code, 1);
    assert.ok(started.errors().includes("REDIS_URL"), started.errors());
    assert.ok(started.errors().includes(`redis://relay:***@127.0.0.1:${port}`), started.errors());
    assert.match(started.errors(), /ECONNREFUSED/);
    assert.doesNotMatch(started.errors(), /\n\s+at |pw@/);
  });

  it("stops with a message naming DATABASE_URL and the address, password hidden, when PostgreSQL cannot be reached", async () => {
    const port = await freePort();
    const started = startServer({
      SERVICES: "sync",
      DATABASE_URL: `postgres://app:s3cret@127.0.0.1:${port}/tributary`,
    });
    const [code] = await once(started.child, "exit");
    assert.equal(code, 1);
    assert.ok(started.errors().includes("DATABASE_URL"), started.errors());
    assert.ok(
      started.errors().includes(`postgres://app:***@127.0.0.1:${port}/tributary`),
      started.errors(),
    );
    assert.match(started.errors(), /ECONNREFUSED/);
    assert.doesNotMatch(started.errors(), /\n\s+at |s3cret/);
  });

  it("stops with a message naming KAFKA_BROKER and the address when no broker answers", async () => {
    const port = await freePort();
    const started = startServer({
      SERVICES: "relay",
      STORAGE_TYPE: "kafka",
      KAFKA_BROKER: `127.0.0.1:${port}`,
    });
    const [code] = await once(started.child, "exit");
    assert.equal(code, 1);
    assert.ok(started.errors().includes(`KAFKA_BROKER`), started.errors());
    assert.ok(started.errors().includes(`127.0.0.1:${port}`), started.errors());
    assert.doesNotMatch(started.errors(), /\n\s+at /);
  });

  const bad = [
    { env: { PORT: "eighty" }, variable: "PORT" },
    { env: { WEBHOOK_PORT: "99999" }, variable: "WEBHOOK_PORT" },
    { env: { RATE_LIMIT_PER_SECOND: "fast" }, variable: "RATE_LIMIT_PER_SECOND" },
    { env: { RATE_LIMIT_BURST: "0" }, variable: "RATE_LIMIT_BURST" },
    { env: { CORS_ORIGINS: "app.example.org" }, variable: "CORS_ORIGINS" },
    { env: { SERVICES: "water,teleport" }, variable: "SERVICES" },
    { env: { API_KEYS_FILE: "/nonexistent/keys.json" }, variable: "API_KEYS_FILE" },
    { env: { DATA_DIR: "/nonexistent/datasets" }, variable: "/nonexistent/datasets" },
    { env: { CLIENTS_FILE: "/nonexistent/clients.json" }, variable: "CLIENTS_FILE" },
    { env: { PASSWORD_HASH_COST: "1000" }, variable: "PASSWORD_HASH_COST" },
  ] as const;
  for (const c of bad) {
    it(`stops with a message naming ${c.variable} and no stack trace`, async () => {
      const started = startServer(c.env);
      const [code] = await once(started.child, "exit");
      assert.equal(code, 1);
      assert.match(started.errors(), new RegExp(c.variable.replaceAll("/", "\\/")));
      assert.doesNotMatch(started.errors(), /\n\s+at /);
    });
  }
});
